package evaluate

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/hetsev/hetsev/internal/sim/trace"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

// hindsightWindow is a slice of the Azure Functions trace for
// TestNoHindsight: its first Minutes minutes, History of them history, the
// 16 busiest functions at scale 2, perturbed from replay minute Cut on.
type hindsightWindow struct{ History, Cut, Minutes int }

// hindsightPair is the replay of win's slice of full and the same with
// every minute from replay minute win.Cut on perturbed (counts x3 plus 7),
// and the cut, in replay seconds. It fails t unless the two have the
// same services (names, models, SLOs, busy shares, histories), the same
// rates before the cut, the same cluster (FunctionCluster, from the
// history's peaks) and the same scale factor FunctionScale would choose
// (from the history's means; the replays themselves run at a set scale of
// 2, which keeps them short): what the workload gives a policy comes from
// the history.
func hindsightPair(t *testing.T, full trace.Functions, win hindsightWindow) (orig, pert Config, cut int) {
	t.Helper()
	w := FunctionWorkload{Services: 16, Scale: 2, HistoryMinutes: win.History}
	slice := func(perturb bool) trace.Functions {
		fs := full
		fs.Minutes = win.Minutes
		fs.Functions = make([]trace.Function, len(full.Functions))
		for i, f := range full.Functions {
			f.Counts = slices.Clone(f.Counts[:win.Minutes])
			if perturb {
				for m := win.History + win.Cut; m < win.Minutes; m++ {
					f.Counts[m] = 3*f.Counts[m] + 7
				}
			}
			fs.Functions[i] = f
		}
		return fs
	}
	base, err := Base("hindsight", "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	build := func(perturb bool) Config {
		c, err := functionsConfig("hindsight", slice(perturb), w, base)
		if err != nil {
			t.Fatal(err)
		}
		c.logDecisions = true
		return c
	}
	orig, pert = build(false), build(true)
	var scales [2]float64
	for k, perturb := range []bool{false, true} {
		auto := w
		auto.Scale = 0
		if _, _, scales[k], _, err = FunctionServices(slice(perturb), auto, base.Profiles, base.Catalog); err != nil {
			t.Fatal(err)
		}
	}
	if scales[0] != scales[1] {
		t.Fatalf("scale factor %v, %v with the seconds after the cut perturbed", scales[0], scales[1])
	}
	if !reflect.DeepEqual(orig.Cluster, pert.Cluster) {
		t.Fatalf("cluster %+v, %+v with the seconds after the cut perturbed", orig.Cluster, pert.Cluster)
	}
	cut = 60 * win.Cut
	if orig.Rates[cut-1] != pert.Rates[cut-1] || orig.Rates[cut] == pert.Rates[cut] {
		t.Fatalf("perturbation does not start at second %d", cut)
	}
	if len(orig.Services) != len(pert.Services) {
		t.Fatalf("%d services, %d with the seconds after %d perturbed", len(orig.Services), len(pert.Services), cut)
	}
	for i, a := range orig.Services {
		b := pert.Services[i]
		if !slices.Equal(a.History, b.History) {
			t.Fatalf("service %s: its history changes with the seconds after %d", a.Name, cut)
		}
		if !slices.Equal(a.Rates[:cut], b.Rates[:cut]) {
			t.Fatalf("service %s: its rates before second %d change with the seconds after it", a.Name, cut)
		}
		a.Rates, a.History, b.Rates, b.History = nil, nil, nil, nil
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("service %d changes with the seconds after %d:\n%+v\n%+v", i, cut, a, b)
		}
	}
	return orig, pert, cut
}

// TestNoHindsight replays slices of the Azure Functions trace as they are
// and with every minute after a cut perturbed (hindsightPair), and fails
// when a policy decides differently at or before the cut: a decision may
// use the history and the seconds before it, nothing later.
//
// Every policy runs with the default knobs on the first 45 minutes (20 of
// history, cut at replay minute 12). hetsev-heuristic and hetsev-exact
// also run as `make evaluate` scores them (--seasonal --model-thresholds
// --flavors 0.1,0.25,0.5,1: Knobs.SeasonalForecast, Knobs.ModelThresholds
// and Config.Flavors), the subtests scored/*, on the first 94 minutes (80
// of history, cut at replay minute 11): a history long enough for the
// seasonal forecast to find periods of 40 minutes and more, and it raises
// W_f before the cut (one service, a period of 41 minutes; no raise there
// changes a decision: TestSeasonalNoHindsight has one that does). The scored
// replays end 3 minutes after their cut, since their light instances make
// every replayed second dearer.
func TestNoHindsight(t *testing.T) {
	full, err := trace.AzureFunctions()
	if err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, orig, pert Config, cut int, name string) {
		t.Helper()
		var logs [2][]decisionRecord
		for k, cfg := range []Config{orig, pert} {
			logs[k] = decisionLog(t, cfg, name, cut)
		}
		if len(logs[0]) == 0 {
			t.Fatal("no decisions logged")
		}
		if len(logs[0]) != len(logs[1]) {
			t.Fatalf("%d decisions up to second %d, %d with the later seconds perturbed", len(logs[0]), cut, len(logs[1]))
		}
		for i, a := range logs[0] {
			if b := logs[1][i]; a.t != b.t || a.svc != b.svc || fmt.Sprint(a.delta) != fmt.Sprint(b.delta) {
				t.Fatalf("decision %d: second %d, service %s: %v; with the seconds after %d perturbed: second %d, %v",
					i, a.t, orig.Services[a.svc].Name, a.delta, cut, b.t, b.delta)
			}
		}
	}

	orig, pert, cut := hindsightPair(t, full, hindsightWindow{History: 20, Cut: 12, Minutes: 45})
	for _, name := range PolicyNames {
		if name == PolicyBound {
			continue
		}
		t.Run(name, func(t *testing.T) {
			check(t, orig, pert, cut, name)
		})
	}

	orig, pert, cut = hindsightPair(t, full, hindsightWindow{History: 80, Cut: 11, Minutes: 94})
	for _, c := range []*Config{&orig, &pert} {
		c.Knobs.SeasonalForecast = true
		c.Knobs.ModelThresholds = true
		c.Flavors = slices.Clone(heterogeneity.DefaultFlavors)
	}
	for _, name := range []string{PolicyHeuristic, PolicyExact} {
		t.Run("scored/"+name, func(t *testing.T) {
			// The flags are on: light columns, the model's thresholds.
			r, err := orig.resolveHetsev(orig.Services[0], heterogeneity.SolverHeuristic)
			if err != nil {
				t.Fatal(err)
			}
			if p := r.Policy(); p.SaturationThreshold == heterogeneity.DefaultPolicy().SaturationThreshold || len(r.Columns()) <= len(orig.gpuTypes()) {
				t.Fatalf("service %s: threshold %v, %d columns on %d GPU types; want the model's threshold and light flavors",
					orig.Services[0].Name, p.SaturationThreshold, len(r.Columns()), len(orig.gpuTypes()))
			}
			check(t, orig, pert, cut, name)
		})
	}
}
