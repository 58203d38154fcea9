package evaluate

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// The scoreboard judges every policy of a replay against the same
// achievable target per service, so that one service no reactive policy
// can serve (a function jumping from 1 to 458 requests/s within a minute)
// does not leave every replay without a winner:
//
//	τ_s = min(SL_min,s, ceiling_s − CeilingMargin)
//
// (ceiling_s: the service's reactive ceiling, ceiling.go). A policy
// qualifies on a replay when every service reaches τ_s; its excess missed
// requests are
//
//	E = Σ_s max(0, τ_s · R_s − answered_s)
//
// (R_s: requests that arrived in the measured seconds; answered_s: those
// answered within RT_max), the requests it lost beyond what its targets
// allow. The replay's cost ratio is the best qualifying peer point's
// billed cost over hetsev-exact's, defined only when both qualify; when
// one does not, the Pareto verdict and the cost ratio at equal E judge.
// On an owned fleet every policy costs the same (Config.Owned): there is
// no cost ratio, and the Pareto verdict compares E alone (a point that
// misses fewer requests than every peer point dominates).

// CeilingMargin is how far below its reactive ceiling a service's target
// stands: the ceiling answers at once what a real policy measures over a
// rate window and decides on every interval.
const CeilingMargin = 0.005

// serviceTarget is τ_s for a service of SL_min slMin and reactive ceiling
// ceiling.
func serviceTarget(slMin, ceiling float64) float64 {
	return math.Min(slMin, ceiling-CeilingMargin)
}

// judge sets r.Targets from the services' SL_min and reactive ceilings,
// and each replayed policy's Qualifies and ExcessMissed.
func (r *RunResult) judge() {
	targets := make([]float64, len(r.Services))
	for k, s := range r.Services {
		c := 1.0
		if k < len(r.ReactiveCeilings) {
			c = r.ReactiveCeilings[k]
		}
		targets[k] = serviceTarget(s.SLMinOrDefault(), c)
	}
	r.score(targets)
}

// score sets r.Targets to targets and judges each replayed policy
// against them.
func (r *RunResult) score(targets []float64) {
	r.Targets = targets
	for i := range r.Policies {
		p := &r.Policies[i]
		if p.Bound {
			continue
		}
		p.Qualifies, p.ExcessMissed = true, 0
		for k, s := range p.Services {
			if k >= len(r.Targets) {
				break
			}
			want := r.Targets[k] * float64(s.Requests)
			if float64(s.WithinSLO) < want {
				p.ExcessMissed += want - float64(s.WithinSLO)
				p.Qualifies = false
			}
		}
	}
}

// Headline is one replay's line of the scoreboard. Peers are scored at
// their best setting (tuning.go) among those replayed: the cheapest that
// qualifies, else the one with the least E; hetsev-exact as installed
// (hetsev-scaler's defaults).
type Headline struct {
	Replay string `json:"replay"`
	// BestPeer is the peer scored, at BestPeerSetting; PeerQualifies
	// says it qualifies (else no peer's setting did and it has the least
	// E). "" when no peer ran. PeerCostUSD and PeerExcessMissed are its.
	BestPeer         string  `json:"best_peer"`
	BestPeerSetting  string  `json:"best_peer_setting"`
	PeerQualifies    bool    `json:"peer_qualifies"`
	PeerCostUSD      float64 `json:"peer_cost_usd"`
	PeerExcessMissed float64 `json:"peer_excess_missed"`
	// CostRatio is BestPeer's billed cost / hetsev-exact's when both
	// qualify (above 1: hetsev is cheaper at the same SLO); NaN (null in
	// JSON) otherwise, where Verdict and EqualECostRatio judge.
	CostRatio       float64 `json:"cost_ratio_vs_best_peer"`
	HetsevQualifies bool    `json:"hetsev_qualifies"`
	HetsevCostUSD   float64 `json:"hetsev_cost_usd"`
	// ExcessMissed is hetsev-exact's E, requests.
	ExcessMissed float64 `json:"excess_missed"`
	// Verdict is hetsev-exact's point against every peer point replayed
	// (paretoVerdict): dominates, dominated or neither.
	Verdict string `json:"pareto_verdict"`
	// EqualECostRatio is the peers' frontier cost at hetsev-exact's E
	// (interpolated) / hetsev-exact's cost; NaN when no peer point
	// misses as few requests.
	EqualECostRatio float64 `json:"equal_e_cost_ratio"`
	// BoundRatio is hetsev-exact's billed cost / the lower bound's; NaN
	// when either is missing.
	BoundRatio float64 `json:"bound_ratio"`
	// DefaultPeer and DefaultCostRatio are the same judgement with every
	// peer at its default configuration (the main run) alone.
	DefaultPeer      string  `json:"default_view_peer"`
	DefaultCostRatio float64 `json:"default_view_cost_ratio"`
	// FlagsCostRatio is BestPeer's cost / hetsev-exact+flags' (hetsev-exact
	// with make evaluate's non-default flags) when both qualify, NaN
	// otherwise or when it did not run; FlagsQualifies and
	// FlagsExcessMissed are its.
	FlagsCostRatio    float64 `json:"flags_view_cost_ratio"`
	FlagsQualifies    bool    `json:"flags_view_qualifies"`
	FlagsExcessMissed float64 `json:"flags_view_excess_missed"`
	// Spread is the outcome over the arrival seeds, this run's first
	// (seeds.go).
	Spread SeedSpread `json:"seed_spread"`
	// Truths are hetsev-exact and the peers under interference the
	// decision model does not define (seeds.go).
	Truths []SeedResult `json:"interference_truths,omitempty"`
	// Note says why the ratio is missing; "" when hetsev-exact and the
	// best peer both qualify.
	Note string `json:"note,omitempty"`
}

