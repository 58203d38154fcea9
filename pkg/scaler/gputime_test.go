package scaler

import (
	"context"
	"fmt"
	"k8s.io/apimachinery/pkg/types"
	"math"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/interference"
	"github.com/hetsev/hetsev/pkg/placement"
)

// TestTemplateDeclaresBusyShare: the scaler's pod templates declare the
// busy share an instance keeps at the service's target load and the
// inflation its SLO allows. ResNet-50 on a T4 (T_i 363 requests/s, L_i
// 22.41 ms) is busy min(1, 0.8 x 363 x 0.02241) = 1 at the threshold and
// allows 400 / (2 x 22.41) = 8.92; with spec.scaling.busyShare 0.3 it
// declares 0.3 and is counted at 0.3 / 0.02241 = 13.39 requests/s, the
// rate that keeps it busy 30 % of the time.
func TestTemplateDeclaresBusyShare(t *testing.T) {
	for _, c := range []struct {
		busyShare        float64
		share, inflation string
		throughput       float64
	}{
		{0, "1", "8.92", 363},
		{0.3, "0.3", "8.92", 0.3 / 0.02241},
	} {
		ms := resnet()
		ms.Spec.Scaling.BusyShare = c.busyShare
		s, err := validate(ms, defaultCatalog(t), DefaultDefaults)
		if err != nil {
			t.Fatal(err)
		}
		a := desiredDeployment(s, s.types[0], 1).Spec.Template.Annotations
		if a[v1alpha1.AnnotationBusyShare] != c.share || a[v1alpha1.AnnotationMaxInflation] != c.inflation {
			t.Errorf("busyShare %g: template declares busy share %q, max inflation %q; want %q, %q", c.busyShare, a[v1alpha1.AnnotationBusyShare], a[v1alpha1.AnnotationMaxInflation], c.share, c.inflation)
		}
		d, ok, err := gpuinventory.DemandOf(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ms.Namespace, Annotations: a}})
		if !ok || err != nil || d != s.demand(s.types[0]) {
			t.Errorf("busyShare %g: a pod of the template reads %+v (%v), want the demand %+v", c.busyShare, d, err, s.demand(s.types[0]))
		}
		if got := s.typeState(0, 1, 1, 0, 1).ThroughputRPS; math.Abs(got-c.throughput) > 1e-9 {
			t.Errorf("busyShare %g: T_i counted %.4f requests/s, want %.4f", c.busyShare, got, c.throughput)
		}
	}
	ms := resnet()
	ms.Spec.Scaling.BusyShare = 1.5
	if _, err := validate(ms, defaultCatalog(t), DefaultDefaults); err == nil {
		t.Error("spec.scaling.busyShare 1.5 accepted, want an error naming the field")
	}
}

// TestFreeSlotsHonourBusyShareCap: on eight T4s, three hosting resnet50
// and one hosting a neighbour busy 0.9, an instance declaring busy share 1
// fits the four idle GPUs under the cap 1, and five without a cap.
func TestFreeSlotsHonourBusyShareCap(t *testing.T) {
	nodes := []*v1.Node{node("a", 8, 16384, "64")}
	var pods []*v1.Pod
	for i := range 3 {
		pods = append(pods, pod(fmt.Sprintf("r%d", i), "a", "resnet50", "2Gi", fmt.Sprint(i), "2"))
	}
	ssd := pod("ssd", "a", "ssd", "3Gi", "3", "2")
	ssd.Annotations[v1alpha1.AnnotationBusyShare] = "0.9"
	pods = append(pods, ssd)
	d := gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048, BusyShare: 1}
	for _, c := range []struct {
		cap  float64
		want int
	}{{1, 4}, {0, 5}} {
		if got := capacityOf(nodes, pods, types.NamespacedName{Name: "resnet50"}, "Tesla-T4", d, placement.Placer{Choice: gpuinventory.Choice{MaxBusyShare: c.cap}}, placement.Placer{}, nil, false, resource.MustParse("2"), resource.Quantity{}, nil).slots; got != c.want {
			t.Errorf("cap %g: %d free slots, want %d", c.cap, got, c.want)
		}
	}
}

