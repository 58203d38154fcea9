package gpuinventory

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

func withBusy(p interface{ GetAnnotations() map[string]string }, share string) {
	p.GetAnnotations()[v1alpha1.AnnotationBusyShare] = share
}

// TestParseBusyShare: absent is unknown (counted as 1); a value in (0, 1]
// is read; anything else is an error that names the annotation, with the
// GPU memory still read.
func TestParseBusyShare(t *testing.T) {
	for _, tc := range []struct {
		val      string // "-": absent
		wantBusy float64
		wantErr  bool
	}{
		{"-", 1, false}, {"0.3", 0.3, false}, {"1", 1, false},
		{"0", 1, true}, {"-0.1", 1, true}, {"1.5", 1, true}, {"NaN", 1, true}, {"lots", 1, true},
	} {
		a := map[string]string{v1alpha1.AnnotationModel: "m", v1alpha1.AnnotationGPUMemory: "2Gi"}
		if tc.val != "-" {
			a[v1alpha1.AnnotationBusyShare] = tc.val
		}
		d, ok, err := ParseDemand(a)
		if !ok || d.MemoryMiB != 2048 || d.Busy() != tc.wantBusy {
			t.Errorf("%s=%q: got ok=%v %d MiB busy %v, want ok 2048 MiB busy %v", v1alpha1.AnnotationBusyShare, tc.val, ok, d.MemoryMiB, d.Busy(), tc.wantBusy)
		}
		if (err != nil) != tc.wantErr || (err != nil && !strings.Contains(err.Error(), v1alpha1.AnnotationBusyShare)) {
			t.Errorf("%s=%q: err %v, want error naming the annotation: %v", v1alpha1.AnnotationBusyShare, tc.val, err, tc.wantErr)
		}
	}
}

// TestOccupancyBusyShare: a GPU's busy share is the sum over its pods that
// declare one,
// bound (gpu-index) and reserved alike; a bound pod with a malformed busy
// share counts as 1 with its memory as declared, and is reported.
func TestOccupancyBusyShare(t *testing.T) {
	a := gpuPod("a", "n1", "resnet50", "2Gi", "0")
	withBusy(a, "0.3")
	b := gpuPod("b", "n1", "ssd", "2Gi", "-") // reserved on GPU 0, no index yet
	withBusy(b, "0.25")
	c := gpuPod("c", "n1", "bert", "2Gi", "1")
	withBusy(c, "high")
	d := gpuPod("d", "n1", "vit", "1Gi", "0") // no busy share: not in the sum, 1 in Shares
	reserved := func(uid types.UID) (string, int, bool) { return "n1", 0, uid == "b" }
	o := occupancy(t, t4("n1"), []*v1.Pod{a, b, c, d}, reserved)
	if got := o.GPUs[0].BusyShare; got < 0.55-1e-9 || got > 0.55+1e-9 {
		t.Errorf("GPU 0 busy share %v, want 0.55 (0.3 bound + 0.25 reserved)", got)
	}
	if sh := o.GPUs[0].Shares; len(sh) != 3 || sh[2] != (InstanceShare{Model: "vit", Scope: "default", BusyShare: 1}) {
		t.Errorf("GPU 0 instance shares %+v, want 3, the undeclared vit at 1", sh)
	}
	if got := o.GPUs[1]; got.BusyShare != 1 || got.UsedMiB != 2048 {
		t.Errorf("GPU 1 (malformed busy share): busy %v, %d MiB used; want busy 1 and 2048 MiB", got.BusyShare, got.UsedMiB)
	}
	if len(o.Issues) != 1 || o.Issues[0].Counted != CountedBusyAllTheTime || !strings.Contains(o.Issues[0].Err.Error(), v1alpha1.AnnotationBusyShare) {
		t.Errorf("issues %+v, want one for pod c counted %q naming %s", o.Issues, CountedBusyAllTheTime, v1alpha1.AnnotationBusyShare)
	}
}

// TestFitsBusyShareCap: under a cap of 1, two instances of busy share
// 0.7 cannot share a GPU, two of 0.3 can; with no cap (0) memory decides.
func TestFitsBusyShareCap(t *testing.T) {
	gpus, _ := Account(NodeGPUs{Count: 1, MemoryMiB: 16384}, []Placement{{Index: 0, Demand: Demand{Model: "a", MemoryMiB: 1024, BusyShare: 0.7}}})
	if gpus[0].FitsBusyShare(Demand{Model: "b", MemoryMiB: 1024, BusyShare: 0.7}, 1) {
		t.Error("0.7 + 0.7 fits under cap 1")
	}
	if !gpus[0].FitsBusyShare(Demand{Model: "b", MemoryMiB: 1024, BusyShare: 0.7}, 0) {
		t.Error("0.7 + 0.7 does not fit without a cap")
	}
	gpus, _ = Account(NodeGPUs{Count: 1, MemoryMiB: 16384}, []Placement{{Index: 0, Demand: Demand{Model: "a", MemoryMiB: 1024, BusyShare: 0.3}}})
	if !gpus[0].FitsBusyShare(Demand{Model: "b", MemoryMiB: 1024, BusyShare: 0.3}, 1) {
		t.Error("0.3 + 0.3 does not fit under cap 1")
	}
}

// TestMaxInflationAnnotation: hetsev.io/max-inflation is read into Demand
// and recorded per instance; a malformed one on a bound pod is reported and
// counted without a limit, its busy share kept.
func TestMaxInflationAnnotation(t *testing.T) {
	a := gpuPod("a", "n1", "resnet50", "2Gi", "0")
	withBusy(a, "0.3")
	a.Annotations[v1alpha1.AnnotationMaxInflation] = "1.5"
	b := gpuPod("b", "n1", "ssd", "2Gi", "1")
	withBusy(b, "0.4")
	b.Annotations[v1alpha1.AnnotationMaxInflation] = "0.9"
	o := occupancy(t, t4("n1"), []*v1.Pod{a, b}, nil)
	if sh := o.GPUs[0].Shares; len(sh) != 1 || sh[0].MaxInflation != 1.5 {
		t.Errorf("GPU 0 shares %+v, want resnet50 with max inflation 1.5", sh)
	}
	if sh := o.GPUs[1].Shares; len(sh) != 1 || sh[0].MaxInflation != 0 || sh[0].BusyShare != 0.4 || o.GPUs[1].BusyShare != 0.4 {
		t.Errorf("GPU 1 shares %+v (sum %v), want ssd busy 0.4 without a limit", sh, o.GPUs[1].BusyShare)
	}
	if len(o.Issues) != 1 || o.Issues[0].Counted != CountedNoInflationLimit || !strings.Contains(o.Issues[0].Err.Error(), v1alpha1.AnnotationMaxInflation) {
		t.Errorf("issues %+v, want one for pod b counted %q", o.Issues, CountedNoInflationLimit)
	}
}
