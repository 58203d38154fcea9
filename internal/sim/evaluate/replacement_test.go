package evaluate

import (
	"slices"
	"testing"

	"github.com/hetsev/hetsev/pkg/heterogeneity"
	"github.com/hetsev/hetsev/pkg/placement"
)

// TestHetsevReplacementWaitsForLaunch: the evaluator's hetsev policy
// decides with the scaler's replacement, and the instances it counts as
// Ready are those past their launch time (typeView.ready), as the router
// sends requests to no other. ResNet-50 on one V100 (709 requests/s) at
// 200 requests/s, past any cool-down: with Knobs.Replacement one T4 (363
// >= 200 / 0.8) is launched, and the V100 goes only once it is ready, not
// while it launches.
func TestHetsevReplacementWaitsForLaunch(t *testing.T) {
	cfg, err := Base("replace", "replace", constant(200, 60), smallFleet(4, 4), Service{Name: "r", Model: "resnet50", Share: 1, RTMaxMs: 400})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Knobs.Replacement = true
	p, err := newHetsevPolicy(&cfg, heterogeneity.SolverExact, placement.DefaultInterferenceWeight)
	if err != nil {
		t.Fatal(err)
	}
	var types []typeView
	for _, name := range []string{"V100-32GB", "T4"} {
		g, _ := cfg.Catalog.ByName(name)
		prof, ok := cfg.Profiles.Get("resnet50", name)
		if !ok {
			t.Fatalf("no resnet50 profile on %s", name)
		}
		types = append(types, typeView{prof: prof, gpu: g, inflation: 1})
	}
	steps := []struct {
		running, ready [2]int // V100, T4
		want           []int
	}{
		{[2]int{1, 0}, [2]int{1, 0}, []int{0, 1}},  // launch a T4
		{[2]int{1, 1}, [2]int{1, 0}, []int{0, 0}},  // launching: the V100 stays
		{[2]int{1, 1}, [2]int{1, 0}, []int{0, 0}},  // still launching
		{[2]int{1, 1}, [2]int{1, 1}, []int{-1, 0}}, // it serves: the V100 goes
	}
	for k, s := range steps {
		v := view{now: float64(15 * k), arrival: 200, types: slices.Clone(types)}
		for i := range v.types {
			v.types[i].running, v.types[i].ready = s.running[i], s.ready[i]
			v.types[i].slots = 4 - s.running[i]
		}
		if got := p.decide(0, v); !slices.Equal(got, s.want) {
			t.Fatalf("decision %d (running %v, ready %v): delta %v, want %v", k, s.running, s.ready, got, s.want)
		}
	}
}

// TestAblationReplacementVariant: the replacement row turns the knob on
// for a baseline without it and off for one with it.
func TestAblationReplacementVariant(t *testing.T) {
	k, err := ablatedKnobs(DemoKnobs(), AblationReplacement)
	if err != nil || !k.Replacement {
		t.Errorf("%s: knobs %+v, %v; want Replacement", AblationReplacement, k, err)
	}
	on := DemoKnobs()
	on.Replacement = true
	if k, err = ablatedKnobs(on, AblationNoReplacement); err != nil || k.Replacement {
		t.Errorf("%s: knobs %+v, %v; want no Replacement", AblationNoReplacement, k, err)
	}
	if v := ablationVariants(false, false, true, false, false); slices.Contains(v, AblationReplacement) || !slices.Contains(v, AblationNoReplacement) {
		t.Errorf("variants of a baseline with replacement: %v, want %s instead of %s", v, AblationNoReplacement, AblationReplacement)
	}
	cfg := ablationConfig(t)
	r, err := cfg.resolve(cfg.Services[0], heterogeneity.SolverExact)
	if err != nil {
		t.Fatal(err)
	}
	pol := r.Policy()
	on.ablate(&pol)
	if !pol.Replacement {
		t.Errorf("Knobs.Replacement did not reach the policy")
	}
}
