//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hetsev/hetsev/internal/sim/demo"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

// waitEvent waits until the pod has an event with reason whose message
// contains want, and returns the message.
func waitEvent(ctx context.Context, t *testing.T, e *env, pod, reason, want string, timeout time.Duration) string {
	t.Helper()
	var msg string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		evs, err := e.cp.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
		if err != nil {
			return false, nil
		}
		for _, ev := range evs.Items {
			if ev.Reason == reason && strings.Contains(ev.Message, want) {
				msg = ev.Message
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		dumpPod(ctx, t, e, pod)
		t.Fatalf("pod %s: no %s event containing %q within %v", pod, reason, want, timeout)
	}
	return msg
}

// waitWaitingReason waits until the pod's first container is waiting with
// reason.
func waitWaitingReason(ctx context.Context, t *testing.T, e *env, pod, reason string, timeout time.Duration) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := e.cp.Client.CoreV1().Pods("default").Get(ctx, pod, metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			return false, nil
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == reason, nil
	})
	if err != nil {
		dumpPod(ctx, t, e, pod)
		t.Fatalf("pod %s: container not waiting with %s within %v", pod, reason, timeout)
	}
}

// failPrepareOn makes node's DRA plugin fail to prepare claims: its CDI
// spec directory becomes a file, so writing a spec fails. The returned
// function restores the directory.
func failPrepareOn(t *testing.T, n *realNode) func() {
	t.Helper()
	dir := filepath.Join(n.Dir, "cdi")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a directory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return func() {
		_ = os.Remove(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Error(err)
		}
	}
}

// nodeFault breaks something on a node and returns what undoes it, with
// the event the kubelet gives a pod sent there (reason, and text in its
// message).
type nodeFault struct {
	name        string
	breakOn     func(t *testing.T, n *realNode) (restore func())
	eventReason string
	eventText   string
}

// runtimeDown kills the node's containerd; restarting it restores the node.
var runtimeDown = nodeFault{
	name: "containerd down",
	breakOn: func(t *testing.T, n *realNode) func() {
		if err := n.containerd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		return func() { n.startContainerd(t, context.Background()) }
	},
	eventReason: "FailedCreatePodSandBox",
	eventText:   "containerd.sock",
}

// claimUnprepared makes the node's DRA plugin fail to prepare claims.
var claimUnprepared = nodeFault{
	name:        "DRA plugin cannot prepare claims",
	breakOn:     failPrepareOn,
	eventReason: "FailedPrepareDynamicResources",
	eventText:   "CDI spec",
}

// testStuckReplica: with fault on the T4 node, an instance of a
// ModelService profiled on the T4 only is bound there and cannot start:
// its pod gets the kubelet's event and stays not Ready, and once past its
// launch grace (2 x launchSeconds + 30 s) the installed hetsev-scaler
// reports it in the NotStarting condition (NotReadyAfterLaunch), leaving
// it out of the capacity it counts. With the fault undone the instance
// starts and the condition turns False.
func testStuckReplica(ctx context.Context, t *testing.T, e *env, dyn dynamic.Interface, fault nodeFault) {
	n := e.nodes[1]
	ms := e2eModelService(t, "stuck", "resnet50", 400)
	ms.Name, ms.Spec.Model = "stuck", "stuck"
	ms.Spec.Scaling.MaxReplicas = 1
	var t4 []v1alpha1.GPUProfile
	for _, p := range ms.Spec.Profiles {
		if p.GPUType == n.GPUType.Name {
			t4 = append(t4, p)
		}
	}
	ms.Spec.Profiles = t4
	restore := fault.breakOn(t, n)
	restored := false
	defer func() {
		if !restored {
			restore()
		}
	}()
	if err := demo.CreateModelService(ctx, dyn, ms); err != nil {
		t.Fatal(err)
	}
	defer deleteModelService(ctx, t, e, dyn, ms.Name)
	selector := v1alpha1.LabelModelService + "=" + ms.Name
	var pod string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := e.cp.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, nil
		}
		for _, p := range l.Items {
			if p.Spec.NodeName == n.Name {
				pod = p.Name
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		if l, err := e.cp.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: selector}); err == nil {
			for _, p := range l.Items {
				dumpPod(ctx, t, e, p.Name)
			}
		}
		if obj, err := dyn.Resource(v1alpha1.Resource).Namespace("default").Get(ctx, ms.Name, metav1.GetOptions{}); err == nil {
			t.Logf("ModelService %s status: %v", ms.Name, obj.Object["status"])
		}
		t.Fatalf("no instance of %s bound to %s within a minute", ms.Name, n.Name)
	}
	msg := waitEvent(ctx, t, e, pod, fault.eventReason, fault.eventText, 2*time.Minute)
	t.Logf("%s on %s: pod %s: %s: %s", fault.name, n.Name, pod, fault.eventReason, msg)
	cond := waitCondition(ctx, t, dyn, ms.Name, v1alpha1.ConditionNotStarting, metav1.ConditionTrue, 2*time.Minute)
	t.Logf("hetsev-scaler: NotStarting %s: %s", cond.Reason, cond.Message)
	if cond.Reason != "NotReadyAfterLaunch" || !strings.Contains(cond.Message, pod) || !strings.Contains(cond.Message, n.Name) {
		t.Errorf("NotStarting reason %q, message %q; want NotReadyAfterLaunch naming pod %s on %s", cond.Reason, cond.Message, pod, n.Name)
	}
	restore()
	restored = true
	start := time.Now()
	cond = waitCondition(ctx, t, dyn, ms.Name, v1alpha1.ConditionNotStarting, metav1.ConditionFalse, 3*time.Minute)
	ready := waitReplicasReady(ctx, t, e, selector, 1, 2*time.Minute)
	t.Logf("%s undone: NotStarting %s after %v; %s", fault.name, cond.Reason, time.Since(start).Round(time.Second), ready)
}

// waitCondition waits until the ModelService's condition of type typ has
// status, and returns it.
func waitCondition(ctx context.Context, t *testing.T, dyn dynamic.Interface, name, typ string, status metav1.ConditionStatus, timeout time.Duration) metav1.Condition {
	t.Helper()
	var cond metav1.Condition
	var last *v1alpha1.ModelService
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		obj, err := dyn.Resource(v1alpha1.Resource).Namespace("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		var got v1alpha1.ModelService
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &got); err != nil {
			return false, err
		}
		last = &got
		if c := meta.FindStatusCondition(got.Status.Conditions, typ); c != nil && c.Status == status {
			cond = *c
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		if last != nil {
			t.Logf("ModelService %s conditions: %+v", name, last.Status.Conditions)
		}
		t.Fatalf("ModelService %s: %s not %s within %v: %v", name, typ, status, timeout, err)
	}
	return cond
}

// deleteModelService deletes the ModelService and waits until its pods are
// gone.
func deleteModelService(ctx context.Context, t *testing.T, e *env, dyn dynamic.Interface, name string) {
	if err := dyn.Resource(v1alpha1.Resource).Namespace("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting ModelService %s: %v", name, err)
		return
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := e.cp.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelModelService + "=" + name})
		return err == nil && len(l.Items) == 0, nil
	})
	if err != nil {
		t.Errorf("the pods of ModelService %s not gone within 2 minutes", name)
	}
}
