package gpuinventory

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

func t4(name string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		LabelGPUProduct: "Tesla-T4", LabelGPUCount: "2", LabelGPUMemory: "16384",
	}}}
}

// gpuPod is a pod on node with the given hetsev annotations; "-" leaves an
// annotation out.
func gpuPod(name, node, model, mem, idx string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name), Annotations: map[string]string{}},
		Spec: v1.PodSpec{NodeName: node}, Status: v1.PodStatus{Phase: v1.PodRunning}}
	for k, v := range map[string]string{v1alpha1.AnnotationModel: model, v1alpha1.AnnotationGPUMemory: mem, v1alpha1.AnnotationGPUIndex: idx} {
		if v != "-" {
			p.Annotations[k] = v
		}
	}
	return p
}

// occupancy is what the scheduler and the scaler do: the node's GFD
// inventory, then AddPod for each of its pods.
func occupancy(t *testing.T, node *v1.Node, pods []*v1.Pod, reserved Reservations) *Occupancy {
	t.Helper()
	inv, err := NodeGPUsOf(node)
	if err != nil {
		t.Fatal(err)
	}
	o := NewOccupancy(node.Name, inv)
	for _, p := range pods {
		o.AddPod(p, reserved)
	}
	return o
}

type gpuWant struct {
	usedMiB   int64
	instances int
	models    map[string]int
}

func checkGPUs(t *testing.T, o *Occupancy, want ...gpuWant) {
	t.Helper()
	if len(o.GPUs) != len(want) {
		t.Fatalf("%d GPUs, want %d", len(o.GPUs), len(want))
	}
	for i, w := range want {
		g := o.GPUs[i]
		if g.Index != i || g.TotalMiB != 16384 || g.UsedMiB != w.usedMiB || g.Instances != w.instances || len(g.Models) != len(w.models) {
			t.Errorf("GPU %d: %+v, want used %d MiB, %d instances, models %v", i, g, w.usedMiB, w.instances, w.models)
			continue
		}
		for m, n := range w.models {
			if g.Models[m] != n {
				t.Errorf("GPU %d: models %v, want %v", i, g.Models, w.models)
			}
		}
	}
}

