package evaluate

import (
	"fmt"
	"slices"
	"testing"

	"github.com/hetsev/hetsev/internal/sim/trace"
)

// TestNoHindsight replays the first 45 minutes of the Azure Functions
// trace (20 of history, 25 replayed; the 10 busiest functions) and the same
// trace with every minute after replay second cut perturbed (counts x3
// plus 7), and fails when any policy decides differently at or before cut:
// a decision may use the history and the seconds before it, nothing later.
// The cluster is the environment, the same in both runs.
func TestNoHindsight(t *testing.T) {
	full, err := trace.AzureFunctions()
	if err != nil {
		t.Fatal(err)
	}
	const hist, minutes, cutMinute = 20, 45, 12 // cutMinute: of the replay
	w := FunctionWorkload{Services: 16, Scale: 2, HistoryMinutes: hist}
	build := func(perturb bool) Config {
		fs := full
		fs.Minutes = minutes
		fs.Functions = make([]trace.Function, len(full.Functions))
		for i, f := range full.Functions {
			f.Counts = slices.Clone(f.Counts[:minutes])
			if perturb {
				for m := hist + cutMinute; m < minutes; m++ {
					f.Counts[m] = 3*f.Counts[m] + 7
				}
			}
			fs.Functions[i] = f
		}
		base, err := Base("hindsight", "", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		c, err := functionsConfig("hindsight", fs, w, base)
		if err != nil {
			t.Fatal(err)
		}
		c.logDecisions = true
		return c
	}
	orig, pert := build(false), build(true)
	pert.Cluster = orig.Cluster
	cut := 60 * cutMinute
	if orig.Rates[cut-1] != pert.Rates[cut-1] || orig.Rates[cut] == pert.Rates[cut] {
		t.Fatalf("perturbation does not start at second %d", cut)
	}
	for _, name := range PolicyNames {
		if name == PolicyBound {
			continue
		}
		t.Run(name, func(t *testing.T) {
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
		})
	}
}