// TestScalerCountsSharedInstancesAtTheirThroughput: three T4 instances of
// resnet50 carry 762 requests/s, saturation 0.7 of their solo 1,089, below
// the threshold 0.8. Alone on their GPUs they hold. Each beside a
// neighbour busy 0.9 of the time, a time-sliced GPU stretches their batches
// by about 1.9 (the fitted model; the H100 measurements), so they serve
// about half as much and the scaler must scale out (counting T_i as if
// alone, it would hold).
func TestScalerCountsSharedThroughput(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(map[bool]string{false: "alone", true: "shared"}[shared], func(t *testing.T) {
			r, c, m, req, _ := partialBed(t)
			r.Colocation, r.GPUSharing = interference.FittedColocation(), interference.SharingTimeSlicing
			for i := range 3 {
				m.rps[fmt.Sprintf("%s-t4-%d", req.Name, i)] = 254
				if !shared {
					continue
				}
				nb := pod(fmt.Sprintf("ssd-%d", i), "t4-node", "ssd", "3Gi", fmt.Sprint(i), "1")
				nb.Namespace = req.Namespace
				nb.Annotations[v1alpha1.AnnotationBusyShare] = "0.9"
				if err := c.Create(context.Background(), nb); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := r.Reconcile(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			ms := &v1alpha1.ModelService{}
			if err := c.Get(context.Background(), req.NamespacedName, ms); err != nil {
				t.Fatal(err)
			}
			got := t4Replicas(t, c, req)
			if shared && got <= 3 {
				t.Errorf("T4 replicas %d with every instance beside a neighbour busy 0.9, want > 3 (last decision %+v)", got, ms.Status.LastDecision)
			}
			if !shared && got != 3 {
				t.Errorf("T4 replicas %d with every instance alone at saturation 0.7, want 3 (last decision %+v)", got, ms.Status.LastDecision)
			}
		})
	}
}

// TestMovableReplicasAreAloneAndFitAGPUInUse: on four T4s, light
// ResNet-50 replicas (busy share 0.25) are r0, Ready and alone on GPU 0;
// r1, alone on GPU 2 but not Ready; r2 on GPU 3 beside a BERT-large.
// GPU 1 hosts an SSD. r0 is movable while the SSD declares 0.5 (0.5 +
// 0.25 <= 1 on GPU 1); at 0.8 no GPU in use admits it (GPU 1 over the
// cap, GPUs 2 and 3 host ResNet-50 already). A Ready replica on a GPU
// shared with another (r2) never counts: moving it empties nothing.
func TestMovableReplicasAreAloneAndFitAGPUInUse(t *testing.T) {
	d := gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048, BusyShare: 0.25}
	light := func(name, gpu string, ready bool) *v1.Pod {
		p := pod(name, "a", "resnet50", "2Gi", gpu, "2")
		p.Labels = map[string]string{v1alpha1.LabelModelService: "resnet50"}
		p.Annotations[v1alpha1.AnnotationBusyShare] = "0.25"
		status := v1.ConditionFalse
		if ready {
			status = v1.ConditionTrue
		}
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: status}}
		return p
	}
	other := func(name, model, gpu, busy string) *v1.Pod {
		p := pod(name, "a", model, "3Gi", gpu, "2")
		p.Annotations[v1alpha1.AnnotationBusyShare] = busy
		return p
	}
	adm := placement.Placer{Choice: gpuinventory.Choice{MaxBusyShare: 1, Consolidate: true}}
	for _, c := range []struct {
		ssd  string
		want []string
	}{
		{"0.5", []string{"r0"}},
		{"0.8", nil},
	} {
		pods := []*v1.Pod{light("r0", "0", true), light("r1", "2", false), light("r2", "3", true),
			other("ssd", "ssd", "1", c.ssd), other("bert", "bert-large", "3", "0.5")}
		got := namesIn(capacityOf([]*v1.Node{node("a", 4, 16384, "64")}, pods, types.NamespacedName{Name: "resnet50"}, "Tesla-T4", d, adm, adm, nil, false, resource.MustParse("2"), resource.Quantity{}, nil).movablePods(), "")
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("SSD busy %s: movable %v, want %v", c.ssd, got, c.want)
		}
		// The same pods are another namespace's ModelService of the same
		// name: none of them is this one's to move.
		if got := namesIn(capacityOf([]*v1.Node{node("a", 4, 16384, "64")}, pods, types.NamespacedName{Namespace: "team-b", Name: "resnet50"}, "Tesla-T4", d, adm, adm, nil, false, resource.MustParse("2"), resource.Quantity{}, nil).movablePods(), ""); len(got) != 0 {
			t.Errorf("SSD busy %s: namespace team-b's resnet50 may move %v, pods of namespace %q", c.ssd, got, "")
		}
	}
}
