package heterogeneity

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// seasonalEpoch is the start of the synthetic traces, on a minute.
var seasonalEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// seasonalDecision is one decision of replaySeasonal.
type seasonalDecision struct {
	sec     int // trace second
	w       float64
	running int // T4s running before the action
	act     Action
}

// replaySeasonal decides BERT-large on T4 (T_i 69.3 requests/s, O_i 40
// s; MaxAdditional 20) every 15 s from trace second 5 to until with the
// arrival rate rate(sec), applying every action at once, and returns the
// decisions.
func replaySeasonal(p Policy, rate func(sec int) float64, until int) []seasonalDecision {
	a := NewAutoscaler(p)
	running := 1
	var out []seasonalDecision
	for sec := 5; sec <= until; sec += 15 {
		obs := Observation{Now: seasonalEpoch.Add(time.Duration(sec) * time.Second), ArrivalRate: rate(sec),
			Types: ts(bertT4(running, 20))}
		act := a.Decide(obs)
		out = append(out, seasonalDecision{sec: sec, w: obs.ArrivalRate, running: running, act: act})
		running += act.Delta[0]
	}
	return out
}

// at is the decision at trace second sec.
func decisionAt(t *testing.T, ds []seasonalDecision, sec int) seasonalDecision {
	t.Helper()
	for _, d := range ds {
		if d.sec == sec {
			return d
		}
	}
	t.Fatalf("no decision at %d s", sec)
	return seasonalDecision{}
}

// scheduledBursts is 20 requests/s (give or take 2, per minute) with a
// burst to 200 requests/s in minutes 10-12, 40-42, 70-72, ...: a timer
// every 30 minutes.
func scheduledBursts() func(sec int) float64 {
	rng := rand.New(rand.NewPCG(1, 2))
	noise := make([]float64, 600)
	for i := range noise {
		noise[i] = 4*rng.Float64() - 2
	}
	return func(sec int) float64 {
		m := sec / 60
		if m >= 10 && (m-10)%30 < 3 {
			return 200
		}
		return 20 + noise[m%len(noise)]
	}
}

func seasonalPolicy(p *Policy) {
	p.SeasonalForecast = true
	p.DecisionInterval = 15 * time.Second
	p.RTMaxMs = 1200
}

// TestSeasonalScaleOutBeforeScheduledBurst: a burst every 30 minutes
// (scheduledBursts). The third burst starts at 70 min = 4,200 s. After two
// periods of history the decision O = 40 s before it (4,160 s) forecasts,
// for [now, now + O + 15 s), the 200 requests/s of the same minutes one
// and two periods earlier: target 200 / 0.8 = 250 against 69.3 running,
// (250 - 69.3) / 69.3 = 2.61 -> 3 more T4, while W is still 20. The
// decision before (4,145 s, whose window [2,345 s, 2,400 s) ends before
// minute 40) does nothing. Without the seasonal forecast the decision at
// 4,160 s does nothing either; the first two bursts, with less than two
// periods of history, get no seasonal forecast in either.
func TestSeasonalScaleOutBeforeScheduledBurst(t *testing.T) {
	for name, p := range map[string]Policy{"heuristic": testPolicy(seasonalPolicy), "exact": exactPolicy(seasonalPolicy)} {
		t.Run(name, func(t *testing.T) {
			ds := replaySeasonal(p, scheduledBursts(), 4300)
			before := decisionAt(t, ds, 4145)
			if before.act.Kind != ActionNone {
				t.Errorf("at 4145 s (55 s before the burst): %v %v, want none: %s", before.act.Kind, before.act.Delta, before.act.Reason)
			}
			d := decisionAt(t, ds, 4160)
			if d.act.Kind != ActionScaleOut || !slices.Equal(d.act.Delta, []int{3}) || d.running != 1 {
				t.Fatalf("at 4160 s (40 s before the burst, W %.1f, %d running): %v %v, want scale-out +3 T4 from 1: %s",
					d.w, d.running, d.act.Kind, d.act.Delta, d.act.Reason)
			}
			if want := "seasonal: period 30m (correlation 1.00), 200 requests/s expected within 55s"; !strings.HasPrefix(d.act.Reason, want) {
				t.Errorf("reason %q, want it to start with %q", d.act.Reason, want)
			}
			for _, early := range []int{10*60 - 40, 40*60 - 40} {
				if d := decisionAt(t, ds, early); d.act.Kind != ActionNone || !strings.Contains(d.act.Reason, "seasonal forecast: none") {
					t.Errorf("at %d s, 40 s before a burst with under two periods of history: %v %v, want none and why: %s",
						early, d.act.Kind, d.act.Delta, d.act.Reason)
				}
			}
		})
	}
	t.Run("off", func(t *testing.T) {
		p := testPolicy(seasonalPolicy, func(p *Policy) { p.SeasonalForecast = false })
		d := decisionAt(t, replaySeasonal(p, scheduledBursts(), 4300), 4160)
		if d.act.Kind != ActionNone || strings.Contains(d.act.Reason, "seasonal") {
			t.Errorf("SeasonalForecast false, at 4160 s: %v %v, want none with no seasonal reason: %s", d.act.Kind, d.act.Delta, d.act.Reason)
		}
	})
}

