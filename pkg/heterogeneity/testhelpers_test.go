package heterogeneity

import "math"

// Profiled values from data/profiles (see profile_test.go, which checks them
// against the embedded CSV files): T_i requests/s, L_i ms, C_i USD/h, O_i s.
const (
	resnetT4RPS     = 363.0 // resnet50 on T4, batch 8
	resnetT4Ms      = 22.41
	resnetV100RPS   = 709.0 // resnet50 on V100, batch 8
	resnetV100Ms    = 11.5
	resnetLaunchS   = 20.0 // ESTIMATE, instance_estimates.csv
	bertT4RPS       = 69.3 // bert-large on T4, batch 8
	bertT4Ms        = 114.5
	bertV100RPS     = 208.0 // bert-large on V100, batch 8
	bertV100Ms      = 38.3
	bertLaunchS     = 40.0 // ESTIMATE
	priceT4USDh     = 0.526
	priceV100USDh   = 3.9015
	floatTolerance  = 1e-9
	resnetRTMaxMs   = 400.0 // HetSev section 6
	defaultLambdaPS = 0.01
)

func resnetT4(running, maxAdditional int) TypeState {
	return TypeState{GPUType: "T4", Running: running, ThroughputRPS: resnetT4RPS, LatencyMs: resnetT4Ms,
		PriceUSDPerHour: priceT4USDh, LaunchSeconds: resnetLaunchS, MaxAdditional: maxAdditional, BatchSize: 8}
}

func resnetV100(running, maxAdditional int) TypeState {
	return TypeState{GPUType: "V100-32GB", Running: running, ThroughputRPS: resnetV100RPS, LatencyMs: resnetV100Ms,
		PriceUSDPerHour: priceV100USDh, LaunchSeconds: resnetLaunchS, MaxAdditional: maxAdditional, BatchSize: 8}
}

func bertT4(running, maxAdditional int) TypeState {
	return TypeState{GPUType: "T4", Running: running, ThroughputRPS: bertT4RPS, LatencyMs: bertT4Ms,
		PriceUSDPerHour: priceT4USDh, LaunchSeconds: bertLaunchS, MaxAdditional: maxAdditional, BatchSize: 8}
}

func bertV100(running, maxAdditional int) TypeState {
	return TypeState{GPUType: "V100-32GB", Running: running, ThroughputRPS: bertV100RPS, LatencyMs: bertV100Ms,
		PriceUSDPerHour: priceV100USDh, LaunchSeconds: bertLaunchS, MaxAdditional: maxAdditional, BatchSize: 8}
}

func ts(types ...TypeState) []TypeState { return types }

func near(a, b float64) bool {
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
	}
	return math.Abs(a-b) <= floatTolerance*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// within reports whether got is within rel (relative) of want.
func within(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Abs(want)
}
