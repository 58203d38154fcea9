package heterogeneity

// Stage 2 of a decision, forecast: W_f, the arrival rate the later stages
// plan for, from the memory stage 1 keeps. Its rules, each with its
// switch and its row in make evaluate's ablation (docs/evaluation.md):
//
//   - the launch-time forecast (burst.go, rule 1): W plus its rise per
//     second over Policy.ForecastSpan times the launch time of the types
//     that pass the SLO check, when that exceeds the threshold's headroom;
//     Policy.DisableForecast, row "no launch-time forecast";
//   - the seasonal forecast (seasonal.go): with Policy.SeasonalForecast,
//     the rate at this phase of the service's last two periods, when its
//     own per-minute history shows a period; it only ever raises W_f; row
//     "no seasonal forecast".
//
// A lower bound of W (Observation.ArrivalRateIsLowerBound) is never
// extrapolated: a rise of a lower bound may be coverage, not load.

// forecast returns W_f for obs, and the seasonal forecast with whether it
// is what raised W_f (for the decision's Reason).
func (a *Autoscaler) forecast(obs Observation) (f forecast, season seasonal, raised bool) {
	f = a.rates.forecastOf(obs, a.Policy)
	season = a.seasonal.seasonalForecastOf(obs, a.Policy)
	f, raised = season.raise(f)
	return f, season, raised
}
