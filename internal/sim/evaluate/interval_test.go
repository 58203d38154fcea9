package evaluate

import (
	"strings"
	"testing"
	"time"
)

// decisionTimes are the trace seconds at which policy decided service 0
// of cfg.
func decisionTimes(t *testing.T, cfg Config, policy string) []int {
	t.Helper()
	var out []int
	for _, d := range decisionLog(t, cfg, policy, -1) {
		if d.svc == 0 {
			out = append(out, d.t)
		}
	}
	return out
}

// checkEvery fails unless times are 0, every, 2 every, ... up to the
// last second of a replay of seconds.
func checkEvery(t *testing.T, name string, times []int, every, seconds int) {
	t.Helper()
	want := (seconds + every - 1) / every
	if len(times) != want {
		t.Errorf("%s: %d decisions in %d s, want %d (every %d s): %v", name, len(times), seconds, want, every, times)
		return
	}
	for i, s := range times {
		if s != i*every {
			t.Errorf("%s: decision %d at %d s, want %d s (every %d s): %v", name, i, s, i*every, every, times)
			return
		}
	}
}

// TestHetsevDecidesAtScalerInterval: on the same replay, hetsev-exact and
// hetsev-heuristic decide every 5 s, hetsev-scaler's default interval,
// while default Kubernetes' HPA syncs every Knobs.Interval (15 s, the
// kube-controller-manager's default), and so does INFaaS, whose scaling
// is hetsev's autoscaler; a longer Knobs.Interval slows the HPA, not
// hetsev.
func TestHetsevDecidesAtScalerInterval(t *testing.T) {
	const seconds = 120
	cfg, err := Base("interval", "ramp", ramp(20, 200, seconds), t4Only(8), Service{Name: "b", Model: "bert-large", Share: 1, RTMaxMs: 400})
	if err != nil {
		t.Fatal(err)
	}
	checkEvery(t, PolicyExact, decisionTimes(t, cfg, PolicyExact), 5, seconds)
	checkEvery(t, PolicyHeuristic, decisionTimes(t, cfg, PolicyHeuristic), 5, seconds)
	checkEvery(t, PolicyDefault, decisionTimes(t, cfg, PolicyDefault), 15, seconds)
	// Mélange's ILP runs at hetsev's cadence, so only the decision differs.
	checkEvery(t, PolicyMelange, decisionTimes(t, cfg, PolicyMelange), 5, seconds)
	// INFaaS runs hetsev's autoscaler as a peer: at the peers' interval.
	checkEvery(t, PolicyINFaaS, decisionTimes(t, cfg, PolicyINFaaS), 15, seconds)

	cfg.Knobs.Interval = 30 * time.Second
	checkEvery(t, PolicyExact+" (HPA sync 30 s)", decisionTimes(t, cfg, PolicyExact), 5, seconds)
	checkEvery(t, PolicyMelange+" (HPA sync 30 s)", decisionTimes(t, cfg, PolicyMelange), 5, seconds)
	checkEvery(t, PolicyDefault+" (HPA sync 30 s)", decisionTimes(t, cfg, PolicyDefault), 30, seconds)
}

// TestAblationInterval15s: the interval-15s variant replays hetsev at
// 15 s, the HPA's sync period unchanged; Validate refuses a scaler
// interval the per-second replay cannot keep.
func TestAblationInterval15s(t *testing.T) {
	const seconds = 120
	cfg, err := Base("interval", "ramp", ramp(20, 200, seconds), t4Only(8), Service{Name: "b", Model: "bert-large", Share: 1, RTMaxMs: 400})
	if err != nil {
		t.Fatal(err)
	}
	k, err := ablatedKnobs(cfg.Knobs, AblationInterval15s)
	if err != nil {
		t.Fatal(err)
	}
	if k.Interval != cfg.Knobs.Interval {
		t.Errorf("%s: HPA sync period %v, want %v", AblationInterval15s, k.Interval, cfg.Knobs.Interval)
	}
	cfg.Knobs = k
	checkEvery(t, PolicyExact+" ("+AblationInterval15s+")", decisionTimes(t, cfg, PolicyExact), 15, seconds)
	checkEvery(t, PolicyMelange+" ("+AblationInterval15s+")", decisionTimes(t, cfg, PolicyMelange), 15, seconds)

	for _, bad := range []time.Duration{500 * time.Millisecond, 2500 * time.Millisecond, -time.Second} {
		cfg.Knobs.ScalerInterval = bad
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "Knobs.ScalerInterval") {
			t.Errorf("ScalerInterval %v: err %v, want one naming Knobs.ScalerInterval", bad, err)
		}
	}
}
