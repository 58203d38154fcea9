package evaluate

import "math"

// The reactive ceiling of a service is the share of its requests a policy
// could answer at best if it knew the arrival rate of every second as soon
// as the second ended, scaled at once to the highest rate seen so far with
// the saturation threshold's headroom, never scaled in, ran at least one
// instance, and its new instances served O seconds after it asked for them
// (O: the shortest launch time of the GPU types that meet RT_max). Its
// capacity at trace second t is
//
//	c(t) = max(T_1, max_{u <= t-O} λ(u) / threshold)
//
// (λ: the service's arrival rate per second, T_1: the largest one-instance
// throughput among those types), and it answers min(λ(t), c(t)) of the
// requests of second t. It is not a bound over every policy: one that
// holds capacity for a rate it has never seen does better. It says how
// much of a service's SLO is within reach of any policy that provisions
// for what it has measured, as the hetsev policies and every peer here do:
// a burst from near nothing to hundreds of requests/s within one trace
// minute loses its first O seconds to every such policy.

// ReactiveCeilingTarget is issue 18's target for every service: at least
// 99.5 % of requests within RT_max.
const ReactiveCeilingTarget = 0.995

// reactiveCeiling is s's reactive ceiling over cfg's measured seconds, in
// [0, 1]; 1 when no request arrives, 0 when no GPU type meets RT_max.
func reactiveCeiling(cfg *Config, s *Service, threshold float64) float64 {
	launch, one := math.Inf(1), 0.0
	for _, name := range cfg.gpuTypes() {
		prof, ok := cfg.Profiles.Get(s.Model, name)
		if !ok || prof.LatencyMs+cfg.NetworkMs > s.RTMaxMs {
			continue
		}
		launch = math.Min(launch, prof.LaunchSeconds)
		one = math.Max(one, prof.ThroughputRPS)
	}
	if one == 0 || !(threshold > 0) {
		return 0
	}
	o := int(math.Ceil(launch))
	seen := 0.0 // highest λ(u) for u <= t - O
	var offered, answered float64
	for t := 0; t < len(cfg.Rates); t++ {
		if u := t - o; u >= 0 {
			seen = math.Max(seen, cfg.rate(s, u))
		}
		if t < cfg.MeasureFrom {
			continue
		}
		l := cfg.rate(s, t)
		offered += l
		answered += math.Min(l, math.Max(one, seen/threshold))
	}
	if offered == 0 {
		return 1
	}
	return answered / offered
}
