package heterogeneity

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestRisesOver(t *testing.T) {
	nan := math.NaN()
	// Minute 1's next minute has no observation; minute 2 has none itself;
	// minute 4 rises from zero.
	got := risesOver([]float64{10, 11, nan, 12, 0, 5}, 1)
	want := []rise{{0.1, 11}, {0, 0}, {math.Inf(1), 5}}
	if len(got) != len(want) {
		t.Fatalf("risesOver = %v, want %v", got, want)
	}
	for i := range want {
		if !near(got[i].r, want[i].r) || got[i].weight != want[i].weight {
			t.Errorf("rise %d = %v, want %v (all: %v)", i, got[i], want[i], got)
		}
	}
	// Over two minutes the highest of the next two counts.
	if got := risesOver([]float64{10, 9, 15, 15}, 2); len(got) != 2 || !near(got[0].r, 0.5) || !near(got[1].r, 15.0/9-1) {
		t.Errorf("risesOver(m=2) = %v, want rises 0.5 and 0.667", got)
	}
}

// The quantile counts requests, not minutes: 99 minutes rising 1 % at 10
// requests/s and one rising 9x to 1,000 requests/s. By minutes the 98 %
// quantile is 1 %; by the requests the rises carry (1,000 of 1,990) it is
// the burst's 900 %.
func TestWeightedQuantile(t *testing.T) {
	rises := []rise{{9, 1000}}
	for range 99 {
		rises = append(rises, rise{0.01, 10})
	}
	if q := weightedQuantile(rises, 0.98); q != 9 {
		t.Errorf("weighted 0.98 quantile = %v, want the burst's rise 9", q)
	}
	if q := weightedQuantile(rises, 0.4); q != 0.01 {
		t.Errorf("weighted 0.4 quantile = %v, want 0.01", q)
	}
	if q := weightedQuantile([]rise{{0, 0}, {0, 0}}, 0.98); q != 0 {
		t.Errorf("no weight: %v, want 0", q)
	}
}

// stepAfterHistory is the arrival rate of BERT-large: minutes of history
// at base (give or take 1 % per minute, or, with bursts, at zero every
// fifth minute), then from minute at a step to 300 requests/s for three
// minutes and back to base.
func stepAfterHistory(base float64, at int, bursts bool) func(sec int) float64 {
	rng := rand.New(rand.NewPCG(3, 4))
	noise := make([]float64, 600)
	for i := range noise {
		noise[i] = base * (0.02*rng.Float64() - 0.01)
	}
	return func(sec int) float64 {
		m := sec / 60
		switch {
		case m >= at && m < at+3:
			return 300
		case bursts && m < at && m%5 == 0:
			return 0
		}
		return base + noise[m%len(noise)]
	}
}

// firstScaleInAfter is the first scale-in at or after sec, false if none.
func firstScaleInAfter(ds []seasonalDecision, sec int) (seasonalDecision, bool) {
	for _, d := range ds {
		if d.sec >= sec && d.act.Kind == ActionScaleIn {
			return d, true
		}
	}
	return seasonalDecision{}, false
}

// TestLearnedHeadroomReleasesBrakes: 170 minutes at 200 requests/s (rises
// of at most 2 % over the 2-minute horizon: 30 s scale-out period, 40 s
// launch, 15 s decisions), then 300 requests/s for three minutes: 6 T4
// (300 / 0.8 / 69.3 = 5.4). The step is two of the 172 rises by then,
// weighing 600 of about 34,000 requests/s: above the 98 % quantile. When
// the rate falls back to 200 at 173 min (10,380 s), the 5-minute window's
// peak is 300, far above 200 x 1.02:
// the learned headroom releases the cool-down and the stabilization, and
// the service scales in to 4 T4 (204 / 0.8 / 69.3 = 3.7) at the first
// decision that sees the fall, well within the cool-down of the last
// scale-out. With the rule off the cool-down holds that decision.
func TestLearnedHeadroomReleasesBrakes(t *testing.T) {
	policy := func(off bool) Policy {
		return exactPolicy(func(p *Policy) {
			p.DecisionInterval = 15 * time.Second
			p.ScaleOutPeriod = 30 * time.Second
			p.RTMaxMs = 1200
			p.DisableLearnedHeadroom = off
		})
	}
	rate := stepAfterHistory(200, 170, false)
	ds := replaySeasonal(policy(false), rate, 173*60+120)
	var lastOut int
	for _, d := range ds {
		if d.act.Kind == ActionScaleOut {
			lastOut = d.sec
		}
	}
	d, ok := firstScaleInAfter(ds, 173*60)
	if !ok || d.sec > 173*60+30 || d.sec-lastOut >= 300 {
		t.Fatalf("learned headroom: first scale-in after the fall at %d s (last scale-out %d s, found %v), want within 30 s of 10380 s and of the cool-down",
			d.sec, lastOut, ok)
	}
	if d.running+d.act.Delta[0] != 4 {
		t.Errorf("learned headroom: %d T4 after the scale-in (%v from %d), want 4: %s", d.running+d.act.Delta[0], d.act.Delta, d.running, d.act.Reason)
	}
	if !strings.Contains(d.act.Reason, "learned headroom") || !strings.Contains(d.act.Reason, "cool-down and stabilization released") {
		t.Errorf("reason %q, want it to say the learned headroom released the brakes", d.act.Reason)
	}

	off := replaySeasonal(policy(true), rate, 173*60+120)
	if d, ok := firstScaleInAfter(off, 173*60); ok && d.sec-lastOut < 300 {
		t.Errorf("rule off: scale-in at %d s, %d s after the last scale-out, want the 5-minute cool-down to hold it: %s", d.sec, d.sec-lastOut, d.act.Reason)
	}
}

