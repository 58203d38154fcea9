package evaluate

import (
	"strings"
	"testing"
)

// TestSweep: ResNet-50 on T4s at a steady 1,000 requests/s for 20
// minutes. At threshold 0.8 every service already runs there, so the
// sweep reuses the main run's result; at 0.5 the same policy plans 1.6x
// the headroom, ceil(1000 / (0.5 x 363)) = 6 T4s against ceil(1000 /
// (0.8 x 363)) = 4, and costs more.
func TestSweep(t *testing.T) {
	cfg, err := Base("sweep", "t", constant(1000, 1200), t4Only(8), Service{Name: "a", Model: "resnet50", Share: 1, RTMaxMs: 400})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Policies = []string{PolicyHPABestType, PolicyBound}
	main, err := Evaluate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := sweep(cfg, main, []float64{0.8, 0.5}, []string{PolicyHPABestType})
	if err != nil {
		t.Fatal(err)
	}
	hpa, _ := main.Policy(PolicyHPABestType)
	if len(pts) != 2 || pts[0].Threshold != 0.8 || pts[0].CostUSD != hpa.CostUSD || pts[0].Qualifies != hpa.Qualifies {
		t.Fatalf("points %+v; want the main run's %.4f USD at 0.8 first", pts, hpa.CostUSD)
	}
	// 6 T4s against 4 for the measured 20 minutes, launches aside.
	if r := pts[1].CostUSD / pts[0].CostUSD; r < 1.3 || r > 1.6 {
		t.Errorf("cost at 0.5 / at 0.8 = %.3f (%.4f / %.4f USD), want about 6/4", r, pts[1].CostUSD, pts[0].CostUSD)
	}
	var out strings.Builder
	main.Pareto = pts
	PrintPareto(&out, main)
	if !strings.Contains(out.String(), "0.5: ") || !strings.Contains(out.String(), PolicyHPABestType) {
		t.Errorf("table:\n%s", out.String())
	}
}

func TestParseThresholds(t *testing.T) {
	if got, err := ParseThresholds("0.6, 0.9"); err != nil || len(got) != 2 || got[1] != 0.9 {
		t.Errorf("ParseThresholds = %v, %v", got, err)
	}
	if got, err := ParseThresholds(""); err != nil || got != nil {
		t.Errorf("empty: %v, %v", got, err)
	}
	for in, want := range map[string]string{
		"0.6,1.5": `--sweep-thresholds: "1.5": want a saturation threshold in (0, 1]`,
		"0.6,x":   `--sweep-thresholds: "x": want a saturation threshold in (0, 1]`,
		"0.7,0.7": "--sweep-thresholds: 0.7 repeated",
	} {
		if _, err := ParseThresholds(in); err == nil || err.Error() != want {
			t.Errorf("%q: err %v, want %s", in, err, want)
		}
	}
}

// TestSweepHoldsHetsevAtEachThreshold: with the thresholds hetsev derives
// from the SLO model (0.96 for ResNet-50 here) in the main run, the
// sweep's points still run hetsev at each point's threshold: at 0.5 it
// plans more headroom and costs more than at 0.8.
func TestSweepHoldsHetsevAtEachThreshold(t *testing.T) {
	cfg, err := Base("sweep", "t", constant(1000, 1200), t4Only(8), Service{Name: "a", Model: "resnet50", Share: 1, RTMaxMs: 400})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Policies = []string{PolicyExact, PolicyBound}
	cfg.Knobs.ModelThresholds = true
	main, err := Evaluate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := sweep(cfg, main, []float64{0.8, 0.5}, []string{PolicyExact})
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 2 || !(pts[1].CostUSD > 1.2*pts[0].CostUSD) {
		t.Errorf("hetsev-exact's points %+v: want the cost at 0.5 well above the cost at 0.8", pts)
	}
	if ex, _ := main.Policy(PolicyExact); len(pts) == 2 && pts[0].CostUSD == ex.CostUSD {
		t.Errorf("the point at 0.8 reuses the main run's %.4f USD, which ran at the model's threshold", ex.CostUSD)
	}
}
