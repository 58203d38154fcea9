package evaluate

import (
	"slices"
	"testing"
)

// kpaLoad is the offered load of TestKnativeKPARule: 1,000 requests in
// each of the seconds 60 to 69, 200 in every other second.
func kpaLoad(sec int) int64 {
	if sec >= 60 && sec < 70 {
		return 1000
	}
	return 200
}

// kpaView is what the KPA sees at trace second now: the last 60 s of
// kpaLoad and, on the repo's ResNet-50 types, running T4 pods of which
// ready serve.
func kpaView(t *testing.T, cfg *Config, now, running, ready int) view {
	v := view{now: float64(now), types: repoTypes(t, cfg, "resnet50", 0, running)}
	v.types[1].ready = ready
	for k := max(now-kpaStableWindowSeconds, 0); k < now; k++ {
		v.offered = append(v.offered, kpaLoad(k))
	}
	return v
}

// TestKnativeKPARule: ResNet-50 on T4s (the cheapest suitable type), target
// 0.8 x 363 = 290.4 requests/s per pod; a burst of 1,000 requests/s in the
// seconds 60 to 69, 200 otherwise. Worked by hand (stable: mean of the
// last 60 s; panic: of the last 6 s):
//   - t = 60, 1 pod: stable 200, panic 200: ceil(0.689) = 1 each, 1/1 < 2:
//     stable mode, 1 pod;
//   - t = 66, 1 pod ready: stable (54 x 200 + 6 x 1000) / 60 = 280 ->
//     ceil(0.964) = 1; panic 1000 -> ceil(3.44) = 4, 4/1 >= 2: panic, 4 pods
//     (max(1, 4); the scale-up limit is 1000 x 1): 3 more;
//   - t = 68, 4 pods, 1 ready: stable (52 x 200 + 8 x 1000) / 60 = 306.7 ->
//     2, panic 1000 -> 4, 4/1 >= 2: still in panic (panic time 68), 4 pods;
//   - t = 100, 4 ready: stable (50 x 200 + 10 x 1000) / 60 = 333.3 -> 2,
//     panic 200 -> 1, 1/4 < 2, but 68 + 60 s is not past: in panic no scale
//     down, 4 pods;
//   - t = 130 > 128: panic ends; stable 200 -> 1, but at most halved:
//     floor(4 / 2) = 2 pods: 2 fewer;
//   - t = 132, 2 ready: stable 1, floor(2 / 2) = 1: 1 fewer.
func TestKnativeKPARule(t *testing.T) {
	cfg := peerConfig(t, resnetService)
	p, err := newKnativeKPAPolicy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p.serviceType(0) != "T4" || !near(p.target[0], 290.4) || p.decisionInterval() != 2 || p.history() != 60 {
		t.Fatalf("type %s, target %v, tick %d s, history %d s; want T4, 290.4, 2, 60", p.serviceType(0), p.target[0], p.decisionInterval(), p.history())
	}
	steps := []struct {
		now, running, ready int
		want                int // T4 pods to add or remove
	}{
		{60, 1, 1, 0},
		{66, 1, 1, 3},
		{68, 4, 1, 0},
		{100, 4, 4, 0},
		{130, 4, 4, -2},
		{132, 2, 2, -1},
	}
	for _, s := range steps {
		got := p.decide(0, kpaView(t, cfg, s.now, s.running, s.ready))
		if want := []int{0, s.want}; !slices.Equal(got, want) {
			t.Errorf("t = %d s, %d pods (%d ready): delta (V100-32GB, T4) %v, want %v", s.now, s.running, s.ready, got, want)
		}
	}
}
