package heterogeneity

// Stage 1 of a decision, observe: refuse what cannot be decided on, then
// remember the observation. Its memory serves the later stages:
//
//   - the arrival rates of the last max(stabilization window, forecast
//     span + one decision interval) (burst.go, rates): the launch-time
//     forecast's regression and the stabilized scale-in's peak;
//   - the highest rate per minute (seasonal.go, seasonalHistory): the
//     seasonal forecast's periods.
//
// Both follow the observations whatever is done with the action, so an
// action that is never committed still leaves them current.

// refuse returns why obs cannot be decided on under the policy ("" when
// it can) and the policy's solver.
func (a *Autoscaler) refuse(obs Observation) (Solver, string) {
	if a == nil {
		return nil, "no autoscaler (nil)"
	}
	if err := a.Policy.Validate(); err != nil {
		return nil, "invalid " + oneLine(err)
	}
	if err := obs.Validate(); err != nil {
		return nil, "invalid " + oneLine(err)
	}
	solver, _ := a.Policy.solver() // known: the policy is valid
	return solver, ""
}

// observe records obs in the rate memories and returns the saturation
// W / capacity it was taken at.
func (a *Autoscaler) observe(obs Observation) float64 {
	a.rates.observe(obs, max(a.Policy.stabilizationWindow(), a.Policy.forecastSpan()+a.Policy.DecisionInterval))
	a.seasonal.observe(obs.Now, obs.ArrivalRate)
	return Saturation(obs.ArrivalRate, obs.Types)
}
