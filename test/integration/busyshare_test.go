package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// The busy-share tests run on one node, t4-0, with two T4 GPUs (16384 MiB
// each) under hetsev-scheduler with manifests/scheduler-config.yaml
// (maxBusyShare 1). Every pod asks for 1 GiB, so GPU memory never decides.
var (
	busyGPU0 = gpuKey{"t4-0", 0}
	busyGPU1 = gpuKey{"t4-0", 1}
)

// busyShareNode creates t4-0, a T4 server with two GPUs, with no other
// node in the cluster.
func busyShareNode(ctx context.Context, t *testing.T, cp *cluster.ControlPlane) {
	t.Helper()
	t4 := catalogT4(t)
	if _, err := cluster.CreateNodes(ctx, cp.Client, []cluster.NodeGroup{{Prefix: "t4-", Count: 1, GPUType: t4, GPUsPerNode: 2, CPUs: 40, MemoryGiB: 62}}); err != nil {
		t.Fatal(err)
	}
}

// busySharePod is a hetsev pod named after its model, with 1 GiB of GPU
// memory on a T4, declaring hetsev.io/busy-share share.
func busySharePod(model, share string) *podBuilder {
	b := modelPod(model, model, "1Gi").on("Tesla-T4")
	b.pod.Annotations[v1alpha1.AnnotationBusyShare] = share
	return b
}

// placeOn creates the pod, waits until it is bound with its
// hetsev.io/gpu-index, and fails the test unless that is GPU want. A pod
// the scheduler finds unschedulable fails the test at once, with the reason.
func placeOn(ctx context.Context, t *testing.T, c kubernetes.Interface, b *podBuilder, want gpuKey, why string) {
	t.Helper()
	b.create(ctx, t, c)
	if got := waitBoundGPU(ctx, t, c, b.pod.Name); got != want {
		t.Fatalf("%s (busy share %s) bound to %s GPU %d, want %s GPU %d: %s",
			b.pod.Name, b.pod.Annotations[v1alpha1.AnnotationBusyShare], got.node, got.index, want.node, want.index, why)
	}
}

// waitBoundGPU waits until pod name is bound and carries hetsev.io/gpu-index
// and returns that GPU; it fails the test when the scheduler reports the pod
// unschedulable instead.
func waitBoundGPU(ctx context.Context, t *testing.T, c kubernetes.Interface, name string) gpuKey {
	t.Helper()
	var got gpuKey
	waitFor(ctx, t, 60*time.Second, name+" bound to a GPU", func(ctx context.Context) (bool, error) {
		p, err := c.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if r := unschedulableReason(*p); r != "" {
			return false, fmt.Errorf("%s is unschedulable: %s", name, r)
		}
		idx, ok, err := gpuinventory.ParseGPUIndex(p.Annotations)
		if p.Spec.NodeName == "" || !ok || err != nil {
			return false, nil
		}
		got = gpuKey{p.Spec.NodeName, idx}
		return true, nil
	})
	return got
}

// placeHeavyThenLights places heavy-a (busy share 0.7) and then three light
// instances of three other models (0.1 each): heavy-a takes GPU 0 (both
// empty, ties go to the lower index), and the lights join it there
// (consolidate: a GPU in use where their share fits comes before an empty
// one), filling its busy share to 1.0 and leaving GPU 1 empty.
func placeHeavyThenLights(ctx context.Context, t *testing.T, c kubernetes.Interface) {
	t.Helper()
	placeOn(ctx, t, c, busySharePod("heavy-a", "0.7"), busyGPU0, "both GPUs are empty")
	for _, m := range []string{"light-c", "light-d", "light-e"} {
		placeOn(ctx, t, c, busySharePod(m, "0.1"), busyGPU0, "GPU 0 is in use and the light share fits beside heavy-a (consolidate)")
	}
}

// checkBusyShares asserts that no GPU carries more summed declared
// hetsev.io/busy-share than the cap of 1 (with the scheduler's slack for
// float sums) and that every bound pod is on the GPU want names, and
// returns the sums per GPU.
func checkBusyShares(t *testing.T, byGPU map[gpuKey][]v1.Pod, want map[string]gpuKey) map[gpuKey]float64 {
	t.Helper()
	sums := map[gpuKey]float64{}
	seen := map[string]bool{}
	for k, pods := range byGPU {
		for _, p := range pods {
			seen[p.Name] = true
			if w, ok := want[p.Name]; !ok || w != k {
				t.Errorf("%s on %s GPU %d, want %v", p.Name, k.node, k.index, w)
			}
			s, err := strconv.ParseFloat(p.Annotations[v1alpha1.AnnotationBusyShare], 64)
			if err != nil {
				t.Errorf("%s: %s: %v", p.Name, v1alpha1.AnnotationBusyShare, err)
			}
			sums[k] += s
		}
		if sums[k] > 1+1e-9 {
			t.Errorf("%s GPU %d carries summed busy share %g > 1", k.node, k.index, sums[k])
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("%s is not bound", name)
		}
	}
	return sums
}