// TestOccupancyRule works the rule of AddPod pod by pod on a T4 node (two
// GPUs of 16384 MiB).
func TestOccupancyRule(t *testing.T) {
	reservations := map[types.UID]struct {
		node string
		idx  int
	}{
		"assumed":       {"a", 1},
		"elsewhere":     {"b", 0},
		"bound-and-res": {"a", 0}, // the annotation wins over a stale reservation
	}
	reserved := func(uid types.UID) (string, int, bool) {
		r, ok := reservations[uid]
		return r.node, r.idx, ok
	}
	terminating := gpuPod("terminating", "a", "ssd", "1Gi", "1")
	terminating.DeletionTimestamp = &metav1.Time{}
	succeeded := gpuPod("succeeded", "a", "bert", "8Gi", "0")
	succeeded.Status.Phase = v1.PodSucceeded
	failed := gpuPod("failed", "a", "bert", "8Gi", "1")
	failed.Status.Phase = v1.PodFailed

	for _, c := range []struct {
		name    string
		pod     *v1.Pod
		want    [2]gpuWant
		counted string // the Issue's, if any
	}{
		{"bound", gpuPod("bound", "a", "resnet50", "2Gi", "0"), [2]gpuWant{{2048, 1, map[string]int{"default/resnet50": 1}}, {}}, ""},
		{"bound, rounds up to MiB", gpuPod("round", "a", "resnet50", "1500000", "1"), [2]gpuWant{{}, {2, 1, map[string]int{"default/resnet50": 1}}}, ""},
		{"bound, no model", gpuPod("anon", "a", "-", "1Gi", "1"), [2]gpuWant{{}, {1024, 1, nil}}, ""},
		{"assumed, reserved here", gpuPod("assumed", "a", "ssd", "3Gi", "-"), [2]gpuWant{{}, {3072, 1, map[string]int{"default/ssd": 1}}}, ""},
		{"reserved on another node", gpuPod("elsewhere", "a", "ssd", "3Gi", "-"), [2]gpuWant{}, ""},
		{"index wins over reservation", gpuPod("bound-and-res", "a", "ssd", "3Gi", "1"), [2]gpuWant{{}, {3072, 1, map[string]int{"default/ssd": 1}}}, ""},
		{"neither index nor reservation", gpuPod("unplaced", "a", "ssd", "3Gi", "-"), [2]gpuWant{}, ""},
		{"terminating still holds its GPU", terminating, [2]gpuWant{{}, {1024, 1, map[string]int{"default/ssd": 1}}}, ""},
		{"succeeded holds nothing", succeeded, [2]gpuWant{}, ""},
		{"failed holds nothing", failed, [2]gpuWant{}, ""},
		{"not a GPU pod", gpuPod("plain", "a", "-", "-", "-"), [2]gpuWant{}, ""},
		{"malformed memory: whole GPU", gpuPod("lots", "a", "bert", "lots", "1"), [2]gpuWant{{}, {16384, 1, map[string]int{"default/bert": 1}}}, CountedWholeGPU},
		{"negative memory: whole GPU", gpuPod("neg", "a", "bert", "-1Gi", "0"), [2]gpuWant{{16384, 1, map[string]int{"default/bert": 1}}, {}}, CountedWholeGPU},
		{"model without memory: whole GPU", gpuPod("nomem", "a", "bert", "-", "0"), [2]gpuWant{{16384, 1, map[string]int{"default/bert": 1}}, {}}, CountedWholeGPU},
		{"index without demand: whole GPU", gpuPod("bare", "a", "-", "-", "1"), [2]gpuWant{{}, {16384, 1, nil}}, CountedWholeGPU},
		{"malformed memory, reserved: whole GPU", gpuPod("assumed", "a", "ssd", "x", "-"), [2]gpuWant{{}, {16384, 1, map[string]int{"default/ssd": 1}}}, CountedWholeGPU},
		{"malformed memory, unplaced: nothing", gpuPod("unplaced", "a", "ssd", "x", "-"), [2]gpuWant{}, ""},
		{"malformed index: every GPU", gpuPod("all", "a", "ssd", "2Gi", "all"), [2]gpuWant{{2048, 1, map[string]int{"default/ssd": 1}}, {2048, 1, map[string]int{"default/ssd": 1}}}, CountedEveryGPU},
		{"negative index: every GPU", gpuPod("neg-idx", "a", "ssd", "2Gi", "-1"), [2]gpuWant{{2048, 1, map[string]int{"default/ssd": 1}}, {2048, 1, map[string]int{"default/ssd": 1}}}, CountedEveryGPU},
		{"both malformed", gpuPod("worst", "a", "ssd", "x", "0,1"), [2]gpuWant{{16384, 1, map[string]int{"default/ssd": 1}}, {16384, 1, map[string]int{"default/ssd": 1}}}, CountedEveryGPU},
		{"index beyond the GPUs", gpuPod("ghost", "a", "ssd", "2Gi", "7"), [2]gpuWant{}, CountedNothing},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := occupancy(t, t4("a"), []*v1.Pod{c.pod}, reserved)
			checkGPUs(t, o, c.want[0], c.want[1])
			if c.counted == "" {
				if len(o.Issues) != 0 {
					t.Errorf("issues %+v, want none", o.Issues)
				}
				return
			}
			var last Issue
			if len(o.Issues) > 0 {
				last = o.Issues[len(o.Issues)-1]
			}
			if last.Pod != c.pod || last.Counted != c.counted || last.Err == nil || !strings.Contains(last.Err.Error(), "hetsev.io/") {
				t.Errorf("issues %+v, want the pod counted as %q with an error naming the annotation", o.Issues, c.counted)
			}
		})
	}
}

// TestOccupancySums: pods add up per GPU; without Reservations an assumed
// pod without index is not counted; a malformed pod makes its GPU fit
// nothing.
func TestOccupancySums(t *testing.T) {
	pods := []*v1.Pod{
		gpuPod("r0", "a", "resnet50", "2Gi", "0"),
		gpuPod("s0", "a", "ssd", "3Gi", "0"),
		gpuPod("s1", "a", "ssd", "6Gi", "1"),
		gpuPod("x", "a", "ssd", "6Gi", "-"),
	}
	o := occupancy(t, t4("a"), pods, nil)
	checkGPUs(t, o, gpuWant{5120, 2, map[string]int{"default/resnet50": 1, "default/ssd": 1}}, gpuWant{6144, 1, map[string]int{"default/ssd": 1}})
	if n := SlotsOnNode(o.GPUs, Demand{Model: "bert", MemoryMiB: 1024}, 0, 0, 0, 0, 0); n != 2 {
		t.Errorf("bert fits %d GPUs, want 2", n)
	}
	o.AddPod(gpuPod("bad", "a", "-", "lots", "0"), nil)
	if n := SlotsOnNode(o.GPUs, Demand{Model: "bert", MemoryMiB: 1}, 0, 0, 0, 0, 0); n != 1 || o.GPUs[0].Fits(Demand{MemoryMiB: 1}) {
		t.Errorf("with a malformed pod on GPU 0, bert fits %d GPUs, want 1 (GPU 1)", n)
	}
}
