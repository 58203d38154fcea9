package heterogeneity

import (
	"strings"
	"testing"
	"time"
)

// A ResNet-50 service that spiked onto a V100 (T_i 709 requests/s, 3.90
// USD/h) a minute ago and whose load fell to 200 requests/s: at
// MinReplicas 1 no scale-in may remove it, so without replacement it
// keeps the V100 for good. Within the scale-in cool-down the replacement
// keeps the capacity: two T4 (2 x 363 = 726 >= 709 requests/s, 2 x 0.526
// USD/h, launch penalty 0.01 x 20 s) replace it, objective 1.2624 -
// 3.9015 = -2.6391 USD/h.

const replaceW = 200.0

func replacePolicy() Policy {
	p := DefaultPolicy()
	p.Replacement = true
	return p
}

// spiked is an autoscaler with p whose last scale-out was a minute
// before t0: within the 5 min scale-in cool-down.
func spiked(p Policy, t0 time.Time) *Autoscaler {
	a := NewAutoscaler(p)
	a.SetState(State{LastScaleOut: t0.Add(-time.Minute)})
	return a
}

// swapWorld is the service's instances as a caller sees them: running
// and ready per column (V100 first, T4 second).
type swapWorld struct {
	running, ready [2]int
}

func (w swapWorld) obs(now time.Time) Observation {
	v, t := resnetV100(w.running[0], 0), resnetT4(w.running[1], 4-w.running[1])
	v.Ready, t.Ready = w.ready[0], w.ready[1]
	return Observation{Now: now, ArrivalRate: replaceW, Types: ts(v, t)}
}

// served is the capacity of the ready instances, requests/s.
func (w swapWorld) served() float64 {
	return float64(w.ready[0])*resnetV100RPS + float64(w.ready[1])*resnetT4RPS
}

// apply applies delta as a caller does: added instances launch (not
// ready), removed ones go, not-ready ones first (as a ReplicaSet picks).
func (w *swapWorld) apply(delta []int) {
	for i, d := range delta {
		w.running[i] += d
		w.ready[i] = min(w.ready[i], w.running[i])
	}
}

func TestReplacementMovesV100ToT4MakeBeforeBreak(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := spiked(replacePolicy(), t0)
	w := swapWorld{running: [2]int{1, 0}, ready: [2]int{1, 0}}
	need := replaceW / a.Policy.SaturationThreshold
	before := w.served()
	// ready[1] of the T4 are ready at each decision, 15 s apart.
	script := []struct {
		readyT4 int
		kind    ActionKind
		delta   []int
		phase   ReplacementPhase
	}{
		{0, ActionReplace, []int{0, 2}, ReplacementStarted},
		{0, ActionNone, []int{0, 0}, ""},
		{1, ActionNone, []int{0, 0}, ""}, // 363 < 709: the V100 stays
		{2, ActionReplace, []int{-1, 0}, ReplacementCompleted},
		// Done; the cool-down still holds the scale-in, the interval a
		// second replacement.
		{2, ActionNone, []int{0, 0}, ""},
	}
	for k, s := range script {
		w.ready[1] = min(s.readyT4, w.running[1])
		act := a.Decide(w.obs(t0.Add(time.Duration(k) * 15 * time.Second)))
		if act.Kind != s.kind || !equalInts(act.Delta, s.delta) || act.ReplacementPhase != s.phase {
			t.Fatalf("decision %d: got %s %v phase %q (%s), want %s %v phase %q", k, act.Kind, act.Delta, act.ReplacementPhase, act.Reason, s.kind, s.delta, s.phase)
		}
		w.apply(act.Delta)
		// Capacity never below the SLO's need nor below what the service
		// had before the replacement: counted on ready instances only.
		if got := w.served(); got < need || got < before {
			t.Fatalf("decision %d: ready capacity %.0f requests/s after %v, below need %.0f or the %.0f before the replacement", k, got, act.Delta, need, before)
		}
	}
	if w.running != [2]int{0, 2} {
		t.Errorf("instances at the end: %v, want 0 V100 and 2 T4", w.running)
	}
	if st := a.State(); st.Replacement != nil || !st.LastReplacement.Equal(t0.Add(45*time.Second)) {
		t.Errorf("state after completion: replacement %+v, last %v; want none, ended at +45s", st.Replacement, st.LastReplacement)
	}
}

