package evaluate

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hetsev/hetsev/internal/sim/trace"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

// ramp is a steady rise from lo to hi requests/s over seconds.
func ramp(lo, hi float64, seconds int) trace.Rates {
	r := make(trace.Rates, seconds)
	for i := range r {
		r[i] = lo + (hi-lo)*float64(i)/float64(seconds-1)
	}
	return r
}

// ablationConfig: BERT-large on up to 12 T4 (69.3 requests/s each, O_i
// 40 s), the load rising steadily from 20 to 500 requests/s over 4
// minutes: 2 requests/s per second, 80 requests/s more by the time an
// instance launched, beyond the threshold's headroom (W / 0.8 - W) while
// W < 320 requests/s, which the launch-time forecast provisions for.
func ablationConfig(t *testing.T) Config {
	t.Helper()
	cfg, err := Base("ablation", "ramp", ramp(20, 500, 240), t4Only(12), Service{Name: "b", Model: "bert-large", Share: 1, RTMaxMs: 400})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Policies = []string{PolicyExact}
	return cfg
}

// TestAblationRows: one row per variant in AblationVariants' order, the
// baseline the main run's hetsev-exact, and the table prints a RESULT
// line for each.
func TestAblationRows(t *testing.T) {
	cfg := ablationConfig(t)
	main, err := Evaluate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := ablation(cfg, main, AblationVariants)
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != len(AblationVariants) {
		t.Fatalf("%d rows, want %d (one per variant): %+v", len(pts), len(AblationVariants), pts)
	}
	exact, _ := main.Policy(PolicyExact)
	for i, p := range pts {
		if p.Variant != AblationVariants[i] {
			t.Errorf("row %d: variant %s, want %s", i, p.Variant, AblationVariants[i])
		}
		if !(p.CostUSD > 0) {
			t.Errorf("%s: cost %v USD, want > 0", p.Variant, p.CostUSD)
		}
	}
	if pts[0].CostUSD != exact.CostUSD || pts[0].ExcessMissed != exact.ExcessMissed {
		t.Errorf("baseline %.4f USD / E %.1f, want the main run's %.4f / %.1f", pts[0].CostUSD, pts[0].ExcessMissed, exact.CostUSD, exact.ExcessMissed)
	}
	if _, err := ablation(cfg, main, []string{"no-such-rule"}); err == nil || !strings.Contains(err.Error(), `"no-such-rule"`) {
		t.Errorf("unknown variant: err %v", err)
	}
	main.Ablation = pts
	var out strings.Builder
	PrintAblation(&out, main)
	for _, v := range AblationVariants {
		if want := fmt.Sprintf("RESULT ablation replay=ablation variant=%s cost_usd=", v); !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
}

// TestAblationNoForecastDecides: on the steady ramp, hetsev-exact without
// the launch-time forecast scales out on the measured rate, so its
// decisions differ from the baseline's; the baseline's switches at their
// zero values decide as a run without them.
func TestAblationNoForecastDecides(t *testing.T) {
	decisions := func(k Knobs) []string {
		cfg := ablationConfig(t)
		cfg.Knobs = k
		var out []string
		for _, d := range decisionLog(t, cfg, PolicyExact, -1) {
			if slices.ContainsFunc(d.delta, func(x int) bool { return x != 0 }) {
				out = append(out, fmt.Sprintf("%d s: %v", d.t, d.delta))
			}
		}
		return out
	}
	base := decisions(DemoKnobs())
	k, err := ablatedKnobs(DemoKnobs(), AblationNoForecast)
	if err != nil {
		t.Fatal(err)
	}
	off := decisions(k)
	if len(base) == 0 {
		t.Fatal("the baseline never scaled on the ramp")
	}
	if strings.Join(base, "; ") == strings.Join(off, "; ") {
		t.Fatalf("no-forecast decides as the baseline: %v", base)
	}
	if k, _ := ablatedKnobs(DemoKnobs(), AblationBaseline); k != DemoKnobs() {
		t.Errorf("baseline knobs %+v, want DemoKnobs %+v", k, DemoKnobs())
	}
	t.Logf("baseline: %v\nno-forecast: %v", base, off)
}

// TestKnobsAblate: the switches reach the resolved hetsev policy; without
// the cool-down the stabilization window keeps the cool-down's 300 s; the
// zero values leave the policy as the scaler resolved it.
func TestKnobsAblate(t *testing.T) {
	cfg := ablationConfig(t)
	r, err := cfg.resolve(cfg.Services[0], heterogeneity.SolverExact)
	if err != nil {
		t.Fatal(err)
	}
	pol := r.Policy()
	DemoKnobs().ablate(&pol)
	if pol != r.Policy() {
		t.Errorf("zero switches changed the policy: %+v, want %+v", pol, r.Policy())
	}
	k := DemoKnobs()
	k.NoForecast, k.NoStabilizedScaleIn, k.NoScaleInCoolDown = true, true, true
	k.ablate(&pol)
	if !pol.DisableForecast || !pol.DisableStabilizedScaleIn || pol.ScaleInCoolDown != 0 || pol.ScaleInStabilization != 300*time.Second {
		t.Errorf("ablated policy %+v: want DisableForecast, DisableStabilizedScaleIn, ScaleInCoolDown 0 and ScaleInStabilization 5m0s", pol)
	}
}
