package gpushare

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unique"

	configtesting "github.com/hetsev/hetsev/pkg/apis/config/testing"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"sigs.k8s.io/yaml"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/interference"
	"github.com/hetsev/hetsev/pkg/placement"
)

// handle is the part of fwk.Handle the plugin uses.
type handle struct {
	fwk.Handle
	snapshot *cache.Snapshot
	client   kubernetes.Interface
}

func (h handle) SnapshotSharedLister() fwk.SharedLister { return h.snapshot }
func (h handle) ClientSet() kubernetes.Interface        { return h.client }
func (h handle) APICacher() fwk.APICacher               { return nil }

// NominatedPodsForNode: no preemptor is nominated anywhere.
func (h handle) NominatedPodsForNode(string) []fwk.PodInfo { return nil }

func t4Node(name string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		gpuinventory.LabelGPUProduct: "Tesla-T4", gpuinventory.LabelGPUCount: "2", gpuinventory.LabelGPUMemory: "16384",
	}}}
}

func gpuPod(name, node, model, mem, idx string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name),
		Annotations: map[string]string{v1alpha1.AnnotationModel: model, v1alpha1.AnnotationGPUMemory: mem}},
		Spec: v1.PodSpec{NodeName: node}}
	if idx != "" {
		p.Annotations[v1alpha1.AnnotationGPUIndex] = idx
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
	p := newAnnotationGPUShare(handle{snapshot: cache.NewSnapshot(placed, []*v1.Node{a, b}), client: client}, placement.Placer{})
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
	// With interference weight 0, scores are the share of the worst-fit
	// GPU's memory left free (x 10,000): a/1 has 6144-4096 = 2048 of 16384
	// MiB, b/1 16384-4096 = 12288.
	sa, _ := p.Score(ctx, state, incoming, niA)
	sb, _ := p.Score(ctx, state, incoming, niB)
	if sa != 1250 || sb != 7500 {
		t.Errorf("scores a=%d b=%d, want 1250 and 7500", sa, sb)
	}
	scores := fwk.NodeScoreList{{Name: "a", Score: sa}, {Name: "b", Score: sb}}
	p.NormalizeScore(ctx, state, incoming, scores)
	if scores[1].Score != fwk.MaxNodeScore || scores[0].Score >= scores[1].Score {
		t.Errorf("normalized %v", scores)
	}
	// Reserve on b picks GPU 1 (empty); Bind binds with it as the pod's
	// annotation, in one call.
	if st := p.Reserve(ctx, state, incoming, "b"); !st.IsSuccess() {
		t.Fatalf("Reserve: %v", st)
	}
	var bindings []*v1.Binding
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "binding" {
			return false, nil, nil
		}
		bindings = append(bindings, a.(k8stesting.CreateAction).GetObject().(*v1.Binding))
		return true, nil, nil
	})
	if st := p.Bind(ctx, state, incoming, "b"); !st.IsSuccess() {
		t.Fatalf("Bind: %v", st)
	}
	if len(bindings) != 1 || bindings[0].Target.Name != "b" || bindings[0].Annotations[v1alpha1.AnnotationGPUIndex] != "1" {
		t.Fatalf("bindings %+v, want one to b with gpu-index 1", bindings)
	}
	// A pod without a GPU demand is the DefaultBinder's.
	if st := p.Bind(ctx, framework.NewCycleState(), incoming, "b"); st.Code() != fwk.Skip {
		t.Errorf("Bind without demand: %v, want Skip", st)
	}
	// While the annotation is not yet visible, the reservation counts: a
	// second resnet50 must not get b/1.
	second := gpuPod("second", "", "resnet50", "4Gi", "")
	niB2 := nodeInfo(b, placed[2], gpuPod("new", "b", "resnet50", "4Gi", ""))
	st2 := framework.NewCycleState()
	p.PreFilter(ctx, st2, second, nil)
	if s, _ := p.Score(ctx, st2, second, niB2); s != (16384-3072-4096)*ratingScale/16384 {
		t.Errorf("second resnet50 on b scores %d, want GPU 0's %d (GPU 1 holds the reserved one)", s, (16384-3072-4096)*ratingScale/16384)
	}
	// Unreserve releases it.
	p.Unreserve(ctx, state, incoming, "b")
	if _, ok := p.reservationOf("new"); ok {
		t.Error("reservation kept after Unreserve")
	}
}

