package scaler

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// ReasonNotReadyAfterLaunch is the NotStarting reason of a bound pod that
// is not Ready longer than notStartingGrace(launchSeconds) after it was
// scheduled, with no container waiting reason that says why.
const ReasonNotReadyAfterLaunch = "NotReadyAfterLaunch"

// stuckWaitingReasons are the container waiting reasons (kubelet) of a
// pod that will not start without a change to the pod, its image or its
// node: the image is missing or cannot be pulled, its configuration or
// container cannot be created, or it exits again and again.
var stuckWaitingReasons = map[string]bool{
	"ErrImageNeverPull":          true,
	"ErrImagePull":               true,
	"ImagePullBackOff":           true,
	"InvalidImageName":           true,
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"RunContainerError":          true,
	"CrashLoopBackOff":           true,
}

// notStarting is what a Deployment's bound pods that cannot start say.
type notStarting struct {
	// pods counts the Deployment's pods bound to a node, not terminating,
	// not terminal and not Ready, that have a container waiting with a
	// stuckWaitingReasons reason, or have been scheduled longer than
	// notStartingGrace ago.
	pods int
	// reason is the first such pod's waiting reason, or
	// ReasonNotReadyAfterLaunch.
	reason string
	// detail names the first such pod: "pod NAME on NODE: REASON: MESSAGE".
	detail string
	// column and replicas are the GPU type's column name and its
	// Deployment's desired replicas, for the condition's message.
	column   string
	replicas int32
}

// notStartingGrace is how long a bound pod may take to become Ready
// before it counts as not starting: 2 x launchSeconds (O_i, s) + 30 s.
func notStartingGrace(launchSeconds float64) time.Duration {
	return 2*seconds(launchSeconds) + 30*time.Second
}

// notStartingOf classifies d's pods (from the cache) at now for a GPU
// type whose instances take launchSeconds (O_i, s) to start (see
// notStarting).
func (r *Reconciler) notStartingOf(ctx context.Context, d *appsv1.Deployment, now time.Time, launchSeconds float64) (notStarting, error) {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return notStarting{}, fmt.Errorf("selector of deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	var pods v1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(d.Namespace), client.MatchingLabelsSelector{Selector: sel}, client.UnsafeDisableDeepCopy); err != nil {
		return notStarting{}, fmt.Errorf("pods of deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	var ns notStarting
	grace := notStartingGrace(launchSeconds)
	for i := range pods.Items {
		reason, msg, ok := podNotStarting(&pods.Items[i], now, grace)
		if !ok {
			continue
		}
		ns.pods++
		if ns.detail == "" {
			p := &pods.Items[i]
			ns.reason = reason
			ns.detail = fmt.Sprintf("pod %s on %s: %s", p.Name, p.Spec.NodeName, reason)
			if msg != "" {
				ns.detail += ": " + msg
			}
		}
	}
	return ns, nil
}

// podNotStarting reports whether p is bound to a node but cannot start at
// now, with the reason and message: a container or init container waiting
// with a stuckWaitingReasons reason (the kubelet's reason and message),
// or not Ready longer than grace since it last started (ReasonNotReadyAfterLaunch).
// It last started at the latest of its PodScheduled condition turning
// True, a container's current run starting and a container's last run
// ending: a replica that served and restarts (a readiness blip, a crash,
// a node's runtime restarting) gets a new grace, not deletion. A
// container whose last run lasted longer than grace did start, so its
// waiting reason (CrashLoopBackOff after hours of serving, an image pull
// failing on restart while the registry is down) counts only through
// that grace too. An unbound, terminating, terminal or Ready pod is not
// starting; nor is a bound pod without a PodScheduled time and no such
// waiting reason.
func podNotStarting(p *v1.Pod, now time.Time, grace time.Duration) (reason, msg string, ok bool) {
	if p.Spec.NodeName == "" || p.DeletionTimestamp != nil || gpuinventory.Terminal(p) {
		return "", "", false
	}
	var started time.Time
	since := "it was scheduled"
	for _, c := range p.Status.Conditions {
		switch {
		case c.Type == v1.PodReady && c.Status == v1.ConditionTrue:
			return "", "", false
		case c.Type == v1.PodScheduled && c.Status == v1.ConditionTrue:
			started = c.LastTransitionTime.Time
		}
	}
	served := false
	for _, statuses := range [][]v1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, s := range statuses {
			if r := s.State.Running; r != nil && r.StartedAt.After(started) {
				started, since = r.StartedAt.Time, "container "+s.Name+" started"
			}
			if t := s.LastTerminationState.Terminated; t != nil {
				if t.FinishedAt.After(started) {
					started, since = t.FinishedAt.Time, "container "+s.Name+" last exited"
				}
				if !t.StartedAt.IsZero() && t.FinishedAt.Sub(t.StartedAt.Time) > grace {
					served = true
				}
			}
		}
	}
	if !served {
		for _, statuses := range [][]v1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
			for _, s := range statuses {
				if w := s.State.Waiting; w != nil && stuckWaitingReasons[w.Reason] {
					return w.Reason, w.Message, true
				}
			}
		}
	}
	if started.IsZero() {
		return "", "", false
	}
	if d := now.Sub(started); d > grace {
		return ReasonNotReadyAfterLaunch, fmt.Sprintf("not Ready %ds after %s on %s", int(d.Seconds()), since, p.Spec.NodeName), true
	}
	return "", "", false
}
