package gpushare

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// oneGPUNode is a node with one 16 GiB GPU: memory never decides below.
func oneGPUNode(name string) *v1.Node {
	n := t4Node(name)
	n.Labels[gpuinventory.LabelGPUCount] = "1"
	return n
}

func busyPod(name, node, model, idx, share string) *v1.Pod {
	p := gpuPod(name, node, model, "1Gi", idx)
	p.Annotations[v1alpha1.AnnotationBusyShare] = share
	return p
}

// defaultPlugin is the plugin with default arguments (maxBusyShare 1).
func defaultPlugin(t *testing.T, h handle) *AnnotationGPUShare {
	t.Helper()
	a, err := ParseArgs(nil)
	if err != nil {
		t.Fatal(err)
	}
	return newAnnotationGPUShare(h, a.placer())
}

func filter(p *AnnotationGPUShare, pod *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	state := framework.NewCycleState()
	if _, st := p.PreFilter(context.Background(), state, pod, nil); !st.IsSuccess() {
		return st
	}
	return p.Filter(context.Background(), state, pod, ni)
}

// TestBusyShareCap: with the default cap (summed busy share 1 per GPU) two
// instances of busy share 0.7 cannot share a GPU, whatever their memory,
// and the reason names the busy share; two of 0.3 can. Pods without the
// annotation are outside the cap (memory decides, as before busy shares).
func TestBusyShareCap(t *testing.T) {
	n := oneGPUNode("a")
	p := defaultPlugin(t, handle{})
	if st := filter(p, busyPod("b", "", "ssd", "", "0.7"), nodeInfo(n, busyPod("a", "a", "resnet50", "0", "0.7"))); st.Code() != fwk.Unschedulable || !contains(st.Message(), "busy share") {
		t.Errorf("0.7 beside 0.7: %v, want Unschedulable naming busy share", st)
	}
	if st := filter(p, busyPod("b", "", "ssd", "", "0.3"), nodeInfo(n, busyPod("a", "a", "resnet50", "0", "0.3"))); !st.IsSuccess() {
		t.Errorf("0.3 beside 0.3: %v, want success", st)
	}
	if st := filter(p, busyPod("b", "", "ssd", "", "0.9"), nodeInfo(n, gpuPod("a", "a", "resnet50", "1Gi", "0"))); !st.IsSuccess() {
		t.Errorf("0.9 beside a pod without busy share: %v, want success (undeclared is outside the cap)", st)
	}
	if st := filter(p, gpuPod("b", "", "ssd", "1Gi", ""), nodeInfo(n, busyPod("a", "a", "resnet50", "0", "1"))); !st.IsSuccess() {
		t.Errorf("a pod without busy share beside 1: %v, want success (undeclared is outside the cap)", st)
	}
}

// TestBusyShareReservationsCount: a pod reserved on a GPU but not yet
// carrying hetsev.io/gpu-index (assumed, binding in flight) holds its busy
// share there, as it holds its memory.
func TestBusyShareReservationsCount(t *testing.T) {
	ctx := context.Background()
	n := oneGPUNode("a")
	x := busyPod("x", "", "resnet50", "", "0.7")
	p := defaultPlugin(t, handle{snapshot: cache.NewSnapshot(nil, []*v1.Node{n}), client: fake.NewClientset(x)})
	state := framework.NewCycleState()
	p.PreFilter(ctx, state, x, nil)
	if st := p.Reserve(ctx, state, x, "a"); !st.IsSuccess() {
		t.Fatalf("Reserve: %v", st)
	}
	assumed := x.DeepCopy()
	assumed.Spec.NodeName = "a"
	if st := filter(p, busyPod("y", "", "ssd", "", "0.7"), nodeInfo(n, assumed)); st.Code() != fwk.Unschedulable || !contains(st.Message(), "busy share") {
		t.Errorf("0.7 beside a reserved 0.7: %v, want Unschedulable naming busy share", st)
	}
	if st := filter(p, busyPod("z", "", "ssd", "", "0.3"), nodeInfo(n, assumed)); !st.IsSuccess() {
		t.Errorf("0.3 beside a reserved 0.7: %v, want success", st)
	}
}

