package evaluate

import (
	"fmt"
	"math"
	"strings"
)

// The reactive ceiling of a service is the share of its requests a policy
// could answer at best if it knew the arrival rate of every second as soon
// as the second ended, scaled at once to the highest rate seen so far with
// the saturation threshold's headroom, never scaled in, ran at least one
// instance, and its new instances served O seconds after it asked for
// them. It runs on the type a cost-minded policy uses: the cheapest per
// request among the cluster's types that meet RT_max (cheapestSuitable,
// batch latency plus the network delay), with that type's one-instance
// throughput T_1 and its own launch time O. Its capacity at trace second
// t is
//
//	c(t) = max(T_1, max_{u <= t-O} λ(u) / threshold)
//
// (λ: the service's arrival rate per second), and it answers
// min(λ(t), c(t)) of the requests of second t. It is not a bound over
// every policy: one that holds capacity for a rate it has never seen, or
// that runs a faster, dearer type, does better. It says how much of a
// service's SLO is within reach of a policy that provisions the cheapest
// type for what it has measured: a burst from near nothing to hundreds of
// requests/s within one trace minute loses its first O seconds to every
// such policy. The scoreboard's target for the service (serviceTarget)
// stands just below it.

// reactiveCeiling is s's reactive ceiling over cfg's measured seconds, in
// [0, 1]; 1 when no request arrives, 0 when no GPU type meets RT_max.
func reactiveCeiling(cfg *Config, s *Service, threshold float64) float64 {
	var offers []typeOffer
	launch := map[string]float64{}
	for _, name := range cfg.gpuTypes() {
		prof, ok := cfg.Profiles.Get(s.Model, name)
		gt, okg := cfg.Catalog.ByName(name)
		if !ok || !okg || prof.LatencyMs+cfg.NetworkMs > s.RTMaxMs {
			continue
		}
		offers = append(offers, typeOffer{gpuType: name, priceUSDPerHour: gt.PriceUSDPerHour,
			throughputRPS: prof.ThroughputRPS, latencyMs: prof.LatencyMs + cfg.NetworkMs})
		launch[name] = prof.LaunchSeconds
	}
	i := cheapestSuitable(offers, s.RTMaxMs)
	if i < 0 || !(threshold > 0) {
		return 0
	}
	one := offers[i].throughputRPS
	o := int(math.Ceil(launch[offers[i].gpuType]))
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

// aboveCeilingLine is the report's line of the services on which a hetsev
// policy's SLO attainment exceeds the service's reactive ceiling: what no
// policy that provisions for the rates it has measured reaches, and a
// forecast of rates not yet seen (the seasonal forecast) can. Per hetsev
// policy of r, e.g.
//
//	above reactive ceiling: hetsev-exact: fn-17 (0.9910 > ceiling 0.9620); hetsev-heuristic: none
//
// with "(seasonal forecast on)" after "ceiling" when r ran with it; ""
// when no hetsev policy ran or r has no ceilings. Services without
// requests are left out.
func aboveCeilingLine(r RunResult) string {
	if len(r.ReactiveCeilings) != len(r.Services) {
		return ""
	}
	var parts []string
	for _, name := range []string{PolicyExact, PolicyHeuristic} {
		p, ok := r.Policy(name)
		if !ok {
			continue
		}
		above := aboveCeiling(r, p)
		if len(above) == 0 {
			above = []string{"none"}
		}
		parts = append(parts, name+": "+strings.Join(above, ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	on := ""
	if r.SeasonalForecast {
		on = " (seasonal forecast on)"
	}
	return fmt.Sprintf("above reactive ceiling%s: %s", on, strings.Join(parts, "; "))
}

// aboveCeiling lists, as "fn-17 (0.9910 > ceiling 0.9620)", the services
// with requests on which p's SLO attainment exceeds their reactive ceiling
// in r.
func aboveCeiling(r RunResult, p PolicyResult) []string {
	var above []string
	for k, s := range p.Services {
		if k < len(r.ReactiveCeilings) && s.Requests > 0 && s.SLOAttainment > r.ReactiveCeilings[k] {
			above = append(above, fmt.Sprintf("%s (%.4f > ceiling %.4f)", s.Service, s.SLOAttainment, r.ReactiveCeilings[k]))
		}
	}
	return above
}