func TestReplacementTimesOutAndKeepsTheOldInstance(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := spiked(replacePolicy(), t0)
	w := swapWorld{running: [2]int{1, 0}, ready: [2]int{1, 0}}
	act := a.Decide(w.obs(t0))
	if act.ReplacementPhase != ReplacementStarted {
		t.Fatalf("first decision: %s phase %q (%s), want a replacement started", act.Kind, act.ReplacementPhase, act.Reason)
	}
	w.apply(act.Delta)
	// The T4 never become ready.
	for now := t0.Add(15 * time.Second); now.Before(t0.Add(DefaultReplacementTimeout)); now = now.Add(15 * time.Second) {
		act = a.Decide(w.obs(now))
		if act.Kind != ActionNone {
			t.Fatalf("at %v: %s %v (%s), want nothing while the T4 are not ready", now.Sub(t0), act.Kind, act.Delta, act.Reason)
		}
	}
	act = a.Decide(w.obs(t0.Add(DefaultReplacementTimeout)))
	if act.Kind != ActionReplace || !equalInts(act.Delta, []int{0, -2}) || act.ReplacementPhase != ReplacementTimedOut {
		t.Fatalf("at the timeout: %s %v phase %q (%s), want the 2 T4 removed, timed out", act.Kind, act.Delta, act.ReplacementPhase, act.Reason)
	}
	w.apply(act.Delta)
	if w.running != [2]int{1, 0} || w.ready != [2]int{1, 0} {
		t.Errorf("after the timeout: running %v ready %v, want the V100 alone, ready", w.running, w.ready)
	}
	// The interval holds the next replacement.
	if act = a.Decide(w.obs(t0.Add(DefaultReplacementTimeout + 15*time.Second))); act.Kind != ActionNone {
		t.Errorf("after the timeout: %s %v (%s), want nothing within the replacement interval", act.Kind, act.Delta, act.Reason)
	}
}

func TestReplacementOffByDefaultAndRuleChecks(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := swapWorld{running: [2]int{1, 0}, ready: [2]int{1, 0}}
	if act := NewAutoscaler(DefaultPolicy()).Decide(w.obs(t0)); act.Kind != ActionNone || act.Replacement != nil {
		t.Errorf("default policy: %s %v, want no replacement", act.Kind, act.Delta)
	}
	// On a lower bound of W nothing starts.
	o := w.obs(t0)
	o.ArrivalRateIsLowerBound = true
	if act := NewAutoscaler(replacePolicy()).Decide(o); act.Kind != ActionNone {
		t.Errorf("lower bound: %s %v, want none", act.Kind, act.Delta)
	}
	// A scale-out due during a replacement goes first; the V100 stays
	// while the new T4 are not ready.
	a := spiked(replacePolicy(), t0)
	a.Policy.ScaleOutPeriod = 0
	act := a.Decide(w.obs(t0))
	w.apply(act.Delta)
	o = w.obs(t0.Add(15 * time.Second))
	o.ArrivalRate = 1500
	if act = a.Decide(o); act.Kind != ActionScaleOut || act.Replacement == nil {
		t.Fatalf("spike during the replacement: %s %v (%s), replacement %+v; want a scale-out, the replacement still in flight", act.Kind, act.Delta, act.Reason, act.Replacement)
	}
	if a.State().Replacement == nil {
		t.Errorf("the scale-out ended the replacement")
	}
	// At the timeout only the replacement's own instances go, not the
	// scale-out's.
	w.apply(act.Delta)
	o = w.obs(t0.Add(DefaultReplacementTimeout))
	o.ArrivalRate = 1500
	if act = a.Decide(o); act.ReplacementPhase != ReplacementTimedOut || act.Delta[1] != -2 {
		t.Errorf("timeout after a scale-out of %v T4: %s %v (%s), want the replacement's 2 T4 removed", w.running[1]-2, act.Kind, act.Delta, act.Reason)
	}
	bad := replacePolicy()
	bad.ReplacementTimeout = -time.Second
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "ReplacementTimeout") {
		t.Errorf("negative timeout: %v, want an error naming ReplacementTimeout", err)
	}
}

