package gpushare

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// handle is the part of fwk.Handle the plugin uses.
type handle struct {
	fwk.Handle
	snapshot *cache.Snapshot
	client   kubernetes.Interface
}

func (h handle) SnapshotSharedLister() fwk.SharedLister { return h.snapshot }
func (h handle) ClientSet() kubernetes.Interface        { return h.client }

func t4Node(name string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		gpuinventory.LabelGPUProduct: "Tesla-T4", gpuinventory.LabelGPUCount: "2", gpuinventory.LabelGPUMemory: "16384",
	}}}
}

func gpuPod(name, node, model, mem, idx string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name),
		Annotations: map[string]string{gpuinventory.AnnotationModel: model, gpuinventory.AnnotationGPUMemory: mem}},
		Spec: v1.PodSpec{NodeName: node}}
	if idx != "" {
		p.Annotations[gpuinventory.AnnotationGPUIndex] = idx
	}
	return p
}

func nodeInfo(n *v1.Node, pods ...*v1.Pod) fwk.NodeInfo {
	ni := framework.NewNodeInfo(pods...)
	ni.SetNode(n)
	return ni
}

// TestPlacement works worst fit and anti-affinity by hand: node a has
// resnet50 (2 GiB) on GPU 0 and ssd (10 GiB) on GPU 1; node b has ssd
// (3 GiB) on GPU 0 and nothing on GPU 1.
func TestPlacement(t *testing.T) {
	a, b := t4Node("a"), t4Node("b")
	placed := []*v1.Pod{
		gpuPod("r0", "a", "resnet50", "2Gi", "0"),
		gpuPod("s0", "a", "ssd", "10Gi", "1"),
		gpuPod("s1", "b", "ssd", "3Gi", "0"),
	}
	incoming := gpuPod("new", "", "resnet50", "4Gi", "")
	client := fake.NewClientset(incoming)
	p := &GPUShare{reserved: map[types.UID]reservation{}, handle: handle{snapshot: cache.NewSnapshot(placed, []*v1.Node{a, b}), client: client}}
	ctx := context.Background()
	state := framework.NewCycleState()
	if _, st := p.PreFilter(ctx, state, incoming, nil); !st.IsSuccess() {
		t.Fatalf("PreFilter: %v", st)
	}
	niA, niB := nodeInfo(a, placed[0], placed[1]), nodeInfo(b, placed[2])
	// a: GPU 0 hosts resnet50 (anti-affinity), GPU 1 has 6 GiB free: fits.
	if st := p.Filter(ctx, state, incoming, niA); !st.IsSuccess() {
		t.Errorf("Filter(a) = %v, want success on GPU 1", st)
	}
	// Scores are the free GPU memory left on the worst-fit GPU: a/1 has
	// 6144-4096 = 2048 MiB, b/1 16384-4096 = 12288 MiB.
	sa, _ := p.Score(ctx, state, incoming, niA)
	sb, _ := p.Score(ctx, state, incoming, niB)
	if sa != 2048 || sb != 12288 {
		t.Errorf("scores a=%d b=%d, want 2048 and 12288", sa, sb)
	}
	scores := fwk.NodeScoreList{{Name: "a", Score: sa}, {Name: "b", Score: sb}}
	p.NormalizeScore(ctx, state, incoming, scores)
	if scores[1].Score != fwk.MaxNodeScore || scores[0].Score >= scores[1].Score {
		t.Errorf("normalized %v", scores)
	}
	// Reserve on b picks GPU 1 (empty), PreBind writes it on the pod.
	if st := p.Reserve(ctx, state, incoming, "b"); !st.IsSuccess() {
		t.Fatalf("Reserve: %v", st)
	}
	if st := p.PreBind(ctx, state, incoming, "b"); !st.IsSuccess() {
		t.Fatalf("PreBind: %v", st)
	}
	got, err := client.CoreV1().Pods("default").Get(ctx, "new", metav1.GetOptions{})
	if err != nil || got.Annotations[gpuinventory.AnnotationGPUIndex] != "1" {
		t.Fatalf("gpu-index = %q (%v), want 1", got.Annotations[gpuinventory.AnnotationGPUIndex], err)
	}
	// While the annotation is not yet visible, the reservation counts: a
	// second resnet50 must not get b/1.
	second := gpuPod("second", "", "resnet50", "4Gi", "")
	niB2 := nodeInfo(b, placed[2], gpuPod("new", "b", "resnet50", "4Gi", ""))
	st2 := framework.NewCycleState()
	p.PreFilter(ctx, st2, second, nil)
	if s, _ := p.Score(ctx, st2, second, niB2); s != 16384-3072-4096 {
		t.Errorf("second resnet50 on b scores %d, want GPU 0's %d (GPU 1 holds the reserved one)", s, 16384-3072-4096)
	}
	// Unreserve releases it.
	p.Unreserve(ctx, state, incoming, "b")
	if _, ok := p.reservationOf("new"); ok {
		t.Error("reservation kept after Unreserve")
	}
}

