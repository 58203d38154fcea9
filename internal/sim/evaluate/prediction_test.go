package evaluate

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

// TestInflationPredictionSummary: quantiles by nearest rank, the signed
// bias and the under-predicted share; nil without samples.
func TestInflationPredictionSummary(t *testing.T) {
	if inflationPrediction(nil) != nil {
		t.Error("no samples: want nil")
	}
	got := *inflationPrediction([]float64{2, 0.5, 1.5, 1})
	want := InflationPrediction{Samples: 4, Median: 1.5, P5: 0.5, P95: 2, MeanBias: 0.25, UnderPredicted: 0.25}
	if got != want {
		t.Errorf("summary %+v, want %+v", got, want)
	}
}

// TestReplayChecksColocationPrediction: the two idle services of
// TestFlavorsPackIdleServicesAndReportILPCost share a T4 in light
// flavors. The placer predicts an inflation above 1 at their declared
// busy shares (0.1 and 0.25) while the replayed servers, idle, run at 1:
// every sample over-predicts, and the report prints the check. On whole
// GPUs nothing is shared, and a peer's packing has no prediction to
// check.
func TestReplayChecksColocationPrediction(t *testing.T) {
	rates := constant(0, 3600)
	light := runFlavors(t, heterogeneity.DefaultFlavors, rates, t4Only(2), DemoServices()...)
	ip := light.Policies[0].InflationPrediction
	if ip == nil || ip.Samples == 0 {
		t.Fatalf("flavors: no co-location check (%+v), want samples of the shared T4", ip)
	}
	if ip.UnderPredicted != 0 || !(ip.P5 > 1) || !(ip.MeanBias > 0) {
		t.Errorf("idle tenants: check %+v, want every ratio above 1 (predicted > replayed 1)", *ip)
	}
	var out bytes.Buffer
	PrintTable(&out, light)
	if want := "co-location prediction (predicted at declared busy shares / replayed at measured ones, instances on shared GPUs): hetsev-exact median "; !strings.Contains(out.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, out.String())
	}
	whole := runFlavors(t, nil, rates, t4Only(2), DemoServices()...)
	if ip := whole.Policies[0].InflationPrediction; ip != nil {
		t.Errorf("whole GPUs: check %+v, want none (no GPU shared)", *ip)
	}
	// kai-fraction-hpa packs the two by GPU memory onto one T4, with the
	// co-location model in its placer but no busy share declared: no check.
	if ip := run(t, rates, t4Only(2), PolicyKAIFraction, DemoServices()...).InflationPrediction; ip != nil {
		t.Errorf("kai-fraction-hpa: check %+v, want none (a peer)", *ip)
	}
}