// TestSeasonalForecastsTheHigherOfTwoPeriods: a timer whose bursts differ
// in height, 100 requests/s in minutes 10-12 and 200 in minutes 40-42
// (scheduledBursts otherwise). Before the third burst (4,160 s, as in
// TestSeasonalScaleOutBeforeScheduledBurst) the forecast is the higher of
// the two periods before, 200 requests/s: +3 T4, not the +1 that 100
// requests/s would call for.
func TestSeasonalForecastsTheHigherOfTwoPeriods(t *testing.T) {
	base := scheduledBursts()
	rate := func(sec int) float64 {
		if m := sec / 60; m >= 10 && m < 13 {
			return 100
		}
		return base(sec)
	}
	d := decisionAt(t, replaySeasonal(exactPolicy(seasonalPolicy), rate, 4300), 4160)
	if d.act.Kind != ActionScaleOut || !slices.Equal(d.act.Delta, []int{3}) {
		t.Fatalf("at 4160 s (W %.1f, %d running): %v %v, want scale-out +3 T4 for 200 requests/s: %s",
			d.w, d.running, d.act.Kind, d.act.Delta, d.act.Reason)
	}
	if !strings.Contains(d.act.Reason, "200 requests/s expected") {
		t.Errorf("reason %q does not expect 200 requests/s", d.act.Reason)
	}
}

// TestSeasonalShortHistory: with less than two periods of history there is
// no seasonal forecast and the Reason says why: under 10 minutes, less
// than two of the shortest candidate period (5 min); at 39 minutes, no
// candidate up to 19 min recurs (the 30-min period needs 60).
func TestSeasonalShortHistory(t *testing.T) {
	ds := replaySeasonal(testPolicy(seasonalPolicy), scheduledBursts(), 2400)
	for _, c := range []struct {
		sec  int
		want string
	}{
		{7*60 + 5, "seasonal forecast: none, history 7m shorter than two periods of the shortest candidate (5m)"},
		{40*60 - 40, "seasonal forecast: none, no period of 5m to 19m recurs in the history of 39m (periods up to 60m need a history of 120m)"},
	} {
		d := decisionAt(t, ds, c.sec)
		if d.act.Kind != ActionNone || !strings.Contains(d.act.Reason, c.want) {
			t.Errorf("at %d s: %v %v, reason %q; want none and %q", c.sec, d.act.Kind, d.act.Delta, d.act.Reason, c.want)
		}
	}
}