// BothQualify says hetsev-exact and the peer scored both qualify: the
// replay has a cost ratio at the same SLO.
func (h Headline) BothQualify() bool { return h.HetsevQualifies && h.PeerQualifies }

// headline computes r's Headline (r judged).
func headline(r RunResult) Headline {
	h := Headline{Replay: r.Name, CostRatio: math.NaN(), BoundRatio: math.NaN(), EqualECostRatio: math.NaN(),
		DefaultCostRatio: math.NaN(), FlagsCostRatio: math.NaN()}
	exact, okExact := r.Policy(PolicyExact)
	peers := peerPoints(r, false)
	best, okPeer := bestPoint(peers)
	var notes []string
	if okPeer {
		h.BestPeer, h.BestPeerSetting, h.PeerQualifies = best.Policy, best.Setting.String(), best.Qualifies
		h.PeerCostUSD, h.PeerExcessMissed = best.CostUSD, best.ExcessMissed
		if !h.PeerQualifies {
			notes = append(notes, fmt.Sprintf("no peer qualifies at any setting replayed; %s at %s has the least excess missed requests (%.0f)", h.BestPeer, h.BestPeerSetting, best.ExcessMissed))
		}
	} else {
		notes = append(notes, "no peer ran")
	}
	if !okExact {
		h.Note = strings.Join(append(notes, PolicyExact+" did not run"), "; ")
		return h
	}
	h.HetsevQualifies, h.ExcessMissed, h.HetsevCostUSD = exact.Qualifies, exact.ExcessMissed, exact.CostUSD
	if !exact.Qualifies {
		notes = append(notes, fmt.Sprintf("%s does not qualify (%.0f excess missed requests%s)", PolicyExact, exact.ExcessMissed, belowTarget(r, exact)))
	}
	if okPeer && h.BothQualify() && exact.CostUSD > 0 && !r.Owned {
		h.CostRatio = best.CostUSD / exact.CostUSD
	}
	if r.Owned {
		notes = append(notes, fmt.Sprintf("an owned fleet: every policy is billed all of it (%.2f USD) and is judged on its excess missed requests", exact.CostUSD))
	}
	if okPeer {
		h.Verdict, h.EqualECostRatio = paretoVerdict(ParetoPoint{CostUSD: exact.CostUSD, ExcessMissed: exact.ExcessMissed}, peers)
	}
	if def, ok := bestPoint(peerPoints(r, true)); ok {
		h.DefaultPeer = def.Policy
		if def.Qualifies && exact.Qualifies && exact.CostUSD > 0 && !r.Owned {
			h.DefaultCostRatio = def.CostUSD / exact.CostUSD
		}
	}
	if f, ok := r.Policy(PolicyExactFlags); ok {
		h.FlagsQualifies, h.FlagsExcessMissed = f.Qualifies, f.ExcessMissed
		if okPeer && best.Qualifies && f.Qualifies && f.CostUSD > 0 && !r.Owned {
			h.FlagsCostRatio = best.CostUSD / f.CostUSD
		}
	}
	if b, ok := r.Policy(PolicyBound); ok && b.CostUSD > 0 && !r.Owned {
		h.BoundRatio = exact.CostUSD / b.CostUSD
	}
	first := SeedResult{Seed: r.Seed, HetsevCostUSD: exact.CostUSD, HetsevQualifies: exact.Qualifies, HetsevExcessMissed: exact.ExcessMissed,
		BestPeer: best.Policy, PeerCostUSD: best.CostUSD, PeerQualifies: best.Qualifies}
	h.Spread = spread(append([]SeedResult{first}, r.Seeds...))
	if r.Owned { // every seed's costs are the fleet's: no ratio to spread
		h.Spread.RatioMean, h.Spread.RatioLow, h.Spread.RatioHigh = math.NaN(), math.NaN(), math.NaN()
	}
	h.Truths = r.Truths
	h.Note = strings.Join(notes, "; ")
	return h
}

// The Pareto verdicts of hetsev's point against the peers' points.
const (
	VerdictDominates = "dominates"
	VerdictDominated = "dominated"
	VerdictNeither   = "neither"
)

