package evaluate

import (
	"math"
	"slices"
	"testing"
	"time"
)

// TestMelangeMixAndCoolDown: three GPU types for a service with RT_max
// 400 ms and saturation threshold 0.8, at W = 288 requests/s, so the mix
// must serve 288 / 0.8 = 360 requests/s:
//   - A: 1.00 USD/h, 100 requests/s, 50 ms;
//   - B: 2.40 USD/h, 260 requests/s, 100 ms;
//   - C: 1.00 USD/h, 1,000 requests/s, 500 ms: too slow for RT_max.
//
// By hand, the mixes that serve 360 requests/s: 4 A = 4.00 USD/h (400
// requests/s), 2 B = 4.80 (520), 1 A + 1 B = 3.40 (360, exactly enough);
// 3 A serve only 300. The cheapest is 1 A + 1 B, a mix; one C (1.00)
// would be cheaper still, but fails RT_max.
//
// From 3 A: at t = 1000 s it launches the missing B and keeps the 2
// surplus A (a launch restarts the 300 s cool-down); at 1015 s nothing
// changes (cool-down); at 1300 s, 300 s after the launch, the 2 surplus A
// go.
func TestMelangeMixAndCoolDown(t *testing.T) {
	p := &melangePolicy{threshold: []float64{0.8}, rtMaxMs: []float64{400}, minRepl: 1,
		coolDown: (300 * time.Second).Seconds(), lastOut: []float64{math.Inf(-1)}}
	types := func(a, b int) []typeView {
		return []typeView{
			syntheticType("A", 1.0, 100, 50, a),
			syntheticType("B", 2.4, 260, 100, b),
			syntheticType("C", 1.0, 1000, 500, 0),
		}
	}
	if got := p.mix(0, view{now: 1000, arrival: 288, types: types(3, 0)}); !slices.Equal(got, []int{1, 1, 0}) {
		t.Errorf("mix (A, B, C) %v, want [1 1 0] (3.40 USD/h)", got)
	}
	steps := []struct {
		now  float64
		a, b int // running
		want []int
	}{
		{1000, 3, 0, []int{0, 1, 0}},
		{1015, 3, 1, []int{0, 0, 0}},
		{1300, 3, 1, []int{-2, 0, 0}},
	}
	for _, s := range steps {
		got := p.decide(0, view{now: s.now, arrival: 288, types: types(s.a, s.b)})
		if !slices.Equal(got, s.want) {
			t.Errorf("t = %v s, %d A and %d B running: delta (A, B, C) %v, want %v", s.now, s.a, s.b, got, s.want)
		}
	}
}

// TestMelangeOnRepoTypes: ResNet-50 at W = 1,000 requests/s needs 1,250
// requests/s of capacity. 4 T4 (4 x 363 = 1,452) cost 4 x 0.526 = 2.104
// USD/h; the cheapest with a V100-32GB is 1 V100 + 2 T4 (709 + 726 =
// 1,435) at 3.9015 + 1.052 = 4.95. From 1 T4: 3 more T4.
func TestMelangeOnRepoTypes(t *testing.T) {
	cfg := peerConfig(t, resnetService)
	p, err := newMelangePolicy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.decide(0, view{now: 0, arrival: 1000, types: repoTypes(t, cfg, "resnet50", 0, 1)}); !slices.Equal(got, []int{0, 3}) {
		t.Errorf("delta (V100-32GB, T4) %v, want [0 3]", got)
	}
}

// TestMelangeAIBrixWindow: AIBrix's optimizer solves for the larger of the
// 240 s mean rate and the last 10 s's. ResNet-50 on the repo's types, one
// T4 running:
//   - 230 s at 400 requests/s, then 10 s at 100: 240 s mean (92,000 +
//     1,000) / 240 = 387.5, last 10 s 100, W = 387.5, so 387.5 / 0.8 =
//     484.4 requests/s of capacity: 2 T4 (726), one more. On the 30 s
//     window's 100 requests/s alone (melange-ilp), 1 T4 would do;
//   - 230 s at 100, then 10 s at 1,000: 240 s mean (23,000 + 10,000) /
//     240 = 137.5, last 10 s 1,000, W = 1,000: 1,250 requests/s, 4 T4
//     (1,452), three more.
func TestMelangeAIBrixWindow(t *testing.T) {
	cfg := peerConfig(t, resnetService)
	p, err := newMelangeAIBrixPolicy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p.decisionInterval() != 10 || p.history() != 240 {
		t.Errorf("interval %d s, history %d s; want 10 and 240", p.decisionInterval(), p.history())
	}
	series := func(before, last int64) []int64 {
		out := make([]int64, 240)
		for i := range out {
			out[i] = before
			if i >= 230 {
				out[i] = last
			}
		}
		return out
	}
	steps := []struct {
		before, last int64
		want         []int
	}{
		{400, 100, []int{0, 1}},
		{100, 1000, []int{0, 3}},
	}
	for _, s := range steps {
		v := view{now: 1000, arrival: float64(s.last), offered: series(s.before, s.last), types: repoTypes(t, cfg, "resnet50", 0, 1)}
		if got := p.decide(0, v); !slices.Equal(got, s.want) {
			t.Errorf("%d requests/s then %d: delta (V100-32GB, T4) %v, want %v", s.before, s.last, got, s.want)
		}
	}
	m, err := newMelangePolicy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.decide(0, view{now: 1000, arrival: 100, types: repoTypes(t, cfg, "resnet50", 0, 1)}); !slices.Equal(got, []int{0, 0}) {
		t.Errorf("melange-ilp at W = 100: delta %v, want [0 0]", got)
	}
}

// TestMelangeAIBrixCadence: over 100 s, AIBrix's optimizer decides at 0,
// 10, ..., 90 s: 10 decisions; melange-ilp at hetsev-scaler's 0, 5, ...,
// 95 s: 20.
func TestMelangeAIBrixCadence(t *testing.T) {
	for _, c := range []struct {
		policy string
		want   int
	}{{PolicyMelangeAIBrix, 10}, {PolicyMelange, 20}} {
		r := run(t, constant(0, 100), t4Only(2), c.policy, resnetService)
		if got := r.Services[0].Decisions; got != c.want {
			t.Errorf("%s: %d decisions in 100 s, want %d", c.policy, got, c.want)
		}
	}
}
