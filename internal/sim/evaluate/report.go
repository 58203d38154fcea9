package evaluate

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
)

// Report is what `make evaluate` writes to evaluation.json: every replay
// and the summary of the RESULT line.
type Report struct {
	Runs   []RunResult `json:"runs"`
	Result Summary     `json:"result"`
}

// Summary compares hetsev-exact with the peers and the bound over all runs
// (costs summed over the runs).
type Summary struct {
	// BestPeer is the cheapest peer (not hetsev, not the bound) that met
	// every service's SL_min in every run; "" if none did.
	// CostRatioVsBestPeer is its billed cost / hetsev-exact's (NaN
	// without one).
	BestPeer            string  `json:"best_peer"`
	CostRatioVsBestPeer float64 `json:"cost_ratio_vs_best_peer"`
	// CostRatioVsDefault is default-k8s-random's billed cost /
	// hetsev-exact's; MemoryCostRatioVsDefault the same for HetSev 6.3's
	// memory cost.
	CostRatioVsDefault       float64 `json:"cost_ratio_vs_default"`
	MemoryCostRatioVsDefault float64 `json:"memory_cost_ratio_vs_default"`
	// GapToBound is hetsev-exact's billed cost / lower-bound's - 1.
	GapToBound float64 `json:"gap_to_bound"`
	// SLOAttainmentMin is hetsev-exact's lowest service attainment over
	// all runs; HetsevMeetsSLOs says it met every service's SL_min.
	SLOAttainmentMin float64 `json:"slo_attainment_min"`
	HetsevMeetsSLOs  bool    `json:"hetsev_meets_slos"`
}

// isPeer says a policy is one users would run instead of hetsev.
func isPeer(name string) bool {
	return name != PolicyExact && name != PolicyHeuristic && name != PolicyBound
}

// Summarize computes the Summary; a ratio whose policies did not run is NaN.
func Summarize(runs []RunResult) Summary {
	sum := func(name string, cost func(PolicyResult) float64) float64 {
		total := 0.0
		for _, r := range runs {
			p, ok := r.Policy(name)
			if !ok {
				return math.NaN()
			}
			total += cost(p)
		}
		return total
	}
	meets := func(name string) bool {
		for _, r := range runs {
			if p, ok := r.Policy(name); !ok || !p.MeetsSLOs {
				return false
			}
		}
		return true
	}
	billed := func(p PolicyResult) float64 { return p.CostUSD }
	memory := func(p PolicyResult) float64 { return p.MemoryCostUSD }
	exact := sum(PolicyExact, billed)
	s := Summary{
		CostRatioVsBestPeer:      math.NaN(),
		CostRatioVsDefault:       sum(PolicyDefault, billed) / exact,
		MemoryCostRatioVsDefault: sum(PolicyDefault, memory) / sum(PolicyExact, memory),
		GapToBound:               exact/sum(PolicyBound, billed) - 1,
		SLOAttainmentMin:         math.Inf(1),
		HetsevMeetsSLOs:          meets(PolicyExact),
	}
	if len(runs) > 0 {
		best := math.Inf(1)
		for _, p := range runs[0].Policies {
			if c := sum(p.Policy, billed); isPeer(p.Policy) && meets(p.Policy) && c < best {
				best, s.BestPeer = c, p.Policy
			}
		}
		if s.BestPeer != "" {
			s.CostRatioVsBestPeer = best / exact
		}
	}
	for _, r := range runs {
		p, ok := r.Policy(PolicyExact)
		if !ok {
			s.SLOAttainmentMin = math.NaN()
			break
		}
		s.SLOAttainmentMin = math.Min(s.SLOAttainmentMin, p.LowestSLOAttainment)
	}
	return s
}

// MarshalJSON writes a ratio whose policies did not run (NaN) as null.
func (s Summary) MarshalJSON() ([]byte, error) {
	num := func(v float64) *float64 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		return &v
	}
	return json.Marshal(map[string]any{
		"best_peer":                    s.BestPeer,
		"cost_ratio_vs_best_peer":      num(s.CostRatioVsBestPeer),
		"cost_ratio_vs_default":        num(s.CostRatioVsDefault),
		"memory_cost_ratio_vs_default": num(s.MemoryCostRatioVsDefault),
		"gap_to_bound":                 num(s.GapToBound),
		"slo_attainment_min":           num(s.SLOAttainmentMin),
		"hetsev_meets_slos":            s.HetsevMeetsSLOs,
	})
}