// Past the cool-down the brakes allow what a scale-in would: the
// capacity may fall to the scale-in bar, 200 / 0.8 = 250 requests/s at
// the highest W of the stabilization window. One T4 (363) replaces the
// V100 (objective 0.6312 - 3.9015 = -3.2703 USD/h); the V100 still goes
// only once the T4 is ready.
func TestReplacementAfterTheCoolDownShrinksToTheBar(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := NewAutoscaler(replacePolicy())
	a.SetState(State{LastScaleOut: t0.Add(-10 * time.Minute)})
	w := swapWorld{running: [2]int{1, 0}, ready: [2]int{1, 0}}
	need := replaceW / a.Policy.SaturationThreshold
	for k, s := range []struct {
		readyT4 int
		delta   []int
	}{{0, []int{0, 1}}, {0, []int{0, 0}}, {1, []int{-1, 0}}} {
		w.ready[1] = min(s.readyT4, w.running[1])
		act := a.Decide(w.obs(t0.Add(time.Duration(k) * 15 * time.Second)))
		if !equalInts(act.Delta, s.delta) {
			t.Fatalf("decision %d: %s %v (%s), want %v", k, act.Kind, act.Delta, act.Reason, s.delta)
		}
		w.apply(act.Delta)
		if got := w.served(); got < need {
			t.Fatalf("decision %d: ready capacity %.0f < need %.0f", k, got, need)
		}
	}
}

// Whole GPU to a light flavor: a quiet service (5 requests/s) on one
// whole T4 (0.526 USD/h) moves to one instance of busy share 0.25
// (min(363, 0.25 / 22.41 ms) = 11.16 requests/s >= 5 / 0.8, 0.1315 USD/h).
func TestReplacementMovesAQuietServiceToALightFlavor(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := NewAutoscaler(replacePolicy())
	whole := resnetT4(1, 3)
	whole.Ready = 1
	light := TypeState{GPUType: "T4-busy0.25", ThroughputRPS: 0.25 / (resnetT4Ms / 1000), LatencyMs: resnetT4Ms,
		PriceUSDPerHour: 0.25 * priceT4USDh, LaunchSeconds: resnetLaunchS, MaxAdditional: 4, Light: true, BatchSize: 8}
	act := a.Decide(Observation{Now: t0, ArrivalRate: 5, Types: ts(whole, light)})
	if act.Kind != ActionReplace || !equalInts(act.Delta, []int{0, 1}) || act.Replacement == nil || act.Replacement.To != "T4-busy0.25" {
		t.Fatalf("quiet on a whole T4: %s %v (%s), want +1 T4-busy0.25", act.Kind, act.Delta, act.Reason)
	}
	light.Running, light.MaxAdditional = 1, 3
	act = a.Decide(Observation{Now: t0.Add(15 * time.Second), ArrivalRate: 5, Types: ts(whole, light)})
	if act.Kind != ActionNone {
		t.Fatalf("light instance launching: %s %v (%s), want the whole T4 kept", act.Kind, act.Delta, act.Reason)
	}
	light.Ready = 1
	act = a.Decide(Observation{Now: t0.Add(30 * time.Second), ArrivalRate: 5, Types: ts(whole, light)})
	if act.ReplacementPhase != ReplacementCompleted || !equalInts(act.Delta, []int{-1, 0}) {
		t.Fatalf("light instance ready: %s %v (%s), want the whole T4 removed", act.Kind, act.Delta, act.Reason)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestReplacementTimeoutKeepsWhatStandsInForRemovedInstances: two V100
// being replaced by four T4, one V100 already gone for two ready T4; at
// the timeout the T4 report not ready (a probe flapping, a traffic split
// not written). The timeout removes only the new T4 beyond the two that
// stand in for the removed V100 (2 x 363 >= 709 requests/s): removing all
// four would leave the service a V100 short of what it had.
func TestReplacementTimeoutKeepsWhatStandsInForRemovedInstances(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := NewAutoscaler(replacePolicy())
	a.SetState(State{LastScaleOut: t0.Add(-time.Hour), Replacement: &Replacement{From: "V100-32GB", To: "T4", Add: 4, Remove: 2, Removed: 1,
		Started: t0.Add(-DefaultReplacementTimeout), FloorRPS: 2 * resnetV100RPS}})
	v, t4 := resnetV100(1, 0), resnetT4(4, 0)
	v.Ready, t4.Ready = 1, 0
	act := a.Decide(Observation{Now: t0, ArrivalRate: replaceW, Types: ts(v, t4)})
	if act.ReplacementPhase != ReplacementTimedOut || !equalInts(act.Delta, []int{0, -2}) {
		t.Fatalf("at the timeout: %s %v phase %q (%s), want the 2 T4 beyond those standing in for the removed V100 removed", act.Kind, act.Delta, act.ReplacementPhase, act.Reason)
	}
}
