package evaluate

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
)

// Report is what `make evaluate` writes to evaluation.json: every replay
// and the summary of the RESULT line.
type Report struct {
	Runs   []RunResult `json:"runs"`
	Result Summary     `json:"result"`
}

// Summary is the scoreboard over every replay (headline.go): one
// Headline per replay and their aggregates. Replays are weighed equally
// (geometric means), so a long trace does not hide a short one.
type Summary struct {
	Replays []Headline `json:"replays"`
	// CostRatioGeomean is the geometric mean of the cost ratios (best
	// peer point / hetsev-exact) of the replays where both qualify, and
	// CostRatioMin the smallest; BothQualify counts those replays. Above
	// 1, hetsev-exact is cheaper at the same SLO.
	CostRatioGeomean float64 `json:"cost_ratio_geomean"`
	CostRatioMin     float64 `json:"cost_ratio_min"`
	BothQualify      int     `json:"both_qualify"`
	// HetsevQualifies counts the replays on which hetsev-exact reached
	// every service's target.
	HetsevQualifies int `json:"hetsev_qualifies"`
	// Dominates and Dominated count the replays' Pareto verdicts.
	Dominates int `json:"dominates"`
	Dominated int `json:"dominated"`
	// GapToBound is the geometric mean over the replays of hetsev-exact's
	// billed cost / the lower bound's, minus 1.
	GapToBound float64 `json:"gap_to_bound"`
	// DefaultGeomean is CostRatioGeomean's judgement with every peer at
	// its default configuration (over the replays where both qualify
	// there); FlagsGeomean is hetsev-exact+flags' against the tuned peers.
	DefaultGeomean float64 `json:"default_view_geomean"`
	FlagsGeomean   float64 `json:"flags_view_geomean"`
	// Seeds counts replays times arrival seeds, and SeedsHetsevQualifies
	// and SeedsBothQualify those where hetsev-exact, and it and the best
	// peer, qualified (seeds.go).
	Seeds                int `json:"seeds"`
	SeedsHetsevQualifies int `json:"seeds_hetsev_qualifies"`
	SeedsBothQualify     int `json:"seeds_both_qualify"`
}

// isPeer says a policy is one users would run instead of hetsev.
func isPeer(name string) bool {
	return name != PolicyExact && name != PolicyHeuristic && name != PolicyBound && name != policyIdle && name != PolicyExactFlags
}

// Summarize judges each run (headline.go) and computes the Summary; an
// aggregate with no replay to take it from is NaN (null in JSON, "none"
// in the RESULT line).
func Summarize(runs []RunResult) Summary {
	s := Summary{CostRatioMin: math.NaN()}
	var ratios, bounds, defaults, flags []float64
	for _, r := range runs {
		r.Policies = slices.Clone(r.Policies)
		r.judge()
		h := headline(r)
		s.Replays = append(s.Replays, h)
		if h.HetsevQualifies {
			s.HetsevQualifies++
		}
		switch h.Verdict {
		case VerdictDominates:
			s.Dominates++
		case VerdictDominated:
			s.Dominated++
		}
		if h.BothQualify() && !math.IsNaN(h.CostRatio) {
			ratios = append(ratios, h.CostRatio)
			if !(h.CostRatio >= s.CostRatioMin) {
				s.CostRatioMin = h.CostRatio
			}
		}
		s.Seeds += h.Spread.Seeds
		s.SeedsHetsevQualifies += h.Spread.HetsevQualifies
		s.SeedsBothQualify += h.Spread.BothQualify
		bounds = append(bounds, h.BoundRatio)
		defaults = append(defaults, h.DefaultCostRatio)
		flags = append(flags, h.FlagsCostRatio)
	}
	s.CostRatioGeomean, s.BothQualify = geomean(ratios)
	s.DefaultGeomean, _ = geomean(defaults)
	s.FlagsGeomean, _ = geomean(flags)
	g, _ := geomean(bounds)
	s.GapToBound = g - 1
	return s
}

// MarshalJSON writes an aggregate without replays (NaN) as null.
func (s Summary) MarshalJSON() ([]byte, error) {
	type plain Summary
	return json.Marshal(struct {
		plain
		CostRatioGeomean *float64 `json:"cost_ratio_geomean"`
		CostRatioMin     *float64 `json:"cost_ratio_min"`
		GapToBound       *float64 `json:"gap_to_bound"`
		DefaultGeomean   *float64 `json:"default_view_geomean"`
		FlagsGeomean     *float64 `json:"flags_view_geomean"`
	}{plain(s), num(s.CostRatioGeomean), num(s.CostRatioMin), num(s.GapToBound), num(s.DefaultGeomean), num(s.FlagsGeomean)})
}