// TestMalformedBusyShare: a pending pod with a malformed or out-of-range
// busy share stays Pending with a reason naming the annotation; a bound one
// counts as busy all the time.
func TestMalformedBusyShare(t *testing.T) {
	p := defaultPlugin(t, handle{})
	for _, v := range []string{"lots", "1.5", "0", "-0.2", "NaN"} {
		_, st := p.PreFilter(context.Background(), framework.NewCycleState(), busyPod("bad", "", "m", "", v), nil)
		if st.Code() != fwk.UnschedulableAndUnresolvable || !contains(st.Message(), v1alpha1.AnnotationBusyShare) {
			t.Errorf("busy share %q: %v, want UnschedulableAndUnresolvable naming %s", v, st, v1alpha1.AnnotationBusyShare)
		}
	}
	n := oneGPUNode("a")
	if st := filter(p, busyPod("b", "", "ssd", "", "0.1"), nodeInfo(n, busyPod("a", "a", "resnet50", "0", "lots"))); st.IsSuccess() {
		t.Error("0.1 beside a bound pod with a malformed busy share: success, want refused (counted as 1)")
	}
}

// TestModelWithSlash: a pod whose hetsev.io/model holds "/" stays Pending
// with a reason naming the annotation: "a/resnet50" cluster-wide would
// share an identity with namespace a's resnet50.
func TestModelWithSlash(t *testing.T) {
	p := defaultPlugin(t, handle{})
	_, st := p.PreFilter(context.Background(), framework.NewCycleState(), busyPod("bad", "", "a/resnet50", "", "0.5"), nil)
	if st.Code() != fwk.UnschedulableAndUnresolvable || !contains(st.Message(), v1alpha1.AnnotationModel) || !contains(st.Message(), `"/"`) {
		t.Errorf("model a/resnet50: %v, want UnschedulableAndUnresolvable naming %s and \"/\"", st, v1alpha1.AnnotationModel)
	}
}

// TestMaxInflation: Filter refuses a GPU where the co-location model
// predicts more latency inflation than the pod's hetsev.io/max-inflation
// allows, naming the annotation; a malformed one keeps the pod Pending.
func TestMaxInflation(t *testing.T) {
	n := oneGPUNode("a")
	p := defaultPlugin(t, handle{})
	neighbour := busyPod("a", "a", "resnet50", "0", "0.5")
	tight := busyPod("b", "", "ssd", "", "0.4")
	tight.Annotations[v1alpha1.AnnotationMaxInflation] = "1.01"
	if st := filter(p, tight, nodeInfo(n, neighbour)); st.Code() != fwk.Unschedulable || !contains(st.Message(), v1alpha1.AnnotationMaxInflation) {
		t.Errorf("max inflation 1.01 beside a neighbour busy 0.5: %v, want Unschedulable naming %s", st, v1alpha1.AnnotationMaxInflation)
	}
	generous := busyPod("c", "", "ssd", "", "0.4")
	generous.Annotations[v1alpha1.AnnotationMaxInflation] = "10"
	if st := filter(p, generous, nodeInfo(n, neighbour)); !st.IsSuccess() {
		t.Errorf("max inflation 10: %v, want success", st)
	}
	for _, v := range []string{"0.5", "fast", "+Inf"} {
		bad := busyPod("d", "", "ssd", "", "0.4")
		bad.Annotations[v1alpha1.AnnotationMaxInflation] = v
		_, st := p.PreFilter(context.Background(), framework.NewCycleState(), bad, nil)
		if st.Code() != fwk.UnschedulableAndUnresolvable || !contains(st.Message(), v1alpha1.AnnotationMaxInflation) {
			t.Errorf("max inflation %q: %v, want UnschedulableAndUnresolvable naming %s", v, st, v1alpha1.AnnotationMaxInflation)
		}
	}
}