// ResultLine is the RESULT line `make evaluate` ends with (issue 18): the
// cheapest peer that met every SLO over hetsev-exact (NaN when no peer
// met every SLO), hetsev-exact's lowest service attainment, and its gap
// to the bound.
func (s Summary) ResultLine() string {
	return fmt.Sprintf("RESULT cost_ratio_vs_best_peer=%.3f slo_attainment_min=%.4f gap_to_bound=%.3f",
		s.CostRatioVsBestPeer, s.SLOAttainmentMin, s.GapToBound)
}

// WriteJSON writes the report, indented, to path.
func (rep Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// perServiceRows is the most services PrintTable lists one by one; with
// more, it summarises them per policy (evaluation.json and the SLO chart
// keep every service).
const perServiceRows = 8

// PrintTable writes r as a table: one row per policy and service (or, with
// more than perServiceRows services, per policy: SLOs met, the lowest
// attainment and the highest p99), then one per policy over all services,
// then the recommended GPU mix. An attainment below the service's SL_min
// is marked "!"; the bound's row has its cost and fractional GPU-hours only.
func PrintTable(w io.Writer, r RunResult) {
	types := gpuTypesOf(r.Cluster)
	var cl []string
	for _, g := range r.Cluster {
		cl = append(cl, fmt.Sprintf("%d x %d %s", g.Nodes, g.GPUsPerNode, g.GPUType))
	}
	fmt.Fprintf(w, "\n== %s: %s ==\n", r.Name, r.Trace)
	mode := ""
	if r.GPUMode == GPUModeDRA {
		mode = "; GPU mode dra (ResourceSlices and ResourceClaims)"
	}
	fmt.Fprintf(w, "measured %.1f h of %.1f h; %d services; cluster %s%s; replayed in %.1f s\n",
		float64(r.MeasuredSeconds)/3600, float64(r.Seconds)/3600, len(r.Services), strings.Join(cl, ", "), mode, r.WallSeconds)
	att := func(v float64, meets bool) string {
		if meets {
			return fmt.Sprintf("%.4f", v)
		}
		return fmt.Sprintf("%.4f!", v)
	}
	p99 := func(s ServiceResult) string {
		if s.P99Shed {
			return "shed"
		}
		return fmt.Sprintf("%.0f", s.P99Ms)
	}
	if len(r.Services) <= perServiceRows {
		fmt.Fprintf(w, "%-19s %-11s %10s %10s %9s %6s %7s %8s %8s %8s %12s\n",
			"policy", "service", "cost USD", "memory USD", "SLO att.", "SL_min", "p99 ms", "GPU util", "actions", "dec. µs", "inst-h "+strings.Join(types, "/"))
		for _, p := range r.Policies {
			if p.Bound {
				continue
			}
			for _, s := range p.Services {
				var h []string
				for _, t := range types {
					h = append(h, fmt.Sprintf("%.0f", s.InstanceHours[t]))
				}
				fmt.Fprintf(w, "%-19s %-11s %10.2f %10.2f %9s %6.3f %7s %8.3f %8d %8.1f %12s\n", p.Policy, s.Service, s.CostUSD, s.MemoryCostUSD,
					att(s.SLOAttainment, s.MeetsSLO), s.ServiceLevel, p99(s), s.GPUUtilization, s.ScalingActions, s.DecisionTimeUs, strings.Join(h, "/"))
			}
		}
	} else {
		fmt.Fprintf(w, "%-19s %10s %-28s %s\n", "policy", "SLOs met", "lowest SLO att. (service)", "highest p99 ms (service)")
		for _, p := range r.Policies {
			if p.Bound || len(p.Services) == 0 {
				continue
			}
			low, high := p.Services[0], p.Services[0]
			for _, s := range p.Services {
				if s.SLOAttainment < low.SLOAttainment {
					low = s
				}
				if s.P99Shed || (!high.P99Shed && s.P99Ms > high.P99Ms) {
					high = s
				}
			}
			fmt.Fprintf(w, "%-19s %10s %-28s %s\n", p.Policy, fmt.Sprintf("%d/%d", p.SLOsMet, len(p.Services)),
				fmt.Sprintf("%s (%s)", att(low.SLOAttainment, low.MeetsSLO), low.Service), fmt.Sprintf("%s (%s)", p99(high), high.Service))
		}
	}
	fmt.Fprintf(w, "%-19s %10s %10s %10s %9s %8s %8s %8s %8s %-17s %s\n", "policy (all)", "cost USD", "node USD", "memory USD", "SLO att.", "SLOs met",
		"GPU util", "req/s/GPU", "actions", "GPU-h "+strings.Join(types, "/"), "peak GPUs "+strings.Join(types, "/"))
	for _, p := range r.Policies {
		var h, k []string
		for _, t := range types {
			h = append(h, fmt.Sprintf("%.0f", p.GPUHours[t]))
			k = append(k, fmt.Sprint(p.PeakGPUs[t]))
		}
		if p.Bound {
			fmt.Fprintf(w, "%-19s %10.2f %10s %10s %9s %8s %8s %8s %8s %-17s %s\n", p.Policy, p.CostUSD, "-", "-", "-", "-", "-", "-", "-", strings.Join(h, "/"), "-")
			continue
		}
		fmt.Fprintf(w, "%-19s %10.2f %10.2f %10.2f %9s %8s %8.3f %8.1f %8d %-17s %s\n", p.Policy, p.CostUSD, p.NodeCostUSD, p.MemoryCostUSD,
			att(p.SLOAttainment, p.MeetsSLOs), fmt.Sprintf("%d/%d", p.SLOsMet, len(p.Services)), p.GPUUtilization, p.GoodputPerGPU,
			p.ScalingActions, strings.Join(h, "/"), strings.Join(k, "/"))
	}
	printCeilings(w, r)
	if rec := r.Recommendation; rec.Policy != "" {
		var mix []string
		for _, t := range types {
			mix = append(mix, fmt.Sprintf("%d %s", rec.GPUs[t], t))
		}
		fmt.Fprintf(w, "recommended GPU mix (most GPUs %s held at once): %s; cost %.2f USD, lowest SLO attainment %.4f\n",
			rec.Policy, strings.Join(mix, ", "), rec.CostUSD, rec.SLOAttainment)
	}
}

// printCeilings names the services whose reactive ceiling (ceiling.go) is
// below ReactiveCeilingTarget, and those hetsev-exact leaves below the
// target although their ceiling is not: the misses a policy could fix.
func printCeilings(w io.Writer, r RunResult) {
	if len(r.ReactiveCeilings) != len(r.Services) {
		return
	}
	var out []string
	for k, c := range r.ReactiveCeilings {
		if c < ReactiveCeilingTarget {
			out = append(out, fmt.Sprintf("%s %.4f", r.Services[k].Name, c))
		}
	}
	fmt.Fprintf(w, "reactive ceiling below %.3f (no policy that provisions for rates it has seen does better): %d of %d services%s\n",
		ReactiveCeilingTarget, len(out), len(r.Services), listed(out))
	exact, ok := r.Policy(PolicyExact)
	if !ok || len(exact.Services) != len(r.Services) {
		return
	}
	var fixable []string
	for k, s := range exact.Services {
		if s.SLOAttainment < ReactiveCeilingTarget && r.ReactiveCeilings[k] >= ReactiveCeilingTarget {
			fixable = append(fixable, fmt.Sprintf("%s %.4f (ceiling %.4f)", s.Service, s.SLOAttainment, r.ReactiveCeilings[k]))
		}
	}
	fmt.Fprintf(w, "%s below %.3f where the ceiling is not: %d services%s\n", PolicyExact, ReactiveCeilingTarget, len(fixable), listed(fixable))
}

// listed is ": a, b" for a non-empty list, "" otherwise.
func listed(xs []string) string {
	if len(xs) == 0 {
		return ""
	}
	return ": " + strings.Join(xs, ", ")
}

func gpuTypesOf(cluster []NodeGroup) []string { return Config{Cluster: cluster}.gpuTypes() }