func TestRejections(t *testing.T) {
	ctx := context.Background()
	p := newAnnotationGPUShare(nil, placement.Placer{})
	// Malformed annotation: unresolvable, message names the annotation.
	_, st := p.PreFilter(ctx, framework.NewCycleState(), gpuPod("bad", "", "m", "lots", ""), nil)
	if st.Code() != fwk.UnschedulableAndUnresolvable || !contains(st.Message(), v1alpha1.AnnotationGPUMemory) {
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

// parseArgs decodes raw as this plugin's pluginConfig args the way
// hetsev-scheduler does (through the kube-scheduler's scheme: strict,
// defaulted, typed) and hands the result to ParseArgs, as New does.
func parseArgs(raw string) (Args, error) {
	obj, err := configtesting.DecodePluginArgs(Name, raw)
	if err != nil {
		return Args{}, err
	}
	return ParseArgs(obj)
}

// TestArgs: defaults are the paper's rules; every bad field is named, and
// unknown fields are refused rather than ignored.
func TestArgs(t *testing.T) {
	a, err := ParseArgs(nil)
	if err != nil || a.Choice() != (gpuinventory.Choice{Fit: gpuinventory.FitWorst, MaxBusyShare: 1, Consolidate: true}) || *a.InterferenceWeight != DefaultInterferenceWeight {
		t.Errorf("defaults: %+v %v", a, err)
	}
	a, err = parseArgs(`interferenceWeight: 0`)
	if err != nil || *a.InterferenceWeight != 0 {
		t.Errorf("explicit weight 0: %+v %v", a, err)
	}
	a, err = parseArgs(`consolidate: false`)
	if err != nil || a.Choice().Consolidate {
		t.Errorf("explicit consolidate false: %+v %v", a, err)
	}
	a, err = parseArgs(`maxBusyShare: 0`)
	if err != nil || a.Choice().MaxBusyShare != 0 {
		t.Errorf("explicit maxBusyShare 0 (no cap): %+v %v", a, err)
	}
	a, err = parseArgs(`{"apiVersion":"kubescheduler.config.k8s.io/v1","kind":"HetsevGPUShareArgs","antiAffinity":"Soft","fit":"BestFit"}`)
	if err != nil || a.Choice() != (gpuinventory.Choice{Fit: gpuinventory.FitBest, SoftAntiAffinity: true, MaxBusyShare: 1, Consolidate: true}) {
		t.Errorf("soft best fit: %+v %v", a, err)
	}
	for raw, want := range map[string][]string{
		`{"antiAffinity":"sometimes","fit":"FirstFit"}`: {"pluginConfig[HetsevGPUShare].args.antiAffinity", "pluginConfig[HetsevGPUShare].args.fit"},
		// A foreign apiVersion or kind, and malformed YAML, are refused by
		// the scheduler's own decoder, in its words.
		`{"apiVersion":"v1","kind":"Args"}`:                               {"decoding args for plugin HetsevGPUShare", `no kind "Args" is registered for version "v1"`},
		`{"apiVersion":"hetsev.io/v1alpha1","kind":"HetsevGPUShareArgs"}`: {"decoding args for plugin HetsevGPUShare", `version "hetsev.io/v1alpha1"`},
		`{"antiafinity":"Soft"}`:                                          {"unknown field", "antiafinity"},
		`{"interferenceWeight":1.5}`:                                      {"pluginConfig[HetsevGPUShare].args.interferenceWeight", "between 0 and 1"},
		`{"maxBusyShare":-1}`:                                             {"pluginConfig[HetsevGPUShare].args.maxBusyShare", ">= 0"},
		"fit: [":                                                          {"yaml: line", "did not find expected node content"},
	} {
		_, err := parseArgs(raw)
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: err %v does not name %s", raw, err, w)
			}
		}
	}
	if obj, err := configtesting.DecodePluginArgs(Name, `{"fit":"FirstFit"}`); err != nil {
		t.Errorf("decoding: %v", err)
	} else if _, err := New(context.Background(), obj, handle{}); err == nil {
		t.Error("New accepted invalid args")
	}
	// The scheduler hands New typed arguments; anything else is named.
	if _, err := New(context.Background(), &runtime.Unknown{Raw: []byte(`{"fit":"BestFit"}`)}, handle{}); err == nil || !strings.Contains(err.Error(), "want args of type *config.HetsevGPUShareArgs, got *runtime.Unknown") {
		t.Errorf("untyped args: err %v", err)
	}
}

