package calibration

import (
	"math"
	"strings"
	"testing"

	"github.com/hetsev/hetsev/pkg/interference"
)

// An MPS serving file with one pair of ResNet-50 servers.
const servingMPSPair = `{"dur_s": 2, "graph": true, "mps": true, "gpu": "test",
 "servers": {"resnet50#0": {"batch_latency_ms": {"1": 1.0, "2": 1.2}, "max_batch": 2},
             "resnet50#1": {"batch_latency_ms": {"1": 1.0, "2": 1.2}, "max_batch": 2}},
 "scenarios": [{"label": "pair", "members": [
   {"server": "resnet50#0", "rate_rps": 400, "lat_ms_p50": 1.5, "lat_ms_p98": 3.0, "busy_share": 0.5, "overrun_s": 0},
   {"server": "resnet50#1", "rate_rps": 400, "lat_ms_p50": 1.5, "lat_ms_p98": 3.0, "busy_share": 0.5, "overrun_s": 0}]}]}`

// mpsTwoPairs with its "harsh" pair of ResNet-50s (γ = 2) run by SSD300s
// instead: a co-location file where the ResNet-50 pair pins γ at 0.5 and
// the SSD300 pair at 2.
var mpsResNetAndSSDPairs = strings.Replace(strings.Replace(mpsTwoPairs,
	`"worker": "resnet50#0", "lat_ms_mean": 3.0`, `"worker": "ssd300-vgg16#0", "lat_ms_mean": 3.0`, 1),
	`"worker": "resnet50#1", "lat_ms_mean": 3.0`, `"worker": "ssd300-vgg16#1", "lat_ms_mean": 3.0`, 1)

const ssdSolo = `{"label": "solo ssd", "members": [{"worker": "ssd300-vgg16#0", "lat_ms_mean": 1.0, "busy_share": 1.0}]},
 {"label": "mild"`

// TestCrossValidateServingLeavesTheModelsOut: the serving pair of
// ResNet-50s is simulated held out with the model refitted without the
// co-location pair of ResNet-50s, i.e. to the SSD300 pair alone (γ = 2),
// not with the model fitted to both (γ = 0.5); with no co-located scenario
// of other models to fit to, it is an error naming the scenario.
func TestCrossValidateServingLeavesTheModelsOut(t *testing.T) {
	occ := interference.H100Occupancy()
	f, err := ParseServing("pair.json", strings.NewReader(servingMPSPair), occ)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseColocation("pairs.json", strings.NewReader(strings.Replace(mpsResNetAndSSDPairs, `{"label": "mild"`, ssdSolo, 1)), occ)
	if err != nil {
		t.Fatal(err)
	}
	opt := SimOptions{Runs: 2, Seed: 1, StepS: 1}
	col := interference.FittedColocation()
	held, err := CrossValidateServing(f, c, col, opt, FitStart())
	if err != nil {
		t.Fatal(err)
	}
	// What the held-out simulation must be: the model Fit gives without the
	// co-location pair of ResNet-50s (scenario 2; γ = 2 from the SSD300
	// pair), not the one it gives with it (γ = 0.5).
	with := func(train *ColocationFile) []ServingPrediction {
		res, err := Fit([]*ColocationFile{train}, FitStart())
		if err != nil {
			t.Fatal(err)
		}
		m := col
		m.Sharing, m.Occupancy = res.Params.Sharing, res.Params.OccupancyTable()
		ps, err := PredictServing(f, m, opt)
		if err != nil {
			t.Fatal(err)
		}
		return ps
	}
	if c.Scenarios[2].Label != "mild" {
		t.Fatalf("scenario 2 is %q, want the ResNet-50 pair", c.Scenarios[2].Label)
	}
	want, leak := with(withoutScenario(c, 2)), with(c)
	if len(held) != 2 || len(want) != 2 {
		t.Fatalf("%d held-out members, %d expected; want 2", len(held), len(want))
	}
	for i, h := range held {
		if math.Abs(h.PredictedP98-want[i].PredictedP98) > 0.01*want[i].PredictedP98 || math.Abs(want[i].PredictedP98-leak[i].PredictedP98) < 0.1*want[i].PredictedP98 {
			t.Errorf("%s held out: p98 %.3f ms, want %.3f (fitted without the ResNet-50 pair), not %.3f (fitted with it)",
				h.Server, h.PredictedP98, want[i].PredictedP98, leak[i].PredictedP98)
		}
	}
	only, err := ParseColocation("resnet-only.json", strings.NewReader(mpsTwoPairs), occ)
	if err != nil {
		t.Fatal(err)
	}
	_, err = CrossValidateServing(f, only, col, opt, FitStart())
	for _, w := range []string{"pair.json", `scenario "pair"`, "resnet-only.json", "resnet50+resnet50", "none left to fit to"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("only ResNet-50 pairs to fit to: error %v, want one saying %q", err, w)
		}
	}
}

// TestSplitCoLocatedSeparatesSoloMembers: the members of a scenario with
// one server are solo, those of a pair co-located, so the report can say
// which part of the bias the co-location model carries.
func TestSplitCoLocatedSeparatesSoloMembers(t *testing.T) {
	occ := interference.H100Occupancy()
	withSolo := strings.Replace(servingMPSPair, `"scenarios": [`, `"scenarios": [{"label": "solo", "members": [
   {"server": "resnet50#0", "rate_rps": 400, "lat_ms_p50": 1.2, "lat_ms_p98": 2.0, "busy_share": 0.3, "overrun_s": 0}]},`, 1)
	f, err := ParseServing("solo-and-pair.json", strings.NewReader(withSolo), occ)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := PredictServing(f, interference.FittedColocation(), SimOptions{Runs: 1, Seed: 1, StepS: 1})
	if err != nil {
		t.Fatal(err)
	}
	solo, shared := SplitCoLocated(ps)
	if len(solo) != 1 || solo[0].Scenario != "solo" || len(shared) != 2 || shared[0].Scenario != "pair" || shared[1].Scenario != "pair" {
		t.Fatalf("solo %v, co-located %v; want the solo scenario's one member alone and the pair's two together", solo, shared)
	}
}
