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
// allow. The replay's cost ratio is the cheapest qualifying peer's billed
// cost over hetsev-exact's; with no qualifying peer it is the peer with
// the least E (then the cheaper), and the headline says so.

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

// Headline is one replay's line of the scoreboard.
type Headline struct {
	Replay string `json:"replay"`
	// BestPeer is the cheapest peer that qualifies; PeerQualifies false
	// says none did and BestPeer is the one with the least excess missed
	// requests. "" when no peer ran.
	BestPeer      string `json:"best_peer"`
	PeerQualifies bool   `json:"peer_qualifies"`
	// CostRatio is BestPeer's billed cost / hetsev-exact's; NaN (null in
	// JSON) when either did not run or hetsev-exact cost nothing.
	CostRatio       float64 `json:"cost_ratio_vs_best_peer"`
	HetsevQualifies bool    `json:"hetsev_qualifies"`
	// ExcessMissed is hetsev-exact's E, requests.
	ExcessMissed float64 `json:"excess_missed"`
	// BoundRatio is hetsev-exact's billed cost / the lower bound's; NaN
	// when either is missing.
	BoundRatio float64 `json:"bound_ratio"`
	// Note says why the ratio is flagged or missing; "" when hetsev-exact
	// and the best peer both qualify.
	Note string `json:"note,omitempty"`
}

// headline computes r's Headline (r judged).
func headline(r RunResult) Headline {
	h := Headline{Replay: r.Name, CostRatio: math.NaN(), BoundRatio: math.NaN()}
	exact, okExact := r.Policy(PolicyExact)
	var peers []PolicyResult
	for _, p := range r.Policies {
		if isPeer(p.Policy) {
			peers = append(peers, p)
		}
	}
	// Qualifying first, then the least E, then the cheapest.
	slices.SortStableFunc(peers, func(a, b PolicyResult) int {
		if a.Qualifies != b.Qualifies {
			if a.Qualifies {
				return -1
			}
			return 1
		}
		if !a.Qualifies {
			if c := cmp.Compare(a.ExcessMissed, b.ExcessMissed); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.CostUSD, b.CostUSD)
	})
	var notes []string
	if len(peers) > 0 {
		h.BestPeer, h.PeerQualifies = peers[0].Policy, peers[0].Qualifies
		if !h.PeerQualifies {
			notes = append(notes, fmt.Sprintf("no peer qualifies; %s has the least excess missed requests (%.0f)", h.BestPeer, peers[0].ExcessMissed))
		}
	} else {
		notes = append(notes, "no peer ran")
	}
	if okExact {
		h.HetsevQualifies, h.ExcessMissed = exact.Qualifies, exact.ExcessMissed
		if !exact.Qualifies {
			notes = append(notes, fmt.Sprintf("%s does not qualify (%.0f excess missed requests%s)", PolicyExact, exact.ExcessMissed, belowTarget(r, exact)))
		}
		if len(peers) > 0 && exact.CostUSD > 0 {
			h.CostRatio = peers[0].CostUSD / exact.CostUSD
		}
		if b, ok := r.Policy(PolicyBound); ok && b.CostUSD > 0 {
			h.BoundRatio = exact.CostUSD / b.CostUSD
		}
	} else {
		notes = append(notes, PolicyExact+" did not run")
	}
	h.Note = strings.Join(notes, "; ")
	return h
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
	peer := h.BestPeer
	if peer == "" {
		peer = "none"
	}
	return fmt.Sprintf("RESULT replay=%s cost_ratio_vs_best_peer=%s best_peer=%s hetsev_qualifies=%t excess_missed=%.0f peer_qualifies=%t",
		h.Replay, fixed(h.CostRatio), peer, h.HetsevQualifies, h.ExcessMissed, h.PeerQualifies)
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