func TestRejections(t *testing.T) {
	ctx := context.Background()
	p := &GPUShare{reserved: map[types.UID]reservation{}}
	// Malformed annotation: unresolvable, message names the annotation.
	_, st := p.PreFilter(ctx, framework.NewCycleState(), gpuPod("bad", "", "m", "lots", ""), nil)
	if st.Code() != fwk.UnschedulableAndUnresolvable || !contains(st.Message(), gpuinventory.AnnotationGPUMemory) {
		t.Errorf("bad quantity: %v", st)
	}
	// A pod without hetsev annotations is not this plugin's business.
	plain := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}
	if _, st := p.PreFilter(ctx, framework.NewCycleState(), plain, nil); st.Code() != fwk.Skip {
		t.Errorf("plain pod: %v, want Skip", st)
	}
	// Malformed node labels: the node is filtered out with a reason.
	broken := t4Node("broken")
	broken.Labels[gpuinventory.LabelGPUMemory] = "sixteen"
	state := framework.NewCycleState()
	pod := gpuPod("x", "", "m", "1Gi", "")
	p.PreFilter(ctx, state, pod, nil)
	if st := p.Filter(ctx, state, pod, nodeInfo(broken)); st.IsSuccess() || !contains(st.Message(), "malformed GPU labels") {
		t.Errorf("broken node: %v", st)
	}
	// Too large for any GPU.
	big := gpuPod("big", "", "m", "20Gi", "")
	state = framework.NewCycleState()
	p.PreFilter(ctx, state, big, nil)
	if st := p.Filter(ctx, state, big, nodeInfo(t4Node("a"))); st.Code() != fwk.Unschedulable || !contains(st.Message(), "no GPU with 20480 MiB") {
		t.Errorf("big: %v", st)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestArgs: defaults are the paper's rules; every bad field is named, and
// unknown fields are refused rather than ignored.
func TestArgs(t *testing.T) {
	a, err := ParseArgs(nil)
	if err != nil || a.Choice() != (gpuinventory.Choice{Fit: gpuinventory.FitWorst}) {
		t.Errorf("defaults: %+v %v", a, err)
	}
	a, err = ParseArgs(&runtime.Unknown{Raw: []byte(`{"apiVersion":"hetsev.io/v1alpha1","kind":"HetsevGPUShareArgs","antiAffinity":"Soft","fit":"BestFit"}`)})
	if err != nil || a.Choice() != (gpuinventory.Choice{Fit: gpuinventory.FitBest, SoftAntiAffinity: true}) {
		t.Errorf("soft best fit: %+v %v", a, err)
	}
	for raw, want := range map[string][]string{
		`{"antiAffinity":"sometimes","fit":"FirstFit"}`: {"pluginConfig[HetsevGPUShare].args.antiAffinity", "pluginConfig[HetsevGPUShare].args.fit"},
		`{"apiVersion":"v1","kind":"Args"}`:             {"args.apiVersion", "args.kind"},
		`{"antiafinity":"Soft"}`:                        {"unknown field", "antiafinity"},
		"fit: [":                                        {"pluginConfig[HetsevGPUShare].args"},
	} {
		_, err := ParseArgs(&runtime.Unknown{Raw: []byte(raw)})
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: err %v does not name %s", raw, err, w)
			}
		}
	}
	if _, err := New(context.Background(), &runtime.Unknown{Raw: []byte(`{"fit":"FirstFit"}`)}, handle{}); err == nil {
		t.Error("New accepted invalid args")
	}
}

