package evaluate

import (
	"math"
	"testing"
)

// TestReactiveCeiling works the ceiling by hand: ResNet-50 on T4s only
// (T_1 363 requests/s, launch 20 s), two bursts of 726 requests/s (twice
// T_1) for 100 s from nothing. In the first burst's first 20 s the ceiling
// has one instance (363 of 726 answered); from then on it holds capacity
// for 726 / 0.8 and answers everything, the second burst included:
// 1 - 20 x 363 / (200 x 726) = 0.95. A burst within T_1 costs nothing.
func TestReactiveCeiling(t *testing.T) {
	rates := constant(0, 400)
	for s := 100; s < 200; s++ {
		rates[s], rates[s+200] = 726, 726
	}
	cfg, err := Base("t", "t", rates, t4Only(4), Service{Name: "a", Model: "resnet50", Share: 1, RTMaxMs: 400})
	if err != nil {
		t.Fatal(err)
	}
	if got := reactiveCeiling(&cfg, &cfg.Services[0], 0.8); math.Abs(got-0.95) > 1e-9 {
		t.Errorf("two bursts of twice T_1 from nothing: ceiling %.6f, want 0.95", got)
	}
	// The same bursts at 300 requests/s fit one instance.
	cfg.Services[0].Share = 300.0 / 726
	if got := reactiveCeiling(&cfg, &cfg.Services[0], 0.8); got != 1 {
		t.Errorf("bursts within one instance: ceiling %.6f, want 1", got)
	}
	// Counting from the second burst only: it was seen, nothing lost.
	cfg.Services[0].Share, cfg.MeasureFrom = 1, 250
	if got := reactiveCeiling(&cfg, &cfg.Services[0], 0.8); got != 1 {
		t.Errorf("a burst seen before the measured part: ceiling %.6f, want 1", got)
	}
}

// TestReactiveCeilingOnCheapestType: with V100s next to the T4s, the
// ceiling still runs on the T4, the cheapest per request that meets
// RT_max (0.526 / 363 against 3.9015 / 709 USD/h per request/s), with the
// T4's 363 requests/s: the same 0.95 as on T4s alone, not the V100's
// 709 requests/s, which would answer 1 - 20 x 17 / (200 x 726).
func TestReactiveCeilingOnCheapestType(t *testing.T) {
	rates := constant(0, 400)
	for s := 100; s < 200; s++ {
		rates[s], rates[s+200] = 726, 726
	}
	cfg, err := Base("t", "t", rates, HetSevNodes(2), Service{Name: "a", Model: "resnet50", Share: 1, RTMaxMs: 400})
	if err != nil {
		t.Fatal(err)
	}
	if got := reactiveCeiling(&cfg, &cfg.Services[0], 0.8); math.Abs(got-0.95) > 1e-9 {
		t.Errorf("ceiling %.6f, want 0.95 (T4's throughput)", got)
	}
	// An SLO the T4 cannot meet (RT_max 20 ms < 22.41 + 1): the V100
	// (11.5 + 1 ms), with its 709 requests/s.
	cfg.Services[0].RTMaxMs = 20
	if got, want := reactiveCeiling(&cfg, &cfg.Services[0], 0.8), 1-20*17.0/(200*726); math.Abs(got-want) > 1e-9 {
		t.Errorf("T4 too slow: ceiling %.6f, want %.6f (V100's throughput)", got, want)
	}
}
