package kubectlhetsev

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/interference"
	"github.com/hetsev/hetsev/pkg/scaler"
)

// PodExplanation is `explain pod`'s answer: where the pod is and why, or
// why it is Pending.
type PodExplanation struct {
	Namespace     string `json:"namespace"`
	Name          string `json:"name"`
	SchedulerName string `json:"schedulerName"`
	Phase         string `json:"phase"`
	Node          string `json:"node,omitempty"`
	// Annotations are the pod's hetsev.io annotations as written.
	Annotations map[string]string `json:"annotations,omitempty"`
	// AnnotationErrors are its malformed hetsev annotations, as
	// pkg/gpuinventory reads them.
	AnnotationErrors []string `json:"annotationErrors,omitempty"`
	// PredictedInflation and NeighboursAtPlacement are what
	// hetsev-scheduler recorded at placement
	// (hetsev.io/predicted-inflation, hetsev.io/gpu-neighbours).
	PredictedInflation    string `json:"predictedInflation,omitempty"`
	NeighboursAtPlacement string `json:"neighboursAtPlacement,omitempty"`
	// GPU is the GPU the pod holds now, with its current tenants.
	GPU *GPUStatus `json:"gpu,omitempty"`
	// Scheduled is the PodScheduled condition.
	Scheduled *v1.PodCondition `json:"scheduled,omitempty"`
	// Reasons are the scheduler's reasons of its latest FailedScheduling
	// (or of the PodScheduled condition), one per group of nodes.
	Reasons []string       `json:"reasons,omitempty"`
	Events  []EventSummary `json:"events,omitempty"`
	Notes   []string       `json:"notes,omitempty"`
}

// ExplainPod reads the pod namespace/name, its GPU and its Events, the
// GPU's inflation now predicted with the fitted co-location model.
func ExplainPod(ctx context.Context, c client.Reader, namespace, name string) (*PodExplanation, error) {
	return explainPod(ctx, c, namespace, name, interference.FittedColocation())
}

// explainPod is ExplainPod with the co-location model m.
func explainPod(ctx context.Context, c client.Reader, namespace, name string, m interference.Colocation) (*PodExplanation, error) {
	var p v1.Pod
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &p); err != nil {
		return nil, apiError(err, "get", "pods", "pod", namespace+"/"+name)
	}
	x := &PodExplanation{
		Namespace: p.Namespace, Name: p.Name, SchedulerName: p.Spec.SchedulerName,
		Phase: string(p.Status.Phase), Node: p.Spec.NodeName,
		PredictedInflation:    p.Annotations[v1alpha1.AnnotationPredictedInflation],
		NeighboursAtPlacement: p.Annotations[v1alpha1.AnnotationGPUNeighbours],
	}
	for k, v := range p.Annotations {
		if strings.HasPrefix(k, v1alpha1.GroupName+"/") {
			if x.Annotations == nil {
				x.Annotations = map[string]string{}
			}
			x.Annotations[k] = v
		}
	}
	if _, _, err := gpuinventory.DemandOf(&p); err != nil {
		x.AnnotationErrors = append(x.AnnotationErrors, err.Error())
	}
	if _, _, err := gpuinventory.ParseGPUIndex(p.Annotations); err != nil {
		x.AnnotationErrors = append(x.AnnotationErrors, err.Error())
	}
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == v1.PodScheduled {
			x.Scheduled = &p.Status.Conditions[i]
		}
	}
	evs, note, err := eventsOf(ctx, c, "Pod", p.Namespace, p.Name, p.UID)
	if err != nil {
		return nil, err
	}
	x.Events = evs
	if note != "" {
		x.Notes = append(x.Notes, note)
	}
	if scaler.MarkedForMove(&p) {
		x.Notes = append(x.Notes, fmt.Sprintf("%s marked this pod (%s %s) for a consolidation move of ModelService %s: a new replica of its column goes onto a GPU in use, and once it serves the ReplicaSet removes this pod first, leaving its GPU empty",
			v1alpha1.ScalerName, v1.PodDeletionCost, scaler.MovedPodDeletionCost, p.Labels[v1alpha1.LabelModelService]))
	}
	if p.Spec.NodeName == "" {
		x.Reasons = pendingReasons(x.Scheduled, evs)
		return x, nil
	}
	r, err := GPUs(ctx, c, p.Spec.NodeName, m)
	if err != nil {
		x.Notes = append(x.Notes, fmt.Sprintf("GPUs of node %s not shown: %v", p.Spec.NodeName, err))
		return x, nil
	}
	for i, g := range r.GPUs {
		for _, t := range g.Tenants {
			if t.Namespace == p.Namespace && t.Pod == p.Name {
				x.GPU = &r.GPUs[i]
			}
		}
	}
	for _, n := range r.Notes {
		if strings.Contains(n, p.Namespace+"/"+p.Name+" ") {
			x.Notes = append(x.Notes, n)
		}
	}
	return x, nil
}

// pendingReasons are the reasons of the newest FailedScheduling event of
// hetsev-scheduler, else of the PodScheduled condition's message.
func pendingReasons(cond *v1.PodCondition, evs []EventSummary) []string {
	for _, e := range evs {
		if e.Reason == "FailedScheduling" && (e.From == "" || e.From == v1alpha1.SchedulerName) {
			return splitReasons(e.Message)
		}
	}
	if cond != nil && cond.Message != "" {
		return splitReasons(cond.Message)
	}
	return nil
}

