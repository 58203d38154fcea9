package heterogeneity

import (
	"testing"
	"time"
)

// A proposed scale-out that is not committed (its replica write failed)
// starts no cool-down and keeps the saturation timer: the next proposal,
// a second later, scales out again at once; once committed, the next
// scale-out waits a full ScaleOutPeriod again and scale-in waits out the
// cool-down.
func TestProposeRecordsNothingUntilCommit(t *testing.T) {
	a := NewAutoscaler(testPolicy(func(p *Policy) { p.ScaleOutPeriod = 30 * time.Second }))
	obs := func(at time.Duration, w float64) Observation {
		return Observation{Now: t0.Add(at), ArrivalRate: w, Types: ts(resnetT4(2, 4), resnetV100(0, 0))}
	}
	if act := a.Propose(obs(0, 700)); act.Kind != ActionNone {
		t.Fatalf("first observation above the threshold: %s (%q), want None (waiting the period)", act.Kind, act.Reason)
	}
	act := a.Propose(obs(30*time.Second, 700))
	if act.Kind != ActionScaleOut {
		t.Fatalf("after the period: %s (%q), want ScaleOut", act.Kind, act.Reason)
	}
	if st := a.State(); !st.LastScaleOut.IsZero() || !st.AboveThresholdSince.Equal(t0) {
		t.Errorf("state after an uncommitted scale-out %+v, want no last scale-out and above since t0", st)
	}
	again := a.Propose(obs(31*time.Second, 700))
	if again.Kind != ActionScaleOut {
		t.Fatalf("a second after an uncommitted scale-out: %s (%q), want ScaleOut at once", again.Kind, again.Reason)
	}
	a.Commit(again)
	if st := a.State(); !st.LastScaleOut.Equal(t0.Add(31*time.Second)) || !st.AboveThresholdSince.IsZero() {
		t.Errorf("state after Commit %+v, want last scale-out t0+31s and the saturation timer restarted", st)
	}
	if act := a.Propose(obs(32*time.Second, 700)); act.Kind != ActionNone {
		t.Errorf("a second after a committed scale-out: %s (%q), want None (waiting the period)", act.Kind, act.Reason)
	}
	if act := a.Propose(obs(time.Minute, 10)); act.Kind != ActionNone {
		t.Errorf("low load within the cool-down of a committed scale-out: %s (%q), want None", act.Kind, act.Reason)
	}
}