// TestBusyShareSeparatesHeavyInstances: hetsev-scheduler
// keeps the summed hetsev.io/busy-share per GPU within maxBusyShare (1).
// On t4-0's two GPUs heavy-a (0.7) takes GPU 0 and three light instances of
// other models (0.1 each) share it (1.0). heavy-b (0.7) must go to the
// empty GPU 1, not beside them (1.7): without the cap the rating would put
// it there, as consolidation prefers a GPU in use. A pod of busy share 0.5
// then fits neither GPU (1.5, 1.2) and stays Pending with a reason naming
// the annotation.
func TestBusyShareSeparatesHeavyInstances(t *testing.T) {
	cp, ctx := controlPlane(t)
	busyShareNode(ctx, t, cp)
	sched, err := cluster.StartScheduler(ctx, cp)
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, sched)
	c := cp.Client

	placeHeavyThenLights(ctx, t, c)
	placeOn(ctx, t, c, busySharePod("heavy-b", "0.7"), busyGPU1, "beside heavy-a and the lights the summed busy share would be 1.7 > maxBusyShare 1")

	byGPU := checkPlacements(ctx, t, c) // memory, anti-affinity, GPU index
	sums := checkBusyShares(t, byGPU, map[string]gpuKey{
		"heavy-a": busyGPU0, "heavy-b": busyGPU1, "light-c": busyGPU0, "light-d": busyGPU0, "light-e": busyGPU0,
	})
	t.Logf("summed busy share: GPU 0 %.2f, GPU 1 %.2f", sums[busyGPU0], sums[busyGPU1])

	busySharePod("medium", "0.5").create(ctx, t, c)
	const reason = "every GPU with 1024 MiB free would exceed busy share 1 with this pod's hetsev.io/busy-share 0.5"
	// The scheduler records the event and patches the pod's condition
	// separately: wait for both.
	waitFor(ctx, t, 30*time.Second, "medium's FailedScheduling event and condition naming "+v1alpha1.AnnotationBusyShare, func(ctx context.Context) (bool, error) {
		p, err := c.CoreV1().Pods("default").Get(ctx, "medium", metav1.GetOptions{})
		if err == nil && p.Spec.NodeName != "" {
			return false, fmt.Errorf("medium (busy share 0.5) bound to %s with annotations %v, want Pending", p.Spec.NodeName, p.Annotations)
		}
		if err != nil || !strings.Contains(unschedulableReason(*p), reason) {
			return false, nil
		}
		msgs, err := eventsFor(ctx, c, "default", "medium")
		return err == nil && strings.Contains(msgs, "FailedScheduling") && strings.Contains(msgs, reason), nil
	})
	p, err := c.CoreV1().Pods("default").Get(ctx, "medium", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.NodeName != "" || p.Status.Phase != v1.PodPending || !strings.Contains(unschedulableReason(*p), reason) {
		t.Errorf("medium: node %q phase %s condition %q, want Pending, unbound, PodScheduled=False saying %q",
			p.Spec.NodeName, p.Status.Phase, unschedulableReason(*p), reason)
	}
}

// TestBusySharesCountedAfterSchedulerRestart: a new hetsev-scheduler
// rebuilds GPU time from the bound pods' hetsev.io/busy-share, as it does
// GPU memory. heavy-a (0.7) and three lights (0.1 each) are bound by one
// scheduler, which is then killed; heavy-b (0.7), created while no
// scheduler runs, must be placed by the next one on the empty GPU 1, not
// beside heavy-a and the lights (1.7), where consolidation alone would put
// it.
func TestBusySharesCountedAfterSchedulerRestart(t *testing.T) {
	cp, ctx := controlPlane(t)
	busyShareNode(ctx, t, cp)
	first, err := cluster.StartScheduler(ctx, cp)
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, first)
	c := cp.Client

	placeHeavyThenLights(ctx, t, c)
	first.Kill()
	busySharePod("heavy-b", "0.7").create(ctx, t, c)
	second, err := cluster.StartScheduler(ctx, cp)
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, second)
	if got := waitBoundGPU(ctx, t, c, "heavy-b"); got != busyGPU1 {
		t.Errorf("heavy-b (busy share 0.7) bound to %s GPU %d after the restart, want %s GPU %d: beside heavy-a and the lights the summed busy share would be 1.7 > 1",
			got.node, got.index, busyGPU1.node, busyGPU1.index)
	}
	checkBusyShares(t, checkPlacements(ctx, t, c), map[string]gpuKey{
		"heavy-a": busyGPU0, "heavy-b": busyGPU1, "light-c": busyGPU0, "light-d": busyGPU0, "light-e": busyGPU0,
	})
}