// TestArgsInterferenceModel: the plugin rates with the fitted co-location
// model unless interferenceModelFile names another; a bad file is refused
// with the argument, the file and its field.
func TestArgsInterferenceModel(t *testing.T) {
	a, err := ParseArgs(nil)
	if err != nil || !reflect.DeepEqual(a.placer().Colocation, interference.FittedColocation()) {
		t.Fatalf("default: placer model %+v (%v), want interference.FittedColocation", a.placer().Colocation, err)
	}
	m := interference.FittedColocation()
	m.Sharing.MPS.Contention = 0.5
	m.Sharing.TimeSlicing.Slice = 0.0025 // the bad file below replaces it
	m.Source = "operator's A100 fit"
	data, err := yaml.Marshal(m.File())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "model.yaml")
	if err := os.WriteFile(good, data, 0o600); err != nil {
		t.Fatal(err)
	}
	a, err = parseArgs("interferenceModelFile: " + good)
	if err != nil || !reflect.DeepEqual(a.placer().Colocation, m) {
		t.Fatalf("model file: placer model %+v (%v), want %+v", a.placer().Colocation, err, m)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(strings.Replace(string(data), "sliceSeconds: 0.0025", "sliceSeconds: 0", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = parseArgs("interferenceModelFile: " + bad)
	for _, w := range []string{"pluginConfig[HetsevGPUShare].args.interferenceModelFile", bad, "timeSlicing.sliceSeconds: 0 must be > 0"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("bad model file: err %v does not name %s", err, w)
		}
	}
	absent := filepath.Join(dir, "absent.yaml")
	_, err = parseArgs("interferenceModelFile: " + absent)
	for _, w := range []string{"pluginConfig[HetsevGPUShare].args.interferenceModelFile", absent} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("absent model file: err %v does not name %s", err, w)
		}
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
		p := newAnnotationGPUShare(handle{snapshot: cache.NewSnapshot(placed, []*v1.Node{a}), client: client}, placement.Placer{Choice: c})
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
	// free); best fit scores the share of memory in use after: 11 of 16 GiB.
	if _, idx, _ := run(gpuinventory.Choice{}, gpuPod("b1", "", "bert", "1Gi", "")); idx != 0 {
		t.Errorf("worst fit chose GPU %d, want 0", idx)
	}
	if s, idx, _ := run(gpuinventory.Choice{Fit: gpuinventory.FitBest}, gpuPod("b2", "", "bert", "1Gi", "")); idx != 1 || s != 6875 {
		t.Errorf("best fit chose GPU %d with score %d, want 1 and 6875", idx, s)
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
	(&gpuShare{}).NormalizeScore(ctx, nil, nil, scores)
	if scores[0].Score != 0 || scores[1].Score != 1 || scores[2].Score != fwk.MaxNodeScore {
		t.Errorf("normalized %v, want 0, 1, %d", scores, fwk.MaxNodeScore)
	}
}

// TestPickCacheFollowsNodeChanges: the cached pick is reused while the node
// is unchanged and recomputed once a pod lands on it (the NodeInfo
// generation moves).
func TestPickCacheFollowsNodeChanges(t *testing.T) {
	ctx := context.Background()
	p := newAnnotationGPUShare(nil, placement.Placer{})
	ni := framework.NewNodeInfo()
	ni.SetNode(t4Node("a"))
	d := &demandState{demand: gpuinventory.Demand{Model: "resnet50", Scope: "default", MemoryMiB: 4096}, model: unique.Make("default/resnet50")}
	_, first, err := p.pickOn(ctx, ni, d)
	if err != nil || !first.ok || first.idx != 0 {
		t.Fatalf("empty node: %+v %v, want GPU 0", first, err)
	}
	if _, again, _ := p.pickOn(ctx, ni, d); again != first {
		t.Errorf("unchanged node: %+v, want the cached %+v", again, first)
	}
	ni.AddPod(gpuPod("r0", "a", "resnet50", "2Gi", "0"))
	if _, after, _ := p.pickOn(ctx, ni, d); !after.ok || after.idx != 1 {
		t.Errorf("after resnet50 landed on GPU 0: %+v, want GPU 1", after)
	}
	ni.AddPod(gpuPod("r1", "a", "resnet50", "2Gi", "1"))
	if _, full, _ := p.pickOn(ctx, ni, d); full.ok {
		t.Errorf("both GPUs host resnet50: %+v, want no GPU", full)
	}
}

// TestUnreserveAfterFailedBindingFreesTheGPU: a pod reserved GPU 0 and was
// assumed on the node (no annotation yet); its binding fails, the framework
// calls Unreserve and forgets the assumed pod. The GPU is counted while
// reserved and free again afterwards: the accounting stays exact.
func TestUnreserveAfterFailedBindingFreesTheGPU(t *testing.T) {
	ctx := context.Background()
	a := t4Node("a")
	x := gpuPod("x", "", "resnet50", "12Gi", "")
	client := fake.NewClientset(x)
	client.PrependReactor("create", "pods", func(act k8stesting.Action) (bool, runtime.Object, error) {
		if act.GetSubresource() == "binding" {
			return true, nil, errors.New("etcdserver: request timed out")
		}
		return false, nil, nil
	})
	p := newAnnotationGPUShare(handle{snapshot: cache.NewSnapshot(nil, []*v1.Node{a}), client: client}, placement.Placer{})
	state := framework.NewCycleState()
	p.PreFilter(ctx, state, x, nil)
	if st := p.Reserve(ctx, state, x, "a"); !st.IsSuccess() {
		t.Fatalf("Reserve: %v", st)
	}
	r, _ := p.reservationOf("x")
	if st := p.Bind(ctx, state, x, "a"); st.IsSuccess() {
		t.Fatal("Bind succeeded against a failing API server")
	}

	// While assumed, the node holds x on its reserved GPU: a 12 GiB ssd
	// fits only the other GPU.
	assumed := x.DeepCopy()
	assumed.Spec.NodeName = "a"
	ni := framework.NewNodeInfo(assumed)
	ni.SetNode(a)
	ssd := &demandState{demand: gpuinventory.Demand{Model: "ssd", MemoryMiB: 12288}, model: unique.Make("ssd")}
	if _, got, _ := p.pickOn(ctx, ni, ssd); !got.ok || got.idx == r.index {
		t.Fatalf("with x assumed on GPU %d, ssd got %+v, want the other GPU", r.index, got)
	}
	// Binding failed: Unreserve, and the framework forgets the assumed pod.
	p.Unreserve(ctx, state, x, "a")
	if err := ni.RemovePod(klog.Background(), assumed); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.reservationOf("x"); ok {
		t.Error("reservation kept after Unreserve")
	}
	if _, got, _ := p.pickOn(ctx, ni, ssd); !got.ok || got.idx != 0 {
		t.Errorf("after Unreserve ssd got %+v, want GPU 0 (both free, lower index)", got)
	}
	ni.AddPod(assumed) // the pod is retried, without a reservation and without an index
	gpus, _, _ := p.pickOn(ctx, ni, ssd)
	for _, g := range gpus {
		if g.UsedMiB != 0 {
			t.Errorf("GPU %d counts %d MiB for a pod with neither index nor reservation", g.Index, g.UsedMiB)
		}
	}
}

// TestMalformedPodsKeepTheirGPU: a bound pod whose hetsev.io/gpu-memory
// became unreadable (annotations other than gpu-index can be edited after
// binding) still holds its GPU, all of it; one whose gpu-index is
// unreadable counts on every GPU. Before gpuinventory's occupancy rule the
// plugin dropped both from the accounting and placed onto their GPUs.
func TestMalformedPodsKeepTheirGPU(t *testing.T) {
	ctx := context.Background()
	p := newAnnotationGPUShare(nil, placement.Placer{})
	ni := framework.NewNodeInfo(gpuPod("bad-mem", "a", "bert", "lots", "0"))
	ni.SetNode(t4Node("a"))
	d := &demandState{demand: gpuinventory.Demand{Model: "resnet50", Scope: "default", MemoryMiB: 4096}, model: unique.Make("default/resnet50")}
	if gpus, got, err := p.pickOn(ctx, ni, d); err != nil || !got.ok || got.idx != 1 || gpus[0].FreeMiB() > 0 {
		t.Errorf("GPU 0 held by a pod with malformed gpu-memory: picked %+v (%v), GPU 0 free %d MiB; want GPU 1", got, err, gpus[0].FreeMiB())
	}
	ni.AddPod(gpuPod("bad-idx", "a", "ssd", "14Gi", "0,1"))
	if _, got, err := p.pickOn(ctx, ni, d); err != nil || got.ok {
		t.Errorf("with a 14 GiB pod of unreadable index on every GPU: picked %+v (%v), want none", got, err)
	}
}
