package evaluate

import (
	"slices"
	"testing"
)

// TestCheapestSuitableTypeIsPerRequest: three GPU types for RT_max 400 ms,
// worked by hand in USD/h per request/s (C_i / T_i):
//   - A: 1.00 USD/h, 100 requests/s, 50 ms: 0.0100;
//   - B: 1.50 USD/h, 300 requests/s, 80 ms: 0.0050, the dearer GPU but
//     the cheaper request;
//   - C: 0.20 USD/h, 100 requests/s, 500 ms: 0.0020, but 500 ms > RT_max.
//
// The single cheapest suitable type is B (index 1); by price per GPU it
// would be A, without the SLO check C. With every type too slow (RT_max
// 10 ms), the fastest, A.
func TestCheapestSuitableTypeIsPerRequest(t *testing.T) {
	offers := []typeOffer{
		{gpuType: "A", priceUSDPerHour: 1.0, throughputRPS: 100, latencyMs: 50},
		{gpuType: "B", priceUSDPerHour: 1.5, throughputRPS: 300, latencyMs: 80},
		{gpuType: "C", priceUSDPerHour: 0.2, throughputRPS: 100, latencyMs: 500},
	}
	if got := cheapestSuitable(offers, 400); got != 1 {
		t.Errorf("cheapest suitable type %d, want 1 (B: 0.005 USD/h per request/s)", got)
	}
	if got := cheapestSuitable(offers, 10); got != 0 {
		t.Errorf("none meets 10 ms: type %d, want 0 (A, the fastest)", got)
	}
}

// TestHPABestTypeScalesOnItsType: ResNet-50 (RT_max 400 ms) on the repo's
// types. Per request T4 is cheaper (0.526 / 363 = 0.00145 USD/h per
// request/s) than V100-32GB (3.9015 / 709 = 0.00550), and both meet RT_max,
// so every pod goes to a T4, the first one included. The HPA's target is
// 0.8 x 363 = 290.4 requests/s per pod.
//   - t = 0, W = 1,000 requests/s on 1 pod: ceil(1 x 1000 / 290.4) =
//     ceil(3.44) = 4 pods (within the scale-up limit max(1 + 4, 2 x 1) = 5):
//     3 more T4 pods, no V100;
//   - t = 15 s, 4 pods at 250 requests/s each: ratio 0.861, outside the
//     tolerance, ceil(4 x 0.861) = ceil(3.44) = 4: no change;
//   - t = 30 s, W = 200: ceil(4 x 50 / 290.4) = 1, but the 300 s
//     stabilisation keeps the highest recommendation, 4: no change;
//   - t = 330 s, W = 200: the recommendations of 0 s and 15 s are older
//     than 300 s, the highest left is 1: 3 pods fewer.
func TestHPABestTypeScalesOnItsType(t *testing.T) {
	cfg := peerConfig(t, resnetService)
	p, err := newHPABestTypePolicy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.serviceType(0); got != "T4" {
		t.Fatalf("type %q, want T4", got)
	}
	steps := []struct {
		now, w  float64
		running int // T4 pods
		want    []int
	}{
		{0, 1000, 1, []int{0, 3}},
		{15, 1000, 4, []int{0, 0}},
		{30, 200, 4, []int{0, 0}},
		{330, 200, 4, []int{0, -3}},
	}
	for _, s := range steps {
		got := p.decide(0, view{now: s.now, arrival: s.w, types: repoTypes(t, cfg, "resnet50", 0, s.running)})
		if !slices.Equal(got, s.want) {
			t.Errorf("t = %v s, W = %v, %d T4 pods: delta (V100-32GB, T4) %v, want %v", s.now, s.w, s.running, got, s.want)
		}
	}
}
