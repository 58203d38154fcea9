package heterogeneity

import (
	"testing"
	"time"
)

// The switches that turn each brake and forecast off for an ablation
// (Policy.DisableForecast, DisableStabilizedScaleIn, ScaleInStabilization,
// ScaleInHysteresis): each changes a hand-worked decision, and their zero
// values change none. Sequences and arithmetic as in burst_test.go:
// BERT-large on T4 (T_i 69.3 requests/s, O_i 40 s, 0.526 USD/h).

// forecastSteps: W 42.3 -> 102.3 requests/s over a minute on 2 T4 with
// MinReplicas 2. With the forecast, 142.3 requests/s in 40 s calls for +1
// T4 (TestDecideLaunchTimeForecast).
func forecastSteps(last step) []step {
	return risingSteps([]float64{42.3, 57.3, 72.3, 87.3, 102.3}, last)
}

// stabilizedSteps: W 205 on 8 T4 (bar 0.7: -3), then 39.3 on 5 T4 a
// minute later, which alone needs one T4 (39.3 / 69.3 = 0.57 <= 0.7).
func stabilizedSteps(second step) []step {
	return []step{
		{at: 0, w: 205, types: ts(bertT4(8, 10)), kind: ActionScaleIn, delta: []int{-3}, objective: -3 * priceT4USDh},
		second,
	}
}

var (
	forecastOut   = step{kind: ActionScaleOut, delta: []int{1}, objective: 0.7364, reason: "at the forecast"}
	stabilizedOne = step{at: time.Minute, w: 39.3, types: ts(bertT4(5, 10)), kind: ActionScaleIn, delta: []int{-1}, objective: -priceT4USDh,
		reason: "the highest W of the last 5m0s, allows none: one instance at a time"}
	unstabilizedFour = step{at: time.Minute, w: 39.3, types: ts(bertT4(5, 10)), kind: ActionScaleIn, delta: []int{-4}, objective: -4 * priceT4USDh,
		reason: "-4 T4"}
)

func TestPolicySwitchesChangeDecisions(t *testing.T) {
	minTwo := func(p *Policy) { p.MinReplicas = 2 }
	hyst := func(p *Policy) { p.ScaleInHysteresis = 0.1 }
	runDecisionCases(t, []decisionCase{
		{
			// Without the forecast the saturation is the measured 102.3 /
			// 138.6 = 0.74, within 0.8: HetSev 4.1 waits.
			name:   "DisableForecast: scale-out on the measured W only",
			policy: exactPolicy(minTwo, func(p *Policy) { p.DisableForecast = true }),
			steps: forecastSteps(step{kind: ActionNone, delta: []int{0},
				reason: "saturation 0.74 within threshold 0.80; 2 running, at min replicas 2"}),
		},
		{
			// Without rule 2 the exact solver removes the 4 T4 the current W
			// does not need at once.
			name:   "DisableStabilizedScaleIn: the solver's removal on the current W",
			policy: exactPolicy(hyst, func(p *Policy) { p.DisableStabilizedScaleIn = true }),
			steps:  stabilizedSteps(unstabilizedFour),
		},
		{
			// A 1-minute window no longer holds the 205 requests/s seen 60 s
			// before, although the cool-down is still 5 minutes.
			name:   "ScaleInStabilization shorter than the cool-down",
			policy: exactPolicy(hyst, func(p *Policy) { p.ScaleInStabilization = time.Minute }),
			steps:  stabilizedSteps(unstabilizedFour),
		},
		{
			// No cool-down and no window of its own: the window is 0 and
			// nothing is stabilized.
			name:   "ScaleInCoolDown 0 without ScaleInStabilization",
			policy: exactPolicy(hyst, func(p *Policy) { p.ScaleInCoolDown = 0 }),
			steps:  stabilizedSteps(unstabilizedFour),
		},
		{
			// No cool-down with a 5-minute window of its own: the
			// stabilization stays, so the cool-down is measured apart.
			name: "ScaleInCoolDown 0 with ScaleInStabilization 5 min",
			policy: exactPolicy(hyst, func(p *Policy) {
				p.ScaleInCoolDown, p.ScaleInStabilization = 0, 5*time.Minute
			}),
			steps: stabilizedSteps(stabilizedOne),
		},
		{
			// Bar 0.8 instead of 0.7: 205 / 0.8 = 256.25 requests/s fits in
			// 4 T4 (277.2), so 4 go instead of 3.
			name:   "ScaleInHysteresis 0: the bar is the threshold",
			policy: exactPolicy(),
			steps: []step{{at: 0, w: 205, types: ts(bertT4(8, 10)), kind: ActionScaleIn, delta: []int{-4}, objective: -4 * priceT4USDh,
				reason: "0.74 after the action (bar 0.80): -4 T4"}},
		},
	})
}

// TestPolicySwitchesZeroValues: the zero values of the switches are the
// rules as they are: the forecast fires, the scale-in is stabilized over
// the cool-down, and spelling the window out as ScaleInCoolDown or turning
// both switches explicitly on gives the same decisions.
func TestPolicySwitchesZeroValues(t *testing.T) {
	minTwo := func(p *Policy) { p.MinReplicas = 2 }
	hyst := func(p *Policy) { p.ScaleInHysteresis = 0.1 }
	explicit := func(p *Policy) {
		p.ScaleInStabilization = p.ScaleInCoolDown
		p.DisableForecast, p.DisableStabilizedScaleIn = false, false
	}
	runDecisionCases(t, []decisionCase{
		{name: "forecast on by default", policy: exactPolicy(minTwo), steps: forecastSteps(forecastOut)},
		{name: "forecast, window spelled out", policy: exactPolicy(minTwo, explicit), steps: forecastSteps(forecastOut)},
		{name: "stabilized by default", policy: exactPolicy(hyst), steps: stabilizedSteps(stabilizedOne)},
		{name: "stabilized, window spelled out", policy: exactPolicy(hyst, explicit), steps: stabilizedSteps(stabilizedOne)},
	})
	if err := testPolicy(func(p *Policy) { p.ScaleInStabilization = -time.Second }).Validate(); err == nil {
		t.Error("Validate accepts ScaleInStabilization -1s")
	}
}
