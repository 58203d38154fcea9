package ilp

import "math"

// Profiled values from data/profiles (pkg/catalog checks them against the
// embedded CSV files): T_i requests/s, C_i USD/h, O_i s.
const (
	resnetT4RPS    = 363.0 // resnet50 on T4, batch 8
	resnetV100RPS  = 709.0 // resnet50 on V100, batch 8
	resnetLaunchS  = 20.0  // ESTIMATE, instance_estimates.csv
	priceT4USDh    = 0.526
	priceV100USDh  = 3.9015
	floatTolerance = 1e-9
)

func resnetT4(running int) Type {
	return Type{Name: "T4", Running: running, ThroughputRPS: resnetT4RPS,
		PriceUSDPerHour: priceT4USDh, LaunchSeconds: resnetLaunchS}
}

func resnetV100(running int) Type {
	return Type{Name: "V100-32GB", Running: running, ThroughputRPS: resnetV100RPS,
		PriceUSDPerHour: priceV100USDh, LaunchSeconds: resnetLaunchS}
}

func ts(types ...Type) []Type { return types }

func near(a, b float64) bool {
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
	}
	return math.Abs(a-b) <= floatTolerance*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}