// MarshalJSON writes a missing ratio (NaN) as null.
func (h Headline) MarshalJSON() ([]byte, error) {
	type plain Headline
	return json.Marshal(struct {
		plain
		CostRatio        *float64 `json:"cost_ratio_vs_best_peer"`
		EqualECostRatio  *float64 `json:"equal_e_cost_ratio"`
		BoundRatio       *float64 `json:"bound_ratio"`
		DefaultCostRatio *float64 `json:"default_view_cost_ratio"`
		FlagsCostRatio   *float64 `json:"flags_view_cost_ratio"`
	}{plain(h), num(h.CostRatio), num(h.EqualECostRatio), num(h.BoundRatio), num(h.DefaultCostRatio), num(h.FlagsCostRatio)})
}

// num is v, or nil for NaN and infinities (JSON has neither).
func num(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// ResultLine is the final RESULT line `make evaluate` ends with: the
// geometric mean and the smallest of the cost ratios over the replays
// where hetsev-exact and the best peer both qualify, and how many those
// are; on how many replays hetsev-exact qualified and how many Pareto
// verdicts went each way; its geometric-mean gap to the bound; and the
// two second views.
func (s Summary) ResultLine() string {
	n := len(s.Replays)
	return fmt.Sprintf("RESULT cost_ratio_geomean=%s both_qualify=%d/%d cost_ratio_min=%s hetsev_qualifies=%d/%d dominates=%d/%d dominated=%d/%d seeds_hetsev_qualifies=%d/%d seeds_both_qualify=%d/%d gap_to_bound=%s default_view_geomean=%s flags_view_geomean=%s",
		fixed(s.CostRatioGeomean), s.BothQualify, n, fixed(s.CostRatioMin), s.HetsevQualifies, n, s.Dominates, n, s.Dominated, n,
		s.SeedsHetsevQualifies, s.Seeds, s.SeedsBothQualify, s.Seeds,
		fixed(s.GapToBound), fixed(s.DefaultGeomean), fixed(s.FlagsGeomean))
}

// PrintResults writes each replay's RESULT line, after a line with its
// Note when it has one, then the final RESULT line.
func (s Summary) PrintResults(w io.Writer) {
	for _, h := range s.Replays {
		if h.Note != "" {
			fmt.Fprintf(w, "%s: %s\n", h.Replay, h.Note)
		}
		fmt.Fprintln(w, h.ResultLine())
		for _, t := range h.Truths {
			fmt.Fprintln(w, truthLine(h.Replay, t))
		}
	}
	fmt.Fprintln(w, s.ResultLine())
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
				// A service without requests has attainment 0 by
				// convention (ratio) and missed nothing.
				if s.Requests > 0 && (low.Requests == 0 || s.SLOAttainment < low.SLOAttainment) {
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
	fmt.Fprintf(w, "%-19s %10s %10s %10s %9s %8s %9s %9s %8s %8s %8s %-17s %s\n", "policy (all)", "cost USD", "node USD", "memory USD", "SLO att.", "SLOs met",
		"qualifies", "excess", "GPU util", "req/s/GPU", "actions", "GPU-h "+strings.Join(types, "/"), "peak GPUs "+strings.Join(types, "/"))
	for _, p := range r.Policies {
		var h, k []string
		for _, t := range types {
			h = append(h, fmt.Sprintf("%.0f", p.GPUHours[t]))
			k = append(k, fmt.Sprint(p.PeakGPUs[t]))
		}
		if p.Bound {
			fmt.Fprintf(w, "%-19s %10.2f %10s %10s %9s %8s %9s %9s %8s %8s %8s %-17s %s\n", p.Policy, p.CostUSD, "-", "-", "-", "-", "-", "-", "-", "-", "-", strings.Join(h, "/"), "-")
			continue
		}
		fmt.Fprintf(w, "%-19s %10.2f %10.2f %10.2f %9s %8s %9t %9.0f %8.3f %8.1f %8d %-17s %s\n", p.Policy, p.CostUSD, p.NodeCostUSD, p.MemoryCostUSD,
			att(p.SLOAttainment, p.MeetsSLOs), fmt.Sprintf("%d/%d", p.SLOsMet, len(p.Services)), p.Qualifies, p.ExcessMissed, p.GPUUtilization, p.GoodputPerGPU,
			p.ScalingActions, strings.Join(h, "/"), strings.Join(k, "/"))
	}
	printSKUs(w, r)
	printILPCost(w, r)
	printInflationPrediction(w, r)
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

// printILPCost prints, for hetsev-heuristic and hetsev-exact, the billed
// GPU cost beside what their decisions assumed (PolicyResult.ILPCostUSD),
// so that a packing that bills more than the ILP counted shows.
func printILPCost(w io.Writer, r RunResult) {
	flavors := "whole GPUs only"
	if r.Flavors != "" {
		flavors = "flavors " + r.Flavors
	}
	for _, name := range []string{PolicyHeuristic, PolicyExact} {
		p, ok := r.Policy(name)
		if !ok {
			continue
		}
		billed := usageCostUSD(p)
		fmt.Fprintf(w, "%s (%s): billed %.2f USD, its ILP assumed %.2f USD (busy share x price x time over instances), billed/assumed %.3f\n",
			name, flavors, billed, p.ILPCostUSD, ratio(billed, p.ILPCostUSD))
		if line := declaredShareLine(p); line != "" {
			fmt.Fprintf(w, "%s packing (mean declared busy share of a billed GPU): %s\n", name, line)
		}
	}
}

// declaredShareLine says, per GPU type with billed GPU-hours, how much of
// the billed GPUs the declared busy shares filled
// (PolicyResult.DeclaredBusyShare); "" for none.
func declaredShareLine(p PolicyResult) string {
	types := slices.Sorted(maps.Keys(p.GPUHours))
	var parts []string
	for _, t := range types {
		if p.GPUHours[t] > 0 {
			parts = append(parts, fmt.Sprintf("%s %.3f over %.1f GPU-h", t, p.DeclaredBusyShare[t], p.GPUHours[t]))
		}
	}
	return strings.Join(parts, ", ")
}

// printCeilings names the services whose target (headline.go) is below
// their SL_min because their reactive ceiling is (ceiling.go), those
// on which hetsev-exact misses its target, and those on which a hetsev
// policy exceeds the ceiling (aboveCeilingLine).
func printCeilings(w io.Writer, r RunResult) {
	if len(r.Targets) != len(r.Services) {
		return
	}
	var out []string
	for k, s := range r.Services {
		if r.Targets[k] < s.SLMinOrDefault() {
			out = append(out, fmt.Sprintf("%s %.4f", s.Name, r.Targets[k]))
		}
	}
	fmt.Fprintf(w, "targets below SL_min (reactive ceiling - %.3f; no policy that provisions the cheapest type for rates it has seen does better): %d of %d services%s\n",
		CeilingMargin, len(out), len(r.Services), listed(out))
	if exact, ok := r.Policy(PolicyExact); ok {
		fmt.Fprintf(w, "%s below its target: %d services%s\n", PolicyExact, countBelow(r, exact), strings.TrimPrefix(belowTarget(r, exact), " on"))
	}
	if line := aboveCeilingLine(r); line != "" {
		fmt.Fprintln(w, line)
	}
}

// countBelow counts the services on which p is below its target.
func countBelow(r RunResult, p PolicyResult) int {
	n := 0
	for k, s := range p.Services {
		if k < len(r.Targets) && s.Requests > 0 && s.SLOAttainment < r.Targets[k] {
			n++
		}
	}
	return n
}

// listed is ": a, b" for a non-empty list, "" otherwise.
func listed(xs []string) string {
	if len(xs) == 0 {
		return ""
	}
	return ": " + strings.Join(xs, ", ")
}

func gpuTypesOf(cluster []NodeGroup) []string { return Config{Cluster: cluster}.gpuTypes() }

// usageCostUSD is what p's GPUs in use were billed (the sum over its
// services): its CostUSD, except on an owned fleet, which bills the whole
// cluster.
func usageCostUSD(p PolicyResult) float64 {
	sum := 0.0
	for _, s := range p.Services {
		sum += s.CostUSD
	}
	return sum
}

// printSKUs prints, per replayed policy, the GPU-hours billed as a share
// of each instance type (PolicyResult.SKUHours), most first: where packing
// pods onto a GPU asked for a larger instance than one GPU's.
func printSKUs(w io.Writer, r RunResult) {
	fmt.Fprintln(w, "GPU-hours billed as each instance type (a GPU's pods' CPU and memory pick the cheapest that holds them):")
	for _, p := range r.Policies {
		if p.Bound || len(p.SKUHours) == 0 {
			continue
		}
		names := slices.SortedFunc(maps.Keys(p.SKUHours), func(a, b string) int { return cmp.Compare(p.SKUHours[b], p.SKUHours[a]) })
		var parts []string
		for _, n := range names {
			label := n
			if n == "" {
				label = "catalog price"
			}
			parts = append(parts, fmt.Sprintf("%s %.1f", label, p.SKUHours[n]))
		}
		fmt.Fprintf(w, "  %-19s %s\n", p.Policy, strings.Join(parts, ", "))
	}
}
