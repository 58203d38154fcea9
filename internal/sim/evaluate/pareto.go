package evaluate

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/hetsev/hetsev/internal/sim/trace"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

// The Pareto view: "cheaper at the same SLO" is a statement about curves,
// not points. Every policy in the sweep is replayed with every service's
// saturation threshold set to each of the sweep's values (peers and hetsev
// alike: each plans its headroom from it), and each replay gives a point
// (excess missed requests E, billed cost), judged against the main run's
// targets so that every point of a replay is measured against the same
// τ_s. A policy whose curve lies below and left of another's is cheaper
// at every attainment both reach.

// DefaultSweepThresholds are the saturation thresholds of the sweep.
var DefaultSweepThresholds = []float64{0.6, 0.7, 0.8, 0.9}

// DefaultSweepPolicies are the policies swept on the grid: hetsev-exact,
// whose curve the Pareto plot draws beside the peers' points. The peers'
// points come from their search for their best setting (tuning.go).
var DefaultSweepPolicies = []string{PolicyExact}

// ParetoPoint is one policy's outcome at one setting: a saturation
// threshold of the sweep, or a peer's setting of tune (tuning.go).
type ParetoPoint struct {
	Policy string `json:"policy"`
	// Setting is the point's knobs; Threshold is its target
	// (Setting.Threshold), 0 for the default configuration.
	Setting   PeerSetting `json:"setting"`
	Threshold float64     `json:"threshold"`
	CostUSD   float64     `json:"cost_usd"`
	// ExcessMissed is E against the main run's targets; Qualifies says it
	// is 0.
	ExcessMissed float64 `json:"excess_missed"`
	Qualifies    bool    `json:"qualifies"`
}

// ParseThresholds reads a comma-separated list of saturation thresholds,
// each in (0, 1]; "" is none. Errors name the flag.
func ParseThresholds(s string) ([]float64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v > 0 && v <= 1) {
			return nil, fmt.Errorf("--sweep-thresholds: %s: want a saturation threshold in (0, 1]", trace.Quote(f))
		}
		if slices.Contains(out, v) {
			return nil, fmt.Errorf("--sweep-thresholds: %v repeated", v)
		}
		out = append(out, v)
	}
	return out, nil
}

// sweep replays cfg once per threshold and policy and returns their
// points, judged against main's targets, ordered by threshold, then by
// policy. Every policy of a point, hetsev's included, runs every service
// at the point's threshold (hetsev without the thresholds it derives from
// the SLO model), so that the points compare policies at equal headroom.
// A threshold at which every service of the main run already had that
// threshold reuses the main run's results instead of replaying them,
// unless hetsev derived its own. Each policy is replayed alone, side by
// side with the others (eachReplay): a policy's replay depends only on
// the Config and the seed, not on the policies beside it.
func sweep(cfg Config, main RunResult, thresholds []float64, policies []string) ([]ParetoPoint, error) {
	type point struct {
		th     float64
		policy string
	}
	var points []point
	for _, th := range thresholds {
		for _, name := range policies {
			points = append(points, point{th, name})
		}
	}
	got := make([]*ParetoPoint, len(points))
	err := eachReplay(len(points), func(i int) error {
		th, name := points[i].th, points[i].policy
		var r RunResult
		if sameThreshold(cfg.Services, th) && !cfg.Knobs.ModelThresholds {
			r = main
			r.Policies = slices.Clone(main.Policies)
		} else {
			c := cfg
			c.Services = slices.Clone(cfg.Services)
			for k := range c.Services {
				c.Services[k].SaturationThreshold = th
			}
			c.Knobs.ModelThresholds = false
			c.Policies = []string{name}
			var err error
			if r, err = Evaluate(c); err != nil {
				return fmt.Errorf("sweep at threshold %v: %w", th, err)
			}
		}
		r.score(main.Targets)
		if p, ok := r.Policy(name); ok {
			got[i] = &ParetoPoint{Policy: name, Setting: PeerSetting{Threshold: th}, Threshold: th, CostUSD: p.CostUSD, ExcessMissed: p.ExcessMissed, Qualifies: p.Qualifies}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []ParetoPoint
	for _, p := range got {
		if p != nil {
			out = append(out, *p)
		}
	}
	return out, nil
}

// sameThreshold says every service runs at saturation threshold th
// (its own, or the default policy's).
func sameThreshold(services []Service, th float64) bool {
	for _, s := range services {
		t := s.SaturationThreshold
		if t == 0 {
			t = heterogeneity.DefaultPolicy().SaturationThreshold
		}
		if math.Abs(t-th) > 1e-12 {
			return false
		}
	}
	return true
}

// curve names the line a point lies on: its policy and its knobs other
// than the target, e.g. "knative-kpa window=30s".
func (p ParetoPoint) curve() string {
	if k := p.Setting.knobs(); k != (PeerSetting{}) {
		return p.Policy + " " + k.String()
	}
	return p.Policy
}

// PrintPareto writes r's points (tune's and the sweep's), one line per
// curve: cost and excess missed requests at each target ("*" marks a
// qualifying point).
func PrintPareto(w io.Writer, r RunResult) {
	if len(r.Pareto) == 0 {
		return
	}
	fmt.Fprintf(w, "Settings replayed (target: cost USD / excess missed requests E; * qualifies):\n")
	var curves []string
	for _, p := range r.Pareto {
		if !slices.Contains(curves, p.curve()) {
			curves = append(curves, p.curve())
		}
	}
	for _, c := range curves {
		var cells []string
		for _, p := range r.Pareto {
			if p.curve() != c {
				continue
			}
			mark := ""
			if p.Qualifies {
				mark = "*"
			}
			cells = append(cells, fmt.Sprintf("%.3g: %.2f / %.0f%s", p.Threshold, p.CostUSD, p.ExcessMissed, mark))
		}
		fmt.Fprintf(w, "  %-32s %s\n", c, strings.Join(cells, "   "))
	}
}