// TestChoiceFitAndSoftAntiAffinity works best fit and soft anti-affinity by
// hand on one T4 node: GPU 0 has resnet50 (2 GiB), GPU 1 has ssd (10 GiB).
func TestChoiceFitAndSoftAntiAffinity(t *testing.T) {
	a := t4Node("a")
	placed := []*v1.Pod{gpuPod("r0", "a", "resnet50", "2Gi", "0"), gpuPod("s0", "a", "ssd", "10Gi", "1")}
	ni := nodeInfo(a, placed...)
	ctx := context.Background()
	run := func(c gpuinventory.Choice, pod *v1.Pod) (int64, int, *fwk.Status) {
		t.Helper()
		client := fake.NewClientset(pod)
		p := &GPUShare{choice: c, reserved: map[types.UID]reservation{}, handle: handle{snapshot: cache.NewSnapshot(placed, []*v1.Node{a}), client: client}}
		state := framework.NewCycleState()
		p.PreFilter(ctx, state, pod, nil)
		if st := p.Filter(ctx, state, pod, ni); !st.IsSuccess() {
			return 0, -1, st
		}
		score, _ := p.Score(ctx, state, pod, ni)
		if st := p.Reserve(ctx, state, pod, "a"); !st.IsSuccess() {
			return 0, -1, st
		}
		r, _ := p.reservationOf(pod.UID)
		return score, r.index, nil
	}
	// bert 1 GiB: worst fit takes GPU 0 (14 GiB free), best fit GPU 1 (6 GiB
	// free); best fit scores the memory in use after: 10 + 1 GiB.
	if _, idx, _ := run(gpuinventory.Choice{}, gpuPod("b1", "", "bert", "1Gi", "")); idx != 0 {
		t.Errorf("worst fit chose GPU %d, want 0", idx)
	}
	if s, idx, _ := run(gpuinventory.Choice{Fit: gpuinventory.FitBest}, gpuPod("b2", "", "bert", "1Gi", "")); idx != 1 || s != 11264 {
		t.Errorf("best fit chose GPU %d with score %d, want 1 and 11264", idx, s)
	}
	// resnet50 8 GiB: only GPU 0 has room, and it hosts resnet50. Hard:
	// unschedulable; soft: placed there with a negative score.
	if _, _, st := run(gpuinventory.Choice{}, gpuPod("r1", "", "resnet50", "8Gi", "")); st.IsSuccess() || !contains(st.Message(), "anti-affinity") {
		t.Errorf("hard anti-affinity: %v", st)
	}
	s, idx, st := run(gpuinventory.Choice{SoftAntiAffinity: true}, gpuPod("r2", "", "resnet50", "8Gi", ""))
	if st != nil || idx != 0 || s >= 0 {
		t.Errorf("soft anti-affinity: GPU %d score %d (%v), want GPU 0 and a negative score", idx, s, st)
	}
	// resnet50 1 GiB, soft: GPU 1 (no resnet50) is preferred even by best
	// fit's rule, which would otherwise not matter here.
	if _, idx, _ := run(gpuinventory.Choice{SoftAntiAffinity: true}, gpuPod("r3", "", "resnet50", "1Gi", "")); idx != 1 {
		t.Errorf("soft anti-affinity chose GPU %d, want 1 (no resnet50 there)", idx)
	}
	scores := fwk.NodeScoreList{{Name: "clash", Score: -5000}, {Name: "low", Score: 10}, {Name: "high", Score: 9000}}
	(&GPUShare{}).NormalizeScore(ctx, nil, nil, scores)
	if scores[0].Score != 0 || scores[1].Score != 1 || scores[2].Score != fwk.MaxNodeScore {
		t.Errorf("normalized %v, want 0, 1, %d", scores, fwk.MaxNodeScore)
	}
}
