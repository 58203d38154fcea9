package evaluate

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// Each peer at its best. A peer's users set its knobs per service, so a
// peer scored at its defaults is a straw man. The knobs tuned here are
// the ones its users set:
//
//   - the target, as a share of an instance's throughput T_i (the
//     saturation threshold): Knative's autoscaling.knative.dev/target
//     and target-utilization, an HPA's target value, the headroom of
//     Mélange's and INFaaS's capacity plans, the fraction peer's HPA;
//   - the HPA's sync period (kube-controller-manager's
//     --horizontal-pod-autoscaler-sync-period: 15 s by default, 5 s as
//     operators lower it) for the peers decided at Knobs.Interval;
//   - Knative's stable window (autoscaling.knative.dev/window: 60 s by
//     default, 30 s), its panic window 10 % of it.
//
// For each peer and each combination of its other knobs, tune searches
// the target by bisection on the qualifying boundary: a lower target
// buys headroom (fewer missed requests, more cost), so the cheapest
// qualifying target is near the highest one that qualifies. Every
// setting replayed is judged against the main run's targets τ_s and kept
// as a point of the Pareto view; the peer is scored at its best point
// (bestPoint): the cheapest that qualifies, else the one with the least
// excess missed requests E. The search assumes qualification falls as the
// target rises only to choose where to look: the pick is over every point
// replayed, so a non-monotone peer is still scored at its best point seen.

// Tuning is how tune searches each peer's target.
type Tuning struct {
	// Low and High bound the target searched, in (0, 1]; Anchor is the
	// first target tried (the evaluator's default threshold 0.8).
	Low, Anchor, High float64
	// Steps is how many bisection steps follow the anchor and the end of
	// the range it points to (0: the two only).
	Steps int
	// Policies are the peers tuned (the others are scored at their
	// default configuration only).
	Policies []string
}

// DefaultTuning searches targets in [0.5, 0.97] (Knative's documented
// range of target utilization is up to 100 %, and below 50 % no
// operator of a GPU service keeps idle headroom) from 0.8 with two
// bisection steps: four replays per peer and knob combination, a target
// within 0.04 above 0.8 and 0.075 below it.
func DefaultTuning() Tuning {
	return Tuning{Low: 0.5, Anchor: 0.8, High: 0.97, Steps: 2, Policies: TunedPeers}
}

// TunedPeers are the peers tune searches by default: every peer.
var TunedPeers = []string{PolicyDefault, PolicyHPABestType, PolicyKnativeKPA, PolicyMelange, PolicyMelangeAIBrix, PolicyINFaaS, PolicyKAIFraction, PolicyHAMiCores}

// Validate reports a range or step count tune cannot search, naming the
// flag.
func (t Tuning) Validate() error {
	if !(t.Low > 0 && t.Low <= t.Anchor && t.Anchor <= t.High && t.High <= 1) {
		return fmt.Errorf("--tune-targets: want 0 < low <= anchor <= high <= 1, got %v,%v,%v", t.Low, t.Anchor, t.High)
	}
	if t.Steps < 0 || t.Steps > 8 {
		return fmt.Errorf("--tune-steps: %d; want 0 to 8", t.Steps)
	}
	for _, p := range t.Policies {
		if !isPeer(p) || !knownPolicy(p) {
			return fmt.Errorf("--tune-policies: %s is not a peer (%s)", p, strings.Join(TunedPeers, ", "))
		}
	}
	return nil
}

// PeerSetting is one setting of a peer's knobs.
type PeerSetting struct {
	// Threshold is every service's target as a share of T_i; 0: each
	// service's own (the default configuration).
	Threshold float64 `json:"threshold,omitempty"`
	// SyncPeriodSeconds is the decision interval of a peer decided at
	// Knobs.Interval (the HPA's sync period); 0: the replay's (15 s).
	SyncPeriodSeconds int `json:"sync_period_s,omitempty"`
	// StableWindowSeconds is knative-kpa's stable window; 0: 60 s.
	StableWindowSeconds int `json:"stable_window_s,omitempty"`
}

// String is the setting as one token, e.g. "target=0.85,sync=5s", or
// "default" for the default configuration.
func (s PeerSetting) String() string {
	var out []string
	if s.Threshold > 0 {
		out = append(out, fmt.Sprintf("target=%.3g", s.Threshold))
	}
	if s.SyncPeriodSeconds > 0 {
		out = append(out, fmt.Sprintf("sync=%ds", s.SyncPeriodSeconds))
	}
	if s.StableWindowSeconds > 0 {
		out = append(out, fmt.Sprintf("window=%ds", s.StableWindowSeconds))
	}
	if len(out) == 0 {
		return "default"
	}
	return strings.Join(out, ",")
}

