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
