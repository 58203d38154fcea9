package scaler

// wholeGPUDefaults are the scaler's defaults without the three rules that
// ship on (instance flavors, SLO-model thresholds, the seasonal forecast):
// whole-GPU instances at the saturation threshold 0.8, the paper's policy.
// Tests of other mechanisms reason in its numbers; tests of those rules
// turn each on themselves.
func wholeGPUDefaults() Defaults {
	d := DefaultDefaults
	d.Flavors = nil
	d.ModelThresholds = false
	d.SeasonalForecast = false
	return d
}
