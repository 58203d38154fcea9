//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
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

// testFaults: a node whose containerd is down fails the pods sent to it
// with the runtime's error, and the pod never becomes Ready. It runs last:
// the node's runtime stays down.
func testFaults(ctx context.Context, t *testing.T, e *env) {
	n := e.nodes[1]
	if err := n.containerd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// No kubelet can confirm the pod's end: delete it at once.
	defer func() {
		_ = e.cp.Client.CoreV1().Pods("default").DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))},
			metav1.ListOptions{LabelSelector: "e2e=faults"})
	}()
	// No GPU assignment: the chart's admission policy, installed by now,
	// lets only hetsev-scheduler write one.
	p := modelServerPod("runtime-down", n.Name, "")
	p.Labels["e2e"] = "faults"
	create(ctx, t, e, p)
	msg := waitEvent(ctx, t, e, p.Name, "FailedCreatePodSandBox", "containerd.sock", 2*time.Minute)
	t.Logf("containerd down on %s: %s", n.Name, msg)
	got, err := e.cp.Client.CoreV1().Pods("default").Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if podReady(got) || got.Status.Phase != v1.PodPending {
		t.Errorf("pod on a node without a runtime: phase %s, Ready %v; want Pending, not Ready", got.Status.Phase, podReady(got))
	}
}