// knobs is s without its target: the curve a point lies on.
func (s PeerSetting) knobs() PeerSetting { s.Threshold = 0; return s }

// apply is c with s's knobs set for policy name alone replayed.
func (s PeerSetting) apply(c Config, name string) Config {
	c.Services = slices.Clone(c.Services)
	if s.Threshold > 0 {
		for k := range c.Services {
			c.Services[k].SaturationThreshold = s.Threshold
		}
	}
	if s.SyncPeriodSeconds > 0 {
		c.Knobs.Interval = time.Duration(s.SyncPeriodSeconds) * time.Second
	}
	if s.StableWindowSeconds > 0 {
		c.Knobs.KPAStableWindow = time.Duration(s.StableWindowSeconds) * time.Second
	}
	c.Policies = []string{name}
	return c
}

// knobCombinations are the settings of policy name's knobs other than its
// target that tune tries, the default first.
func knobCombinations(name string) []PeerSetting {
	switch name {
	case PolicyDefault, PolicyHPABestType, PolicyKAIFraction, PolicyHAMiCores, PolicyINFaaS:
		return []PeerSetting{{}, {SyncPeriodSeconds: 5}}
	case PolicyKnativeKPA:
		return []PeerSetting{{}, {StableWindowSeconds: 30}}
	}
	return []PeerSetting{{}}
}

// roundTarget rounds a target to 0.005, so settings print plainly.
func roundTarget(v float64) float64 { return math.Round(v*200) / 200 }

// searchTarget replays at targets chosen by bisection on the qualifying
// boundary within t's range and returns every point replayed, by eval
// (one replay at a target). It stops early when the anchor's side of the
// range ends in the same verdict as the anchor (the end qualifies, or the
// low end does not).
func (t Tuning) searchTarget(eval func(th float64) (ParetoPoint, error)) ([]ParetoPoint, error) {
	var pts []ParetoPoint
	try := func(th float64) (bool, error) {
		for _, p := range pts {
			if p.Threshold == th {
				return p.Qualifies, nil
			}
		}
		p, err := eval(th)
		if err != nil {
			return false, err
		}
		pts = append(pts, p)
		return p.Qualifies, nil
	}
	a := roundTarget(t.Anchor)
	ok, err := try(a)
	if err != nil {
		return nil, err
	}
	// q qualifies, nq does not; end is the far end of the anchor's side.
	q, nq, end := a, roundTarget(t.High), roundTarget(t.High)
	if !ok {
		q, nq, end = roundTarget(t.Low), a, roundTarget(t.Low)
	}
	if end == a {
		return pts, nil
	}
	endOK, err := try(end)
	if err != nil {
		return nil, err
	}
	if endOK == ok {
		return pts, nil // the verdict does not change across the range
	}
	for range t.Steps {
		mid := roundTarget((q + nq) / 2)
		if mid == q || mid == nq {
			break
		}
		ok, err := try(mid)
		if err != nil {
			return nil, err
		}
		if ok {
			q = mid
		} else {
			nq = mid
		}
	}
	return pts, nil
}

// tune replays each peer of t.Policies that main ran at the settings its
// search chooses (searchTarget per knob combination), judged against
// main's targets, and returns the points ordered by policy, knobs and
// target. The combinations run side by side (eachReplay); a policy's
// replay depends only on its Config and the seed.
func tune(cfg Config, main RunResult, t Tuning) ([]ParetoPoint, error) {
	type job struct {
		name  string
		knobs PeerSetting
	}
	var jobs []job
	for _, name := range t.Policies {
		if _, ok := main.Policy(name); !ok {
			continue
		}
		for _, k := range knobCombinations(name) {
			jobs = append(jobs, job{name, k})
		}
	}
	got := make([][]ParetoPoint, len(jobs))
	err := eachReplay(len(jobs), func(i int) error {
		j := jobs[i]
		pts, err := t.searchTarget(func(th float64) (ParetoPoint, error) {
			s := j.knobs
			s.Threshold = th
			return replayPoint(cfg, main, j.name, s)
		})
		got[i] = pts
		return err
	})
	if err != nil {
		return nil, err
	}
	var out []ParetoPoint
	for _, pts := range got {
		out = append(out, pts...)
	}
	sortPoints(out)
	return out, nil
}

