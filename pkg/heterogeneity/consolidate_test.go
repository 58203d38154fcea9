package heterogeneity

import (
	"strings"
	"testing"
	"time"
)

// A quiet ResNet-50 service on two light T4 instances of busy share 0.25
// (0.25 / 22.41 ms = 11.16 requests/s each, 0.1315 USD/h), one of them
// alone on its GPU where the scheduler would admit it beside other
// tenants (Movable 1). MinReplicas 2 holds the scale-in, so the decision
// would do nothing but move.

const consolidateW = 5.0

func consolidatePolicy() Policy {
	p := DefaultPolicy()
	p.Consolidation = true
	p.MinReplicas = 2
	return p
}

func lightT4(running, ready, movable, maxAdditional int) TypeState {
	return TypeState{GPUType: "T4-busy0.25", Running: running, Ready: ready, Movable: movable,
		ThroughputRPS: 0.25 / (resnetT4Ms / 1000), LatencyMs: resnetT4Ms, PriceUSDPerHour: 0.25 * priceT4USDh,
		LaunchSeconds: resnetLaunchS, MaxAdditional: maxAdditional, Light: true, BatchSize: 8}
}

func TestConsolidationMovesALoneInstanceMakeBeforeBreak(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := NewAutoscaler(consolidatePolicy())
	obs := func(k int, light TypeState) Observation {
		return Observation{Now: t0.Add(time.Duration(k) * 15 * time.Second), ArrivalRate: consolidateW, Types: ts(resnetT4(0, 4), light)}
	}
	act := a.Decide(obs(0, lightT4(2, 2, 1, 3)))
	if act.Kind != ActionReplace || !equalInts(act.Delta, []int{0, 1}) || act.ReplacementPhase != ReplacementStarted ||
		act.Replacement == nil || act.Replacement.From != "T4-busy0.25" || act.Replacement.To != "T4-busy0.25" {
		t.Fatalf("one instance movable: %s %v phase %q replacement %+v (%s), want +1 T4-busy0.25, a move started", act.Kind, act.Delta, act.ReplacementPhase, act.Replacement, act.Reason)
	}
	if !strings.Contains(act.Reason, "consolidation") {
		t.Errorf("reason %q does not say consolidation", act.Reason)
	}
	// The new instance launches: nothing goes, and the move stays in
	// flight (it no longer counts as movable while it is).
	if act = a.Decide(obs(1, lightT4(3, 2, 1, 2))); act.Kind != ActionNone || a.State().Replacement == nil {
		t.Fatalf("new instance launching: %s %v (%s), in flight %+v; want nothing, the move in flight", act.Kind, act.Delta, act.Reason, a.State().Replacement)
	}
	// Ready and routed: the old one goes, though the new one shares a GPU
	// and the instances now count T_i over an inflation of 1.6 (3 x 6.97
	// - 6.97 = 13.95 requests/s left, above the 5 / 0.8 the SLO needs).
	act = a.Decide(obs(2, inflated(lightT4(3, 3, 1, 2), 1.6)))
	if act.Kind != ActionReplace || !equalInts(act.Delta, []int{0, -1}) || act.ReplacementPhase != ReplacementCompleted {
		t.Fatalf("new instance ready: %s %v phase %q (%s), want -1 T4-busy0.25, completed", act.Kind, act.Delta, act.ReplacementPhase, act.Reason)
	}
	st := a.State()
	if st.Replacement != nil || !st.LastReplacement.Equal(t0.Add(30*time.Second)) {
		t.Errorf("state after the move: in flight %+v, last %v; want none, ended at +30s", st.Replacement, st.LastReplacement)
	}
	// The interval holds the next move.
	if act = a.Decide(obs(3, lightT4(2, 2, 1, 3))); act.Kind != ActionNone {
		t.Errorf("within the interval: %s %v (%s), want nothing", act.Kind, act.Delta, act.Reason)
	}
	if act = a.Decide(obs(3, lightT4(2, 2, 1, 3)).after(DefaultReplacementInterval)); act.ReplacementPhase != ReplacementStarted {
		t.Errorf("after the interval: %s %v (%s), want the next move", act.Kind, act.Delta, act.Reason)
	}
}

// inflated is t with its instances counting T_i over inflation.
func inflated(t TypeState, inflation float64) TypeState {
	t.ThroughputRPS /= inflation
	return t
}

