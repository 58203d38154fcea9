package heterogeneity

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
	"time"
)

// historyRun feeds a with decisions every 5 s from t0 on BERT-large on
// T4 and V100 (the replicas follow the actions), at the rates w, and
// returns the decisions as text. running carries the replicas across runs.
func historyRun(a *Autoscaler, t0 time.Time, from int, w []float64, running []int) []string {
	var out []string
	for k := from; k < len(w); k++ {
		obs := Observation{Now: t0.Add(time.Duration(k) * 5 * time.Second), ArrivalRate: w[k], Types: ts(bertT4(running[0], 20), bertV100(running[1], 20))}
		act := a.Decide(obs)
		for i, d := range act.Delta {
			running[i] += d
		}
		out = append(out, fmt.Sprintf("t=%ds %s %v: %s", k*5, act.Kind, act.Delta, act.Reason))
	}
	return out
}

// burstyRates are 30 minutes of decisions every 5 s: a load that rises
// and falls in bursts every 10 minutes, with noise.
func burstyRates() []float64 {
	rng := rand.New(rand.NewSource(7))
	w := make([]float64, 360)
	for k := range w {
		minute := float64(k) / 12
		w[k] = 60 + 140*math.Max(0, math.Sin(2*math.Pi*minute/10)) + 15*rng.Float64()
	}
	return w
}

// TestHistoryRestoresTheSameDecisions: an autoscaler restored from
// another's State and History in the middle of a bursty run (a new
// hetsev-scaler leader) decides every later step as the one that ran
// throughout, with the forecast, the stabilized scale-in and the seasonal
// forecast on; one restored from State alone does not. History leaves out
// the rates no rule can read any more.
func TestHistoryRestoresTheSameDecisions(t *testing.T) {
	p := exactPolicy(func(p *Policy) {
		p.DecisionInterval = 5 * time.Second
		p.ScaleInInterval = 15 * time.Second
		p.ScaleInCoolDown = time.Minute
		p.ScaleInStabilization = 5 * time.Minute
		p.SeasonalForecast = true
	})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := burstyRates()
	const restart = 290 // 24 min 10 s in: two periods seen, a burst's peak 100 s ago

	whole := NewAutoscaler(p)
	run := []int{1, 0}
	historyRun(whole, t0, 0, w[:restart], run)
	state, hist := whole.State(), whole.History()
	if kept, all := len(hist.Rates), len(whole.rates.samples); kept >= all || kept < 4 {
		t.Errorf("History keeps %d of %d rates: want fewer, and the forecast's", kept, all)
	}
	if len(hist.MinutePeaks) == 0 {
		t.Error("History has no minute peaks with the seasonal forecast on")
	}
	wholeRun := append([]int(nil), run...)
	want := historyRun(whole, t0, restart, w, wholeRun)

	restored := NewAutoscaler(p)
	restored.SetState(state)
	restored.SetHistory(hist)
	got := historyRun(restored, t0, restart, w, append([]int(nil), run...))
	for k := range want {
		if got[k] != want[k] {
			t.Fatalf("restored from State and History, step %d:\n got  %s\n want %s", k, got[k], want[k])
		}
	}

	forgetful := NewAutoscaler(p)
	forgetful.SetState(state)
	lost := historyRun(forgetful, t0, restart, w, append([]int(nil), run...))
	differ := 0
	for k := range want {
		if lost[k] != want[k] {
			differ++
		}
	}
	if differ == 0 {
		t.Error("restored from State alone decides the same: the test does not exercise the history")
	}
	t.Logf("%d of %d decisions after the restart differ without the history", differ, len(want))
}

// TestSetHistoryIgnoresBadInput: rates out of order are skipped and more
// minute peaks than the seasonal history holds keep the latest.
func TestSetHistoryIgnoresBadInput(t *testing.T) {
	a := NewAutoscaler(testPolicy(func(p *Policy) { p.SeasonalForecast = true }))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	peaks := make([]float64, seasonalHistoryMinutes+5)
	for i := range peaks {
		peaks[i] = float64(i)
	}
	a.SetHistory(History{
		Rates:       []RateSample{{At: t0, W: 1}, {At: t0.Add(-time.Second), W: 2}, {At: t0.Add(time.Second), W: 3}},
		MinutesFrom: t0, MinutePeaks: peaks,
	})
	if n := len(a.rates.samples); n != 2 || a.rates.samples[1].w != 3 {
		t.Errorf("rates %+v: want the two in order", a.rates.samples)
	}
	if n := len(a.seasonal.minutes); n != seasonalHistoryMinutes || a.seasonal.minutes[0] != 5 || !a.seasonal.origin.Equal(t0.Add(5*time.Minute)) {
		t.Errorf("%d minutes from %v starting %v: want the latest %d", n, a.seasonal.origin, a.seasonal.minutes[0], seasonalHistoryMinutes)
	}
}