// replayPoint replays policy name alone at setting s and judges it
// against main's targets. A setting that changes nothing of cfg reuses
// main's result.
func replayPoint(cfg Config, main RunResult, name string, s PeerSetting) (ParetoPoint, error) {
	var r RunResult
	if s.knobs() == (PeerSetting{}) && (s.Threshold == 0 || sameThreshold(cfg.Services, s.Threshold)) {
		r = main
		r.Policies = slices.Clone(main.Policies)
	} else {
		var err error
		if r, err = Evaluate(s.apply(cfg, name)); err != nil {
			return ParetoPoint{}, fmt.Errorf("%s at %s: %w", name, s, err)
		}
	}
	r.score(main.Targets)
	p, ok := r.Policy(name)
	if !ok {
		return ParetoPoint{}, fmt.Errorf("%s at %s: not replayed", name, s)
	}
	return ParetoPoint{Policy: name, Setting: s, Threshold: s.Threshold, CostUSD: p.CostUSD, ExcessMissed: p.ExcessMissed, Qualifies: p.Qualifies}, nil
}

// sortPoints orders points by policy (PolicyNames order), knobs, target.
func sortPoints(pts []ParetoPoint) {
	slices.SortStableFunc(pts, func(a, b ParetoPoint) int {
		return cmp.Or(cmp.Compare(slices.Index(PolicyNames, a.Policy), slices.Index(PolicyNames, b.Policy)),
			cmp.Compare(a.Setting.knobs().String(), b.Setting.knobs().String()),
			cmp.Compare(a.Threshold, b.Threshold))
	})
}

// bestPoint is where a policy is scored among its points: the cheapest
// that qualifies, else the one with the least E (then the cheaper); false
// for none.
func bestPoint(pts []ParetoPoint) (ParetoPoint, bool) {
	if len(pts) == 0 {
		return ParetoPoint{}, false
	}
	best := pts[0]
	for _, p := range pts[1:] {
		if betterPoint(p, best) {
			best = p
		}
	}
	return best, true
}

// betterPoint says a scores ahead of b: it qualifies and b does not; both
// qualify and a is cheaper; neither does and a misses fewer requests, or
// as few and is cheaper.
func betterPoint(a, b ParetoPoint) bool {
	if a.Qualifies != b.Qualifies {
		return a.Qualifies
	}
	if !a.Qualifies && a.ExcessMissed != b.ExcessMissed {
		return a.ExcessMissed < b.ExcessMissed
	}
	return a.CostUSD < b.CostUSD
}

// peerPoints are the points r scores peers over: each peer's default
// configuration (the main run) and, with defaults false, every tuned
// point of r.Pareto.
func peerPoints(r RunResult, defaults bool) []ParetoPoint {
	var out []ParetoPoint
	for _, p := range r.Policies {
		if isPeer(p.Policy) {
			out = append(out, ParetoPoint{Policy: p.Policy, CostUSD: p.CostUSD, ExcessMissed: p.ExcessMissed, Qualifies: p.Qualifies})
		}
	}
	if defaults {
		return out
	}
	for _, p := range r.Pareto {
		if isPeer(p.Policy) {
			out = append(out, p)
		}
	}
	return out
}

// PrintTuning writes, per peer, the setting it is scored at with its cost
// and E, and how many settings were replayed.
func PrintTuning(w io.Writer, r RunResult) {
	pts := peerPoints(r, false)
	if len(pts) == 0 {
		return
	}
	fmt.Fprintf(w, "Peers at their best (cheapest qualifying setting, else least excess missed requests E; %d settings replayed):\n", len(r.Pareto))
	fmt.Fprintf(w, "  %-19s %-26s %10s %10s  %s\n", "peer", "chosen setting", "cost USD", "E", "default: cost USD / E")
	for _, name := range PolicyNames {
		var mine []ParetoPoint
		for _, p := range pts {
			if p.Policy == name {
				mine = append(mine, p)
			}
		}
		best, ok := bestPoint(mine)
		if !ok {
			continue
		}
		q := ""
		if !best.Qualifies {
			q = " (never qualifies)"
		}
		def := mine[0] // the main run's, peerPoints' first of each policy
		fmt.Fprintf(w, "  %-19s %-26s %10.2f %10.0f  %.2f / %.0f%s\n", name, best.Setting, best.CostUSD, best.ExcessMissed, def.CostUSD, def.ExcessMissed, q)
	}
}