// reasonStart finds where kube-scheduler's next "N reason" group begins
// in a FitError's list (groups are joined by ", " and start with a node
// count).
var reasonStart = regexp.MustCompile(`, \d+ `)

// splitReasons splits kube-scheduler's "0/N nodes are available: 4 r1, 8
// r2. preemption: ..." into its groups ("4 r1", "8 r2"); a message of
// another shape is one reason.
func splitReasons(msg string) []string {
	const avail = "nodes are available: "
	i := strings.Index(msg, avail)
	if i < 0 {
		return []string{msg}
	}
	list := msg[i+len(avail):]
	// The PostFilter plugins' messages follow the list's final "."
	// (DefaultPreemption's "preemption: ...", after others' such as
	// DynamicResources' "no new claims to deallocate,").
	if j := strings.Index(list, " preemption:"); j >= 0 {
		list = strings.TrimSpace(list[:j])
		if !strings.HasSuffix(list, ".") {
			if k := strings.LastIndex(list, ". "); k >= 0 {
				list = list[:k+1]
			}
		}
	}
	list = strings.TrimSuffix(strings.TrimSpace(list), ".")
	var out []string
	start := 0
	for _, m := range reasonStart.FindAllStringIndex(list, -1) {
		out = append(out, list[start:m[0]])
		start = m[0] + 2
	}
	return append(out, list[start:])
}

// writeText prints the explanation for -o table.
func (x *PodExplanation) writeText(w io.Writer) error {
	fmt.Fprintf(w, "Pod:        %s/%s\n", x.Namespace, x.Name)
	fmt.Fprintf(w, "Scheduler:  %s\n", x.SchedulerName)
	if x.SchedulerName != v1alpha1.SchedulerName {
		fmt.Fprintf(w, "            (not %s: hetsev does not place this pod; a pod annotated %s gets it from hetsev's webhook)\n", v1alpha1.SchedulerName, v1alpha1.AnnotationModel)
	}
	fmt.Fprintf(w, "Phase:      %s\n", x.Phase)
	for _, k := range []string{v1alpha1.AnnotationModel, v1alpha1.AnnotationGPUMemory, v1alpha1.AnnotationBusyShare, v1alpha1.AnnotationMaxInflation, v1alpha1.AnnotationGPUIndex} {
		if v, ok := x.Annotations[k]; ok {
			fmt.Fprintf(w, "%-28s%s\n", k+":", v)
		}
	}
	for _, e := range x.AnnotationErrors {
		fmt.Fprintf(w, "Malformed:  %s\n", e)
	}
	if x.Node == "" {
		fmt.Fprintf(w, "Node:       none: the pod is not bound\n")
		if x.Scheduled != nil {
			fmt.Fprintf(w, "Why Pending: PodScheduled=%s %s: %s\n", x.Scheduled.Status, x.Scheduled.Reason, x.Scheduled.Message)
		} else {
			fmt.Fprintf(w, "Why Pending: no scheduler has tried it yet (no PodScheduled condition); is %s running?\n", x.SchedulerName)
		}
		if len(x.Reasons) > 0 {
			fmt.Fprintf(w, "Scheduler's reasons (nodes: reason):\n")
			for _, r := range x.Reasons {
				fmt.Fprintf(w, "  %s\n", r)
			}
		}
	} else {
		fmt.Fprintf(w, "Node:       %s\n", x.Node)
		if g := x.GPU; g != nil {
			fmt.Fprintf(w, "GPU:        %d (%s, GPU mode %s): %d/%d MiB of GPU memory used, declared busy share %.2f\n", g.Index, g.Type, g.Mode, g.MemoryUsedMiB, g.MemoryTotalMiB, g.BusyShare)
		} else {
			fmt.Fprintf(w, "GPU:        none known (no valid %s, no allocated ResourceClaim device)\n", v1alpha1.AnnotationGPUIndex)
		}
		fmt.Fprintf(w, "Predicted inflation at placement: %s\n", orDash(x.PredictedInflation))
		fmt.Fprintf(w, "Neighbours at placement:          %s\n", orDash(x.NeighboursAtPlacement))
		if g := x.GPU; g != nil {
			fmt.Fprintf(w, "On this GPU now (inflation the co-location model predicts now):\n")
			for _, t := range g.Tenants {
				fmt.Fprintf(w, "  %s/%s  %s  %d MiB  busy share %s  inflation %s\n", t.Namespace, t.Pod, orDash(t.Model), t.GPUMemoryMiB, t.busyCell(), inflationCell(t.Inflation))
			}
		}
		if x.SchedulerName == v1alpha1.SchedulerName {
			fmt.Fprintf(w, "Why:        %s admitted it on this GPU (GPU memory, busy share, anti-affinity, inflation limits) and rated it best of the node's GPUs: free GPU memory (worst fit) weighed against the predicted inflation\n", v1alpha1.SchedulerName)
		}
	}
	if len(x.Events) > 0 {
		fmt.Fprintf(w, "Events (newest first):\n")
		writeEvents(w, x.Events)
	}
	writeNotes(w, x.Notes)
	return nil
}

// writeEvents prints events one per line.
func writeEvents(w io.Writer, evs []EventSummary) {
	for _, e := range evs {
		count := ""
		if e.Count > 1 {
			count = fmt.Sprintf(" (x%d)", e.Count)
		}
		fmt.Fprintf(w, "  %s  %s%s  %s: %s\n", e.Type, e.Reason, count, orDash(e.From), e.Message)
	}
}
