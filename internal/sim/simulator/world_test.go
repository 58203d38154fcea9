package simulator

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

func t4() *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "t4-0", Labels: map[string]string{
		gpuinventory.LabelGPUProduct: "Tesla-T4", gpuinventory.LabelGPUCount: "2", gpuinventory.LabelGPUMemory: "16384",
	}}}
}

func serverPod(name, ip, model, mem, idx string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name),
			Labels:      map[string]string{v1alpha1.LabelModelService: model},
			Annotations: map[string]string{v1alpha1.AnnotationModel: model, v1alpha1.AnnotationGPUMemory: mem, v1alpha1.AnnotationGPUIndex: idx}},
		Spec:   v1.PodSpec{NodeName: "t4-0"},
		Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: ip},
	}
}

var resnetT4 = Service{Namespace: "default", Name: "resnet50", Model: "resnet50", Share: 1, RTMaxMs: 400, BatchSize: 8, DeadlineAware: true,
	PerProduct: map[string]InstanceProfile{"Tesla-T4": {GPUType: "T4", LatencyMs: 22.41, GPUMemoryMiB: 2048}}}

func newWorld(t *testing.T, rates []float64, pods ...*v1.Pod) *World {
	t.Helper()
	objs := []runtime.Object{t4()}
	for _, p := range pods {
		objs = append(objs, p)
	}
	w, err := New(fake.NewClientset(objs...), Config{Services: []Service{resnetT4}, Rates: rates, Factor: 1, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	w.SyncPods()
	return w
}

// TestAccounting: 100 requests/s for 20 s to one T4 instance (capacity
// 8/22.41 ms = 357 requests/s) all meet the 400 ms SLO; the GPU hosting it
// is billed for the 20 s; nothing is co-located or over-committed.
func TestAccounting(t *testing.T) {
	w := newWorld(t, constant(20, 100), serverPod("r1", "127.1.250.2", "resnet50", "2Gi", "0"))
	for s := 1.0; s <= 20; s++ {
		w.step(s)
	}
	tot := w.Totals()
	st := tot.Services["resnet50"]
	if math.Abs(float64(st.Offered)-2000) > 150 || st.Attainment() != 1 || st.Failed != 0 {
		t.Errorf("offered %d (want ~2000), attainment %.4f, failed %d", st.Offered, st.Attainment(), st.Failed)
	}
	if tot.GPUSeconds["T4"] != 20 || tot.IdenticalModelColocations != 0 || tot.GPUMemoryOvercommits != 0 {
		t.Errorf("totals %+v", tot)
	}
}

// TestOverloadShedsAndCountsPlacementFaults: 1000 requests/s is ~2.8x one
// T4's capacity. The deadline-aware queue sheds the excess: about 1-357/1000
// of requests are rejected, and those served still meet RT_max. Two
// resnet50 pods on GPU 0 with 10 GiB each are an identical-model
// co-location and a GPU memory over-commit, which the accounting reports.
func TestOverloadShedsAndCountsPlacementFaults(t *testing.T) {
	w := newWorld(t, constant(10, 1000),
		serverPod("r1", "127.1.250.3", "resnet50", "10Gi", "0"),
		serverPod("r2", "127.1.250.4", "resnet50", "10Gi", "0"))
	for s := 1.0; s <= 10; s++ {
		w.step(s)
	}
	tot := w.Totals()
	st := tot.Services["resnet50"]
	if st.Completed != st.WithinSLO {
		t.Errorf("%d served late: deadline-aware servers should reject instead", st.Completed-st.WithinSLO)
	}
	if st.Failed == 0 {
		t.Error("no request shed under 2.8x overload")
	}
	if tot.IdenticalModelColocations == 0 || tot.GPUMemoryOvercommits == 0 {
		t.Errorf("co-locations %d, over-commits %d; want both > 0", tot.IdenticalModelColocations, tot.GPUMemoryOvercommits)
	}
}

func constant(n int, rate float64) []float64 {
	r := make([]float64, n)
	for i := range r {
		r[i] = rate
	}
	return r
}

// TestColocationsCountIdentities: the co-location audit counts as the
// scheduler's anti-affinity rule does, by model identity. resnet50 of
// namespace default and resnet50 of namespace team-b on one GPU are two
// identities, no co-location; the same pair declared cluster-wide
// (hetsev.io/model-scope=cluster) is one identity twice, a co-location.
func TestColocationsCountIdentities(t *testing.T) {
	teamB := resnetT4
	teamB.Namespace, teamB.Name = "team-b", "resnet50-b"
	a, b := resnetT4, teamB
	a.Share, b.Share = 0.5, 0.5
	for _, c := range []struct {
		name    string
		cluster bool
		colocs  bool
	}{{"namespace scope", false, false}, {"cluster scope", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			r1 := serverPod("r1", "127.1.250.5", "resnet50", "2Gi", "0")
			r2 := serverPod("r2", "127.1.250.6", "resnet50", "2Gi", "0")
			r2.Namespace, r2.Labels[v1alpha1.LabelModelService] = "team-b", "resnet50-b"
			if c.cluster {
				r1.Annotations[v1alpha1.AnnotationModelScope] = v1alpha1.ModelScopeClusterValue
				r2.Annotations[v1alpha1.AnnotationModelScope] = v1alpha1.ModelScopeClusterValue
			}
			w, err := New(fake.NewClientset(t4(), r1, r2), Config{Services: []Service{a, b}, Rates: constant(5, 10), Factor: 1, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(w.Close)
			w.SyncPods()
			if n := w.Instances("resnet50") + w.Instances("resnet50-b"); n != 2 {
				t.Fatalf("%d instances, want 2", n)
			}
			for s := 1.0; s <= 5; s++ {
				w.step(s)
			}
			if got := w.Totals().IdenticalModelColocations; (got > 0) != c.colocs {
				t.Errorf("identical-model co-locations %d, want > 0: %v", got, c.colocs)
			}
		})
	}
}

// Two ModelServices of one name in two namespaces would share their load,
// stats and totals, which the simulator keeps by name: New refuses them
// with both names, and builds nothing.
func TestNewRejectsServicesSharingAName(t *testing.T) {
	teamB := resnetT4
	teamB.Namespace = "team-b"
	w, err := New(fake.NewClientset(t4()), Config{Services: []Service{resnetT4, teamB}, Rates: constant(5, 10), Factor: 1, Seed: 3})
	if err == nil {
		w.Close()
		t.Fatal("New accepted default/resnet50 and team-b/resnet50, want an error")
	}
	for _, want := range []string{"default/resnet50", "team-b/resnet50"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}