// TestConsolidationKeepsWhatTheSLONeeds: at 12 requests/s the SLO needs
// 12 / 0.8 = 15 requests/s. With the new instance sharing a GPU at an
// inflation of 1.6, removing the old one would leave 2 x 6.97 = 13.95:
// at that inflation the column needs the third instance, so the old one
// stays, and the timeout ends the move with the ready new one kept.
func TestConsolidationKeepsWhatTheSLONeeds(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := NewAutoscaler(consolidatePolicy())
	o := Observation{Now: t0, ArrivalRate: 12, Types: ts(lightT4(2, 2, 1, 3))}
	if act := a.Decide(o); act.ReplacementPhase != ReplacementStarted || act.Replacement.FloorRPS != 15 {
		t.Fatalf("first decision: %s %v replacement %+v (%s), want a move with floor 15 requests/s", act.Kind, act.Delta, act.Replacement, act.Reason)
	}
	o.Types = ts(inflated(lightT4(3, 3, 1, 2), 1.6))
	if act := a.Decide(o.after(15 * time.Second)); act.Kind != ActionNone {
		t.Fatalf("new instance ready, old one's removal below the need: %s %v (%s), want nothing", act.Kind, act.Delta, act.Reason)
	}
	if act := a.Decide(o.after(DefaultReplacementTimeout)); act.ReplacementPhase != ReplacementTimedOut || !equalInts(act.Delta, []int{0}) {
		t.Fatalf("at the timeout: %s %v phase %q (%s), want timed out, the ready new instance kept", act.Kind, act.Delta, act.ReplacementPhase, act.Reason)
	}
}

// TestConsolidationRemovesOnlyForAServingInstance: within the scale-in
// cool-down (a scale-out a minute ago) at MinReplicas 1 and 1 request/s,
// a move starts (the brake holds a scale-in, not a move). While the new
// instance launches the old one stays, though the capacity without both
// (11.16 requests/s) is far above the need: removing one then would make
// the ReplicaSet take the new pod, which is not ready, and the move a
// scale-in the cool-down forbids.
func TestConsolidationRemovesOnlyForAServingInstance(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := consolidatePolicy()
	p.MinReplicas = 1
	a := spiked(p, t0)
	o := Observation{Now: t0, ArrivalRate: 1, Types: ts(lightT4(2, 2, 1, 3))}
	if act := a.Decide(o); act.ReplacementPhase != ReplacementStarted {
		t.Fatalf("first decision: %s %v (%s), want a move", act.Kind, act.Delta, act.Reason)
	}
	o.Types = ts(lightT4(3, 2, 1, 2))
	if act := a.Decide(o.after(15 * time.Second)); act.Kind != ActionNone {
		t.Fatalf("new instance launching: %s %v (%s), want nothing removed", act.Kind, act.Delta, act.Reason)
	}
	o.Types = ts(lightT4(3, 3, 1, 2))
	if act := a.Decide(o.after(30 * time.Second)); act.ReplacementPhase != ReplacementCompleted || !equalInts(act.Delta, []int{-1}) {
		t.Fatalf("new instance serving: %s %v phase %q (%s), want -1, completed", act.Kind, act.Delta, act.ReplacementPhase, act.Reason)
	}
}

// after is o a duration d later.
func (o Observation) after(d time.Duration) Observation {
	o.Now = o.Now.Add(d)
	return o
}

func TestConsolidationTimesOutAndKeepsTheOldInstance(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := NewAutoscaler(consolidatePolicy())
	o := Observation{Now: t0, ArrivalRate: consolidateW, Types: ts(lightT4(2, 2, 1, 3))}
	if act := a.Decide(o); act.ReplacementPhase != ReplacementStarted {
		t.Fatalf("first decision: %s %v (%s), want a move", act.Kind, act.Delta, act.Reason)
	}
	// The new instance never becomes ready.
	o.Types = ts(lightT4(3, 2, 1, 2))
	act := a.Decide(o.after(DefaultReplacementTimeout))
	if act.ReplacementPhase != ReplacementTimedOut || !equalInts(act.Delta, []int{-1}) {
		t.Fatalf("at the timeout: %s %v phase %q (%s), want the new instance removed, timed out", act.Kind, act.Delta, act.ReplacementPhase, act.Reason)
	}
}

func TestConsolidationRuleChecks(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name  string
		pol   func(*Policy)
		light TypeState
		lower bool
	}{
		{"off by default", func(p *Policy) { p.Consolidation = false }, lightT4(2, 2, 1, 3), false},
		{"nothing movable", nil, lightT4(2, 2, 0, 3), false},
		{"an instance not ready", nil, lightT4(2, 1, 1, 3), false},
		{"no free slot", nil, lightT4(2, 2, 1, 0), false},
		{"max replicas reached", func(p *Policy) { p.MaxReplicas = 2 }, lightT4(2, 2, 1, 3), false},
		{"arrival rate a lower bound", nil, lightT4(2, 2, 1, 3), true},
	} {
		p := consolidatePolicy()
		if c.pol != nil {
			c.pol(&p)
		}
		o := Observation{Now: t0, ArrivalRate: consolidateW, Types: ts(c.light), ArrivalRateIsLowerBound: c.lower}
		if act := NewAutoscaler(p).Decide(o); act.Kind != ActionNone || act.Replacement != nil {
			t.Errorf("%s: %s %v (%s), want no move", c.name, act.Kind, act.Delta, act.Reason)
		}
	}
	o := Observation{Now: t0, ArrivalRate: consolidateW, Types: ts(lightT4(2, 2, 3, 3))}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "Movable") {
		t.Errorf("Movable 3 of 2 running: %v, want an error naming Movable", err)
	}
}
