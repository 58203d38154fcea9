package evaluate

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// One arrival seed is one draw of the Poisson arrivals and the routing:
// a qualification that flips with the seed is no verdict. replaySeeds
// replays a replay again at more seeds with hetsev-exact as installed and
// every peer at the setting it was scored at on the first seed (an
// operator tunes once, then runs), judged against the first seed's
// targets; the headline gives the ratio's mean and 95 % interval over
// the seeds where both qualify, and counts qualification per seed.

// SeedResult is one seed's scoreboard of a replay, or one interference
// truth's (InterferenceTruth > 0: Config.InterferenceTruth).
type SeedResult struct {
	Seed               uint64  `json:"seed"`
	InterferenceTruth  float64 `json:"interference_truth,omitempty"`
	HetsevCostUSD      float64 `json:"hetsev_cost_usd"`
	HetsevQualifies    bool    `json:"hetsev_qualifies"`
	HetsevExcessMissed float64 `json:"hetsev_excess_missed"`
	// BestPeer is the best of the peers at their chosen settings at this
	// seed (bestPoint), with its cost and whether it qualifies.
	BestPeer      string  `json:"best_peer"`
	PeerCostUSD   float64 `json:"peer_cost_usd"`
	PeerQualifies bool    `json:"peer_qualifies"`
}

// ratio is the seed's peer cost / hetsev-exact's when both qualify, NaN
// otherwise.
func (s SeedResult) ratio() float64 {
	if !s.HetsevQualifies || !s.PeerQualifies || s.HetsevCostUSD <= 0 {
		return math.NaN()
	}
	return s.PeerCostUSD / s.HetsevCostUSD
}

// ParseSeeds reads --seeds: a count n >= 1 of arrival seeds, first, first
// + 1, ..., first + n - 1. Errors name the flag.
func ParseSeeds(n int, first uint64) ([]uint64, error) {
	if n < 1 || n > 50 {
		return nil, fmt.Errorf("--seeds: %d; want 1 to 50 arrival seeds", n)
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = first + uint64(i)
	}
	return out, nil
}

// chosenSettings are the peers that contend for best in main, each with
// the setting it is scored at (contenderSlack).
func chosenSettings(main RunResult) map[string]PeerSetting {
	out := map[string]PeerSetting{}
	byPeer := map[string][]ParetoPoint{}
	for _, p := range peerPoints(main, false) {
		byPeer[p.Policy] = append(byPeer[p.Policy], p)
	}
	var chosen []ParetoPoint
	for _, pts := range byPeer {
		if b, ok := bestPoint(pts); ok {
			chosen = append(chosen, b)
		}
	}
	best, ok := bestPoint(chosen)
	if !ok {
		return out
	}
	leastE := math.Inf(1)
	for _, b := range chosen {
		if !b.Qualifies {
			leastE = min(leastE, b.ExcessMissed)
		}
	}
	for _, b := range chosen {
		switch {
		case b.Policy == best.Policy,
			b.Qualifies && best.Qualifies && b.CostUSD <= contenderSlack*best.CostUSD,
			!b.Qualifies && b.ExcessMissed <= contenderSlack*leastE && (!best.Qualifies || b.CostUSD < best.CostUSD):
			out[b.Policy] = b.Setting
		}
	}
	return out
}

// contenderSlack bounds the peers replayed at other seeds and truths
// besides the best peer at its chosen setting: a qualifying peer whose
// chosen point costs at most this times the best's, and a peer that does
// not qualify whose chosen point misses at most this times the fewest
// excess requests E of those that do not (and, when the best qualifies,
// costs less than it: it can win only by qualifying). From one arrival
// seed to the next a policy's cost moves by about 0.01 % and its E by
// about 0.2 % (the rates, not the single arrivals, set its replicas; make
// evaluate's five seeds), so a peer outside these bounds cannot become
// the best at another seed.
const contenderSlack = 1.05

// replaySeeds replays cfg at each of seeds with hetsev-exact and each peer
// that contends for best at its chosen setting (chosenSettings), side by
// side (eachReplay), judged against main's targets.
func replaySeeds(cfg Config, main RunResult, seeds []uint64) ([]SeedResult, error) {
	vs := make([]variant, len(seeds))
	for i, s := range seeds {
		vs[i] = variant{seed: s}
	}
	return replayVariants(cfg, main, vs)
}

// replayTruths replays cfg at its own seed under each interference truth
// (Config.InterferenceTruth), as replaySeeds.
func replayTruths(cfg Config, main RunResult, truths []float64) ([]SeedResult, error) {
	vs := make([]variant, len(truths))
	for i, k := range truths {
		vs[i] = variant{seed: cfg.Seed, truth: k}
	}
	return replayVariants(cfg, main, vs)
}

// variant is one replay of the same workload: an arrival seed and an
// interference truth.
type variant struct {
	seed  uint64
	truth float64
}