// TestSeasonalNoPeriodNoForecast: a rate with no period (a random level
// per minute; a slow rise and fall) gets no seasonal forecast: over 6
// hours every decision is the one the policy without it takes, and no
// Reason claims a period.
func TestSeasonalNoPeriodNoForecast(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	levels := make([]float64, 400)
	for i := range levels {
		levels[i] = 10 + 110*rng.Float64()
	}
	cases := map[string]func(sec int) float64{
		"random level per minute": func(sec int) float64 { return levels[sec/60] },
		"rise and fall": func(sec int) float64 {
			h := float64(sec) / 3600
			if h < 3 {
				return 20 + 90*h
			}
			return 20 + 90*(6-h)
		},
	}
	for name, rate := range cases {
		t.Run(name, func(t *testing.T) {
			on := replaySeasonal(testPolicy(seasonalPolicy), rate, 6*3600)
			off := replaySeasonal(testPolicy(seasonalPolicy, func(p *Policy) { p.SeasonalForecast = false }), rate, 6*3600)
			for i := range on {
				if strings.Contains(on[i].act.Reason, "seasonal: period") {
					t.Fatalf("at %d s: %s", on[i].sec, on[i].act.Reason)
				}
				if on[i].act.Kind != off[i].act.Kind || !slices.Equal(on[i].act.Delta, off[i].act.Delta) {
					t.Fatalf("at %d s: with the seasonal forecast %v %v (%s), without %v %v",
						on[i].sec, on[i].act.Kind, on[i].act.Delta, on[i].act.Reason, off[i].act.Kind, off[i].act.Delta)
				}
			}
		})
	}
}

// TestSeasonalHistoryBounded: the per-minute history keeps at most
// seasonalHistoryMinutes minutes over 10 hours of decisions every 15 s;
// a gap longer than the history or a clock that goes back starts it anew.
func TestSeasonalHistoryBounded(t *testing.T) {
	a := NewAutoscaler(testPolicy(seasonalPolicy))
	rate := scheduledBursts()
	obs := func(sec int) Observation {
		return Observation{Now: seasonalEpoch.Add(time.Duration(sec) * time.Second), ArrivalRate: rate(sec), Types: ts(bertT4(4, 20))}
	}
	for sec := 0; sec <= 10*3600; sec += 15 {
		a.Propose(obs(sec))
		if n, c := len(a.seasonal.minutes), cap(a.seasonal.minutes); n > seasonalHistoryMinutes || c > 2*seasonalHistoryMinutes+64 {
			t.Fatalf("at %d s: %d minutes kept (capacity %d), want at most %d", sec, n, c, seasonalHistoryMinutes)
		}
	}
	if n := len(a.seasonal.minutes); n != seasonalHistoryMinutes {
		t.Errorf("after 10 h: %d minutes kept, want %d", n, seasonalHistoryMinutes)
	}
	a.Propose(obs(3 * 24 * 3600))
	if n := len(a.seasonal.minutes); n != 1 {
		t.Errorf("after a gap of 2 days: %d minutes kept, want 1", n)
	}
	a.Propose(obs(3*24*3600 + 600))
	a.Propose(obs(3*24*3600 + 300))
	if n := len(a.seasonal.minutes); n != 1 {
		t.Errorf("after the clock went back: %d minutes kept, want 1", n)
	}
}

// TestSeasonalRecordRate: an Autoscaler given the rates of the 70 minutes
// before it existed (RecordRate, every 15 s; rates that are not finite
// numbers >= 0 ignored) forecasts at its first decision: 40 s before the
// burst at 70 min it scales out +3 T4, as one that decided all along.
func TestSeasonalRecordRate(t *testing.T) {
	a := NewAutoscaler(testPolicy(seasonalPolicy))
	rate := scheduledBursts()
	for sec := 5; sec < 4160; sec += 15 {
		at := seasonalEpoch.Add(time.Duration(sec) * time.Second)
		a.RecordRate(at, rate(sec))
		a.RecordRate(at, math.NaN())
		a.RecordRate(at, -1)
		a.RecordRate(at, math.Inf(1))
	}
	act := a.Decide(Observation{Now: seasonalEpoch.Add(4160 * time.Second), ArrivalRate: rate(4160), Types: ts(bertT4(1, 20))})
	if act.Kind != ActionScaleOut || !slices.Equal(act.Delta, []int{3}) || !strings.HasPrefix(act.Reason, "seasonal: period 30m") {
		t.Errorf("first decision, 40 s before the burst: %v %v, want scale-out +3 T4 on the seasonal forecast: %s", act.Kind, act.Delta, act.Reason)
	}
}