// TestLearnedHeadroomKeepsBrakesForBursts: the same step, after a history
// in which the rate falls to zero every fifth minute and comes back: its
// rises include bursts from zero, so no headroom is learned and the
// cool-down holds the scale-in, saying why.
func TestLearnedHeadroomKeepsBrakesForBursts(t *testing.T) {
	p := exactPolicy(func(p *Policy) {
		p.DecisionInterval = 15 * time.Second
		p.ScaleOutPeriod = 30 * time.Second
		p.RTMaxMs = 1200
	})
	ds := replaySeasonal(p, stepAfterHistory(200, 60, true), 63*60+120)
	for _, d := range ds {
		if d.sec >= 63*60 && d.sec < 63*60+60 {
			if d.act.Kind == ActionScaleIn {
				t.Fatalf("at %d s: scale-in %v, want the cool-down to hold it: %s", d.sec, d.act.Delta, d.act.Reason)
			}
			if want := "bursts from zero: brakes held"; !strings.Contains(d.act.Reason, want) || !strings.Contains(d.act.Reason, "cool-down") {
				t.Errorf("at %d s: reason %q, want the cool-down and %q", d.sec, d.act.Reason, want)
			}
		}
	}
}

// TestLearnedHeadroomShortHistory: the step after 15 minutes of history
// (at 18 min, 16 rises over 2 minutes: fewer than headroomMinRises): the cool-down holds and the reason
// says how many rises the history has.
func TestLearnedHeadroomShortHistory(t *testing.T) {
	p := exactPolicy(func(p *Policy) {
		p.DecisionInterval = 15 * time.Second
		p.ScaleOutPeriod = 30 * time.Second
		p.RTMaxMs = 1200
	})
	ds := replaySeasonal(p, stepAfterHistory(200, 15, false), 18*60+120)
	d := decisionAt(t, ds, 18*60+5)
	if d.act.Kind == ActionScaleIn {
		t.Fatalf("at %d s: scale-in %v, want the cool-down to hold it: %s", d.sec, d.act.Delta, d.act.Reason)
	}
	if want := "learned headroom: none, 16 rises over 2m0s in the history, 30 needed: brakes held"; !strings.Contains(d.act.Reason, want) {
		t.Errorf("reason %q, want it to contain %q", d.act.Reason, want)
	}
}

// TestLearnedHeadroomHistoryKept: the per-minute history the headroom is
// learned from survives History and SetHistory with the seasonal forecast
// off, so a new leader releases the brakes as its predecessor would.
func TestLearnedHeadroomHistoryKept(t *testing.T) {
	p := exactPolicy(func(p *Policy) { p.DecisionInterval = 15 * time.Second; p.RTMaxMs = 1200 })
	a := NewAutoscaler(p)
	for sec := 5; sec < 40*60; sec += 15 {
		a.Decide(Observation{Now: seasonalEpoch.Add(time.Duration(sec) * time.Second), ArrivalRate: 100, Types: ts(bertT4(2, 20))})
	}
	h := a.History()
	if len(h.MinutePeaks) < 39 {
		t.Fatalf("History has %d minute peaks, want the 40 minutes observed", len(h.MinutePeaks))
	}
	b := NewAutoscaler(p)
	b.SetHistory(h)
	obs := Observation{Now: seasonalEpoch.Add(40 * time.Minute), ArrivalRate: 100, Types: ts(bertT4(2, 20))}
	if hr := b.seasonal.learnedHeadroomOf(obs, p); !hr.ok || hr.h != 0 {
		t.Errorf("restored: learned headroom %+v, want 0 learned from the restored minutes", hr)
	}
	p.DisableLearnedHeadroom = true
	a.Policy = p
	if h := a.History(); len(h.MinutePeaks) != 0 {
		t.Errorf("rule and seasonal forecast off: History keeps %d minute peaks, want none", len(h.MinutePeaks))
	}
}
