package evaluate

import (
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/hetsev/hetsev/internal/sim/trace"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

// timerBursts is s seconds of 10 requests/s with a burst to 150
// requests/s in the minutes m with (m + offset) mod 10 in {5, 6}: a timer
// every 10 minutes, offset minutes into its phase at second 0.
func timerBursts(seconds, offset int) trace.Rates {
	r := make(trace.Rates, seconds)
	for i := range r {
		r[i] = 10
		if m := (i/60 + offset) % 10; m == 5 || m == 6 {
			r[i] = 150
		}
	}
	return r
}

// seasonalConfig: BERT-large (RT_max 1,200 ms) on up to 12 T4 (69.3
// requests/s each, O_i 40 s), 30 replayed minutes of timerBursts after 40
// minutes of history with the same timer: bursts at replay minutes 5, 15
// and 25. The first starts from one instance in every policy that knows
// only what it has measured in the window, and the reactive ceiling
// (ceiling.go) loses its first 40 s.
func seasonalConfig(t *testing.T, seasonal bool) Config {
	t.Helper()
	const history = 40 * 60
	rates := timerBursts(30*60, history/60)
	svc := Service{Name: "timer", Model: "bert-large", Rates: rates, History: timerBursts(history, 0), RTMaxMs: 1200}
	cfg, err := Base("seasonal", "timer", rates, t4Only(12), svc)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Policies = []string{PolicyExact}
	cfg.Knobs.SeasonalForecast = seasonal
	return cfg
}

// TestSeasonalAboveReactiveCeiling: with the seasonal forecast, learned
// from the service's history before the window, hetsev-exact has
// capacity when the first burst of the window starts and its SLO
// attainment exceeds the reactive ceiling; without it, it does not reach
// the ceiling. The report's line names the service in the first run and
// none in the second.
func TestSeasonalAboveReactiveCeiling(t *testing.T) {
	for _, c := range []struct {
		seasonal bool
		line     string
	}{
		{true, "above reactive ceiling (seasonal forecast on): hetsev-exact: timer ("},
		{false, "above reactive ceiling: hetsev-exact: none"},
	} {
		r, err := Evaluate(seasonalConfig(t, c.seasonal))
		if err != nil {
			t.Fatal(err)
		}
		p, _ := r.Policy(PolicyExact)
		att, ceiling := p.Services[0].SLOAttainment, r.ReactiveCeilings[0]
		t.Logf("seasonal %t: attainment %.4f, reactive ceiling %.4f, cost %.3f USD", c.seasonal, att, ceiling, p.CostUSD)
		if !(ceiling < 0.99) {
			t.Fatalf("reactive ceiling %.4f: the first burst should cost it its launch time", ceiling)
		}
		if above := att > ceiling; above != c.seasonal {
			t.Errorf("seasonal forecast %t: attainment %.4f, ceiling %.4f; want above the ceiling %t", c.seasonal, att, ceiling, c.seasonal)
		}
		if got := aboveCeilingLine(r); !strings.HasPrefix(got, c.line) {
			t.Errorf("seasonal forecast %t: line %q, want it to start with %q", c.seasonal, got, c.line)
		}
	}
}

// TestAboveCeilingLine works the report's line by hand: per hetsev policy,
// the services whose attainment is strictly above their ceiling, services
// without requests left out, "none" where there are none; peers are not
// listed; no line without a hetsev policy.
func TestAboveCeilingLine(t *testing.T) {
	svc := func(name string, att float64, requests int64) ServiceResult {
		return ServiceResult{Service: name, SLOAttainment: att, Requests: requests}
	}
	r := RunResult{
		Name:             "fn",
		Services:         []Service{{Name: "fn-1"}, {Name: "fn-17"}, {Name: "fn-3"}, {Name: "fn-4"}},
		ReactiveCeilings: []float64{1, 0.962, 0.9, 0.5},
		Policies: []PolicyResult{
			{Policy: PolicyKnativeKPA, Services: []ServiceResult{svc("fn-1", 1, 10), svc("fn-17", 0.999, 10), svc("fn-3", 0.95, 10), svc("fn-4", 1, 10)}},
			{Policy: PolicyExact, Services: []ServiceResult{svc("fn-1", 1, 10), svc("fn-17", 0.991, 10), svc("fn-3", 0.9, 10), svc("fn-4", 0, 0)}},
			{Policy: PolicyHeuristic, Services: []ServiceResult{svc("fn-1", 0.99, 10), svc("fn-17", 0.95, 10), svc("fn-3", 0.85, 10), svc("fn-4", 0, 0)}},
		},
	}
	want := "above reactive ceiling: hetsev-exact: fn-17 (0.9910 > ceiling 0.9620); hetsev-heuristic: none"
	if got := aboveCeilingLine(r); got != want {
		t.Errorf("line\n%q, want\n%q", got, want)
	}
	r.Targets = []float64{0.98, 0.957, 0.895, 0.495}
	var out strings.Builder
	PrintTable(&out, r)
	if !strings.Contains(out.String(), want+"\n") {
		t.Errorf("PrintTable does not print %q:\n%s", want, out.String())
	}
	r.SeasonalForecast = true
	r.Policies[2].Services[2].SLOAttainment = 0.95
	want = "above reactive ceiling (seasonal forecast on): hetsev-exact: fn-17 (0.9910 > ceiling 0.9620); hetsev-heuristic: fn-3 (0.9500 > ceiling 0.9000)"
	if got := aboveCeilingLine(r); got != want {
		t.Errorf("line\n%q, want\n%q", got, want)
	}
	r.Policies = r.Policies[:1]
	if got := aboveCeilingLine(r); got != "" {
		t.Errorf("no hetsev policy: line %q, want none", got)
	}
}

// TestSeasonalKnob: --seasonal sets Options.Seasonal; Knobs.SeasonalForecast
// and the ablation's seasonal-forecast variant reach the resolved hetsev
// policy; the zero Knobs leave it off.
func TestSeasonalKnob(t *testing.T) {
	o := DefaultOptions()
	fs := flag.NewFlagSet("evaluate", flag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--seasonal"}); err != nil || !o.Seasonal {
		t.Fatalf("--seasonal: Seasonal %t, err %v", o.Seasonal, err)
	}
	cfg := seasonalConfig(t, false)
	r, err := cfg.resolve(cfg.Services[0], heterogeneity.SolverExact)
	if err != nil {
		t.Fatal(err)
	}
	pol := r.Policy()
	DemoKnobs().ablate(&pol)
	if pol.SeasonalForecast {
		t.Errorf("DemoKnobs turned the seasonal forecast on")
	}
	k, err := ablatedKnobs(DemoKnobs(), AblationSeasonalForecast)
	if err != nil {
		t.Fatal(err)
	}
	k.ablate(&pol)
	if !pol.SeasonalForecast {
		t.Errorf("variant %s: policy %+v, want SeasonalForecast", AblationSeasonalForecast, pol)
	}
}

// TestAblationSeasonalRow: the ablation's seasonal-forecast row replays
// hetsev-exact with the seasonal forecast on; on seasonalConfig it lists
// the service above its reactive ceiling, the baseline none, and the
// table names it.
func TestAblationSeasonalRow(t *testing.T) {
	cfg := seasonalConfig(t, false)
	main, err := Evaluate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	main.judge()
	pts, err := ablation(cfg, main, []string{AblationBaseline, AblationSeasonalForecast})
	if err != nil {
		t.Fatal(err)
	}
	if len(pts[0].AboveCeiling) != 0 || len(pts[1].AboveCeiling) != 1 || !strings.HasPrefix(pts[1].AboveCeiling[0], "timer (") {
		t.Fatalf("above the ceiling: baseline %v, seasonal-forecast %v; want none and timer", pts[0].AboveCeiling, pts[1].AboveCeiling)
	}
	main.Ablation = pts
	var out strings.Builder
	PrintAblation(&out, main)
	if want := "seasonal-forecast above reactive ceiling: timer ("; !strings.Contains(out.String(), want) {
		t.Errorf("no %q in\n%s", want, out.String())
	}
}

// TestSeasonalNoHindsight: hetsev-exact with the seasonal forecast on
// seasonalConfig, and the same with every second from replay minute 3 on
// changed (no bursts; 60 requests/s), decide alike up to minute 3: the
// forecast learns from the history and the seconds already measured, not
// from the window's later seconds.
func TestSeasonalNoHindsight(t *testing.T) {
	const cut = 3 * 60
	var logs [2][]decisionRecord
	for k := range logs {
		cfg := seasonalConfig(t, true)
		if k == 1 {
			rates := append(trace.Rates{}, cfg.Rates...)
			for i := cut; i < len(rates); i++ {
				rates[i] = 60
			}
			cfg.Rates, cfg.Services[0].Rates = rates, rates
		}
		logs[k] = decisionLog(t, cfg, PolicyExact, cut)
	}
	if len(logs[0]) == 0 || len(logs[0]) != len(logs[1]) {
		t.Fatalf("%d and %d decisions up to second %d", len(logs[0]), len(logs[1]), cut)
	}
	for i, a := range logs[0] {
		if b := logs[1][i]; a.t != b.t || fmt.Sprint(a.delta) != fmt.Sprint(b.delta) {
			t.Fatalf("decision %d at second %d: %v; with the seconds after %d changed: second %d, %v", i, a.t, a.delta, cut, b.t, b.delta)
		}
	}
}