// replayVariants replays cfg at each variant with hetsev-exact and each
// contending peer at its chosen setting (chosenSettings), side by side,
// judged against main's targets.
func replayVariants(cfg Config, main RunResult, variants []variant) ([]SeedResult, error) {
	settings := chosenSettings(main)
	type job struct {
		v       variant
		name    string
		setting PeerSetting
	}
	var jobs []job
	for _, v := range variants {
		if _, ok := main.Policy(PolicyExact); ok {
			jobs = append(jobs, job{v, PolicyExact, PeerSetting{}})
		}
		for _, name := range PolicyNames {
			if s, ok := settings[name]; ok {
				jobs = append(jobs, job{v, name, s})
			}
		}
	}
	got := make([]ParetoPoint, len(jobs))
	err := eachReplay(len(jobs), func(i int) error {
		j := jobs[i]
		c := cfg
		c.Seed, c.InterferenceTruth = j.v.seed, j.v.truth
		r, err := Evaluate(j.setting.apply(c, j.name))
		if err != nil {
			return fmt.Errorf("seed %d, interference truth %v: %s at %s: %w", j.v.seed, j.v.truth, j.name, j.setting, err)
		}
		r.score(main.Targets)
		p, _ := r.Policy(j.name)
		got[i] = ParetoPoint{Policy: j.name, Setting: j.setting, CostUSD: p.CostUSD, ExcessMissed: p.ExcessMissed, Qualifies: p.Qualifies}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []SeedResult
	for _, v := range variants {
		s := SeedResult{Seed: v.seed, InterferenceTruth: v.truth}
		var peers []ParetoPoint
		for i, j := range jobs {
			if j.v != v {
				continue
			}
			if j.name == PolicyExact {
				s.HetsevCostUSD, s.HetsevQualifies, s.HetsevExcessMissed = got[i].CostUSD, got[i].Qualifies, got[i].ExcessMissed
			} else {
				peers = append(peers, got[i])
			}
		}
		if b, ok := bestPoint(peers); ok {
			s.BestPeer, s.PeerCostUSD, s.PeerQualifies = b.Policy, b.CostUSD, b.Qualifies
		}
		out = append(out, s)
	}
	return out, nil
}

// SeedSpread is a replay's outcome over its seeds.
type SeedSpread struct {
	Seeds int `json:"seeds"`
	// HetsevQualifies and BothQualify count the seeds where hetsev-exact,
	// and it and the best peer, qualify.
	HetsevQualifies int `json:"hetsev_qualifies"`
	BothQualify     int `json:"both_qualify"`
	// RatioMean is the mean cost ratio over the seeds where both qualify,
	// and RatioLow and RatioHigh its 95 % interval (Student's t over those
	// seeds; NaN for fewer than two).
	RatioMean float64 `json:"ratio_mean"`
	RatioLow  float64 `json:"ratio_low"`
	RatioHigh float64 `json:"ratio_high"`
}

// MarshalJSON writes a missing ratio (NaN) as null.
func (s SeedSpread) MarshalJSON() ([]byte, error) {
	type plain SeedSpread
	return json.Marshal(struct {
		plain
		RatioMean *float64 `json:"ratio_mean"`
		RatioLow  *float64 `json:"ratio_low"`
		RatioHigh *float64 `json:"ratio_high"`
	}{plain(s), num(s.RatioMean), num(s.RatioLow), num(s.RatioHigh)})
}

// spread summarises seeds.
func spread(seeds []SeedResult) SeedSpread {
	s := SeedSpread{Seeds: len(seeds), RatioMean: math.NaN(), RatioLow: math.NaN(), RatioHigh: math.NaN()}
	var ratios []float64
	for _, r := range seeds {
		if r.HetsevQualifies {
			s.HetsevQualifies++
		}
		if v := r.ratio(); !math.IsNaN(v) {
			s.BothQualify++
			ratios = append(ratios, v)
		}
	}
	if len(ratios) == 0 {
		return s
	}
	s.RatioMean = stat.Mean(ratios, nil)
	if n := len(ratios); n >= 2 {
		t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(0.975)
		half := t * stat.StdDev(ratios, nil) / math.Sqrt(float64(n))
		s.RatioLow, s.RatioHigh = s.RatioMean-half, s.RatioMean+half
	}
	return s
}

// tokens is s as the RESULT line's fields.
func (s SeedSpread) tokens() string {
	return strings.Join([]string{
		"seeds=" + strconv.Itoa(s.Seeds),
		fmt.Sprintf("seeds_hetsev_qualifies=%d/%d", s.HetsevQualifies, s.Seeds),
		fmt.Sprintf("seeds_both_qualify=%d/%d", s.BothQualify, s.Seeds),
		"seed_ratio_mean=" + fixed(s.RatioMean),
		"seed_ratio_95=" + fixed(s.RatioLow) + ".." + fixed(s.RatioHigh),
	}, " ")
}

// ParseTruths reads --interference-truth: comma-separated scales k of
// the replayed slowdown's excess, each in (1, 4]; "" is none. Errors
// name the flag.
func ParseTruths(s string) ([]float64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v > 1 && v <= 4) {
			return nil, fmt.Errorf("--interference-truth: %q: want a scale of the slowdown's excess in (1, 4]", strings.TrimSpace(f))
		}
		out = append(out, v)
	}
	return out, nil
}

// truthLine is the RESULT line of replay name under interference truth
// s: hetsev-exact against the best peer at its chosen setting.
func truthLine(name string, s SeedResult) string {
	return fmt.Sprintf("RESULT replay=%s interference_truth=%.3g cost_ratio_vs_best_peer=%s best_peer=%s both_qualify=%t hetsev_qualifies=%t excess_missed=%.0f peer_qualifies=%t",
		name, s.InterferenceTruth, fixed(s.ratio()), s.BestPeer, s.HetsevQualifies && s.PeerQualifies, s.HetsevQualifies, s.HetsevExcessMissed, s.PeerQualifies)
}
