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

// Summary compares hetsev-exact with default Kubernetes and the bound over
// all runs (costs summed over the runs).
type Summary struct {
	// CostRatioVsDefault is default-k8s-random's billed cost / hetsev-exact's.
	CostRatioVsDefault float64 `json:"cost_ratio_vs_default"`
	// MemoryCostRatioVsDefault is the same for HetSev 6.3's memory cost.
	MemoryCostRatioVsDefault float64 `json:"memory_cost_ratio_vs_default"`
	// GapToBound is hetsev-exact's billed cost / lower-bound's - 1.
	GapToBound float64 `json:"gap_to_bound"`
	// SLOAttainment is hetsev-exact's lowest service attainment.
	SLOAttainment float64 `json:"slo_attainment"`
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
	billed := func(p PolicyResult) float64 { return p.CostUSD }
	memory := func(p PolicyResult) float64 { return p.MemoryCostUSD }
	s := Summary{
		CostRatioVsDefault:       sum(PolicyDefault, billed) / sum(PolicyExact, billed),
		MemoryCostRatioVsDefault: sum(PolicyDefault, memory) / sum(PolicyExact, memory),
		GapToBound:               sum(PolicyExact, billed)/sum(PolicyBound, billed) - 1,
		SLOAttainment:            math.Inf(1),
	}
	for _, r := range runs {
		p, ok := r.Policy(PolicyExact)
		if !ok {
			s.SLOAttainment = math.NaN()
			break
		}
		s.SLOAttainment = math.Min(s.SLOAttainment, p.LowestSLOAttainment)
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
	return json.Marshal(map[string]*float64{
		"cost_ratio_vs_default":        num(s.CostRatioVsDefault),
		"memory_cost_ratio_vs_default": num(s.MemoryCostRatioVsDefault),
		"gap_to_bound":                 num(s.GapToBound),
		"slo_attainment":               num(s.SLOAttainment),
	})
}

// ResultLine is the RESULT line `make evaluate` ends with.
func (s Summary) ResultLine() string {
	return fmt.Sprintf("RESULT cost_ratio_vs_default=%.3f gap_to_bound=%.3f slo_attainment=%.4f",
		s.CostRatioVsDefault, s.GapToBound, s.SLOAttainment)
}

// WriteJSON writes the report, indented, to path.
func (rep Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// PrintTable writes r as a table: one row per policy and service, then
// one per policy over all services, then the recommended GPU mix.
func PrintTable(w io.Writer, r RunResult) {
	types := gpuTypesOf(r.Cluster)
	var cl []string
	for _, g := range r.Cluster {
		cl = append(cl, fmt.Sprintf("%d x %d %s", g.Nodes, g.GPUsPerNode, g.GPUType))
	}
	fmt.Fprintf(w, "\n== %s: %s ==\n", r.Name, r.Trace)
	fmt.Fprintf(w, "measured %.1f h of %.1f h; cluster %s; replayed in %.1f s\n",
		float64(r.MeasuredSeconds)/3600, float64(r.Seconds)/3600, strings.Join(cl, ", "), r.WallSeconds)
	fmt.Fprintf(w, "%-17s %-11s %10s %10s %9s %8s %8s %8s %12s\n",
		"policy", "service", "cost USD", "memory USD", "SLO att.", "GPU util", "actions", "dec. µs", "inst-h "+strings.Join(types, "/"))
	row := func(policy, service string, cost, mem, att, util float64, actions int, dec float64, hours map[string]float64) {
		var h []string
		for _, t := range types {
			h = append(h, fmt.Sprintf("%.0f", hours[t]))
		}
		fmt.Fprintf(w, "%-17s %-11s %10.2f %10.2f %9.4f %8.3f %8d %8.1f %12s\n", policy, service, cost, mem, att, util, actions, dec, strings.Join(h, "/"))
	}
	for _, p := range r.Policies {
		for _, s := range p.Services {
			row(p.Policy, s.Service, s.CostUSD, s.MemoryCostUSD, s.SLOAttainment, s.GPUUtilization, s.ScalingActions, s.DecisionTimeUs, s.InstanceHours)
		}
	}
	fmt.Fprintf(w, "%-17s %10s %10s %9s %8s %-21s %s\n", "policy (all)", "cost USD", "memory USD", "SLO att.", "GPU util", "GPU-h "+strings.Join(types, "/"), "peak GPUs "+strings.Join(types, "/"))
	for _, p := range r.Policies {
		var h, k []string
		for _, t := range types {
			h = append(h, fmt.Sprintf("%.0f", p.GPUHours[t]))
			k = append(k, fmt.Sprint(p.PeakGPUs[t]))
		}
		fmt.Fprintf(w, "%-17s %10.2f %10.2f %9.4f %8.3f %-21s %s\n", p.Policy, p.CostUSD, p.MemoryCostUSD, p.SLOAttainment, p.GPUUtilization, strings.Join(h, "/"), strings.Join(k, "/"))
	}
	if rec := r.Recommendation; rec.Policy != "" {
		var mix []string
		for _, t := range types {
			mix = append(mix, fmt.Sprintf("%d %s", rec.GPUs[t], t))
		}
		fmt.Fprintf(w, "recommended GPU mix (most GPUs %s held at once): %s; cost %.2f USD, lowest SLO attainment %.4f\n",
			rec.Policy, strings.Join(mix, ", "), rec.CostUSD, rec.SLOAttainment)
	}
}

func gpuTypesOf(cluster []NodeGroup) []string { return Config{Cluster: cluster}.gpuTypes() }