// paretoVerdict judges point h (cost, E) against every peer point:
// dominated when some peer point costs no more and misses no more
// requests (and is better in one); dominates when not dominated and h
// lies below the peers' frontier at its E (the least cost of missing at
// most that many requests, interpolated between the frontier's points),
// or, where no peer point misses as few requests, when h also costs no
// more than the peer point that misses the fewest; neither otherwise.
// equalE is the frontier's cost at h's E over h's cost (NaN when no peer
// point misses as few requests or h costs nothing).
func paretoVerdict(h ParetoPoint, peers []ParetoPoint) (verdict string, equalE float64) {
	equalE = math.NaN()
	for _, p := range peers {
		if p.CostUSD <= h.CostUSD && p.ExcessMissed <= h.ExcessMissed && (p.CostUSD < h.CostUSD || p.ExcessMissed < h.ExcessMissed) {
			verdict = VerdictDominated
		}
	}
	f := frontier(peers)
	if len(f) == 0 {
		return VerdictNeither, equalE
	}
	at, ok := frontierCost(f, h.ExcessMissed)
	if ok && h.CostUSD > 0 {
		equalE = at / h.CostUSD
	}
	if verdict != "" {
		return verdict, equalE
	}
	if (ok && at > h.CostUSD) || (!ok && h.CostUSD <= f[0].CostUSD) {
		return VerdictDominates, equalE
	}
	return VerdictNeither, equalE
}

// frontier is the points no other point dominates, by E ascending (so
// cost descending), one per E.
func frontier(pts []ParetoPoint) []ParetoPoint {
	s := slices.Clone(pts)
	slices.SortFunc(s, func(a, b ParetoPoint) int {
		return cmp.Or(cmp.Compare(a.ExcessMissed, b.ExcessMissed), cmp.Compare(a.CostUSD, b.CostUSD))
	})
	var out []ParetoPoint
	for _, p := range s {
		if len(out) == 0 || p.CostUSD < out[len(out)-1].CostUSD {
			if len(out) > 0 && out[len(out)-1].ExcessMissed == p.ExcessMissed {
				continue
			}
			out = append(out, p)
		}
	}
	return out
}

// frontierCost is the cost of frontier f at E = e, interpolated linearly
// between its points and flat beyond its last; false when e is below its
// first point's E (no peer point misses as few requests).
func frontierCost(f []ParetoPoint, e float64) (float64, bool) {
	if len(f) == 0 || e < f[0].ExcessMissed {
		return 0, false
	}
	for i := 1; i < len(f); i++ {
		a, b := f[i-1], f[i]
		if e <= b.ExcessMissed {
			w := (e - a.ExcessMissed) / (b.ExcessMissed - a.ExcessMissed)
			return a.CostUSD + w*(b.CostUSD-a.CostUSD), true
		}
	}
	return f[len(f)-1].CostUSD, true
}

// belowTarget lists, as ": a 0.9812 < 0.9850, ...", the services on which
// p is below its target (at most five).
func belowTarget(r RunResult, p PolicyResult) string {
	var out []string
	for k, s := range p.Services {
		if k < len(r.Targets) && s.Requests > 0 && s.SLOAttainment < r.Targets[k] {
			out = append(out, fmt.Sprintf("%s %.4f < %.4f", s.Service, s.SLOAttainment, r.Targets[k]))
		}
	}
	if len(out) > 5 {
		out = append(out[:5], fmt.Sprintf("%d more", len(out)-5))
	}
	if len(out) == 0 {
		return ""
	}
	return " on " + strings.Join(out, ", ")
}

// ResultLine is the replay's RESULT line; a ratio that is missing prints
// as "none" (the Note says why).
func (h Headline) ResultLine() string {
	peer, setting, verdict := h.BestPeer, h.BestPeerSetting, h.Verdict
	if peer == "" {
		peer, setting = "none", "none"
	}
	if verdict == "" {
		verdict = "none"
	}
	return fmt.Sprintf("RESULT replay=%s cost_ratio_vs_best_peer=%s best_peer=%s best_peer_setting=%s both_qualify=%t hetsev_qualifies=%t excess_missed=%.0f peer_qualifies=%t pareto_verdict=%s equal_e_cost_ratio=%s %s default_view_cost_ratio=%s flags_view_cost_ratio=%s",
		h.Replay, fixed(h.CostRatio), peer, setting, h.BothQualify(), h.HetsevQualifies, h.ExcessMissed, h.PeerQualifies, verdict,
		fixed(h.EqualECostRatio), h.Spread.tokens(), fixed(h.DefaultCostRatio), fixed(h.FlagsCostRatio))
}

// fixed prints v with three decimals, or "none" when it is not a number.
func fixed(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "none"
	}
	return fmt.Sprintf("%.3f", v)
}

// geomean is the geometric mean of the finite, positive values of vs and
// how many there were; NaN for none.
func geomean(vs []float64) (float64, int) {
	sum, n := 0.0, 0
	for _, v := range vs {
		if v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) {
			sum += math.Log(v)
			n++
		}
	}
	if n == 0 {
		return math.NaN(), 0
	}
	return math.Exp(sum / float64(n)), n
}
