// Package interference models the latency inflation an inference instance
// suffers when other model instances share its GPU (multi-tenant inference).
//
// The model follows the experimental study in HetSev section 3.2
// ("Interference of Multi-Tenant Inference", /work/shared/papers/hetsev.txt):
// co-running a different model on the same GPU inflates latency modestly
// (the paper reports an 18 % average increase for up to 90 % of the 160
// measured pairs), while co-running an identical model inflates it more
// (paper Fig. 3, no number given). The default coefficients below are
// ESTIMATES derived from that text, not measurements of this code base.
//
// Latency factors compose additively: an instance of model m whose GPU
// neighbours are n_1..n_k is slowed down by
//
//	Factor = 1 + Σ_i PairInflation(m, n_i.Model) · clamp(n_i.Utilization, 0, 1)
//
// i.e. a neighbour contributes its full pairwise inflation only while it is
// busy all of the time, and nothing while it is idle.
package interference

import (
	"fmt"
	"math"
	"sort"
)

const (
	// DefaultDifferentPair is the ESTIMATED fractional latency increase
	// (0.18 = +18 %) caused by a fully busy *different* model on the same
	// GPU. Source: HetSev section 3.2 / Fig. 2, "for up to 90% of the
	// combinations, the average latency increase is only 18%". The paper's
	// figure mixes identical and different pairs; we use it for different
	// pairs, which are the majority of the combinations.
	DefaultDifferentPair = 0.18

	// DefaultIdenticalPair is the ESTIMATED fractional latency increase
	// (0.40 = +40 %) caused by a fully busy *identical* model on the same
	// GPU. HetSev section 3.2 / Fig. 3 only states that identical pairs
	// (notably ResNet50 and Inception-v3 with themselves) suffer a larger
	// increase than different pairs and give no number; 0.40 is our own
	// estimate, not a measurement.
	DefaultIdenticalPair = 0.40
)

// Neighbour is another model instance sharing the same GPU.
type Neighbour struct {
	// Model is the neighbour's model name (e.g. "resnet50").
	Model string
	// Utilization is the fraction of time (0..1) the neighbour is busy
	// running batches on the shared GPU. Values outside [0,1] are clamped;
	// NaN counts as 0.
	Utilization float64
}

// Model holds pairwise latency-inflation coefficients. All coefficients are
// fractions of the solo-running latency (0.40 = +40 %) caused by one
// neighbour that keeps the GPU busy all of the time.
type Model struct {
	// IdenticalPair is the latency increase (fraction, e.g. 0.40 = +40 %)
	// when a busy identical model shares the GPU.
	IdenticalPair float64
	// DifferentPair is the latency increase (fraction) when a busy
	// different model shares the GPU.
	DifferentPair float64
	// Pairs holds optional per-pair overrides (fractions) keyed by
	// PairKey(a, b); the key is order-independent.
	Pairs map[string]float64
}

// Default returns the model with the ESTIMATED coefficients of HetSev
// section 3.2: DifferentPair = DefaultDifferentPair (0.18, the paper's
// 18 % average) and IdenticalPair = DefaultIdenticalPair (0.40, our
// estimate; the paper only says identical pairs are worse). It has no
// per-pair overrides.
func Default() Model {
	return Model{IdenticalPair: DefaultIdenticalPair, DifferentPair: DefaultDifferentPair}
}

// PairKey returns the order-independent key of the model pair (a, b) used
// in Model.Pairs: the two names sorted and joined by "|", so
// PairKey("resnet50", "bert") == PairKey("bert", "resnet50") == "bert|resnet50".
func PairKey(a, b string) string {
	if b < a {
		a, b = b, a
	}
	return a + "|" + b
}

func checkCoefficient(field string, v float64) error {
	switch {
	case math.IsNaN(v):
		return fmt.Errorf("interference: %s is NaN", field)
	case math.IsInf(v, 0):
		return fmt.Errorf("interference: %s is infinite", field)
	case v < 0:
		return fmt.Errorf("interference: %s is negative (%g)", field, v)
	}
	return nil
}

// Validate reports the first invalid coefficient: negative, NaN or
// infinite values are rejected and the error names the field (or the
// Pairs key).
func (m Model) Validate() error {
	if err := checkCoefficient("IdenticalPair", m.IdenticalPair); err != nil {
		return err
	}
	if err := checkCoefficient("DifferentPair", m.DifferentPair); err != nil {
		return err
	}
	keys := make([]string, 0, len(m.Pairs))
	for k := range m.Pairs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := checkCoefficient(fmt.Sprintf("Pairs[%q]", k), m.Pairs[k]); err != nil {
			return err
		}
	}
	return nil
}

// PairInflation returns the fractional latency increase (0.18 = +18 %)
// that a fully busy instance of model b causes to an instance of model a
// on the same GPU: the Pairs override for PairKey(a, b) if present,
// otherwise IdenticalPair when a == b and DifferentPair when they differ.
// The returned value is not sanitised; use Validate to reject bad models.
func (m Model) PairInflation(a, b string) float64 {
	if len(m.Pairs) > 0 { // PairKey allocates; the scheduler calls this per GPU and node
		if v, ok := m.Pairs[PairKey(a, b)]; ok {
			return v
		}
	}
	if a == b {
		return m.IdenticalPair
	}
	return m.DifferentPair
}

// Factor returns the multiplicative latency factor (>= 1) for an instance
// of model given its GPU neighbours:
//
//	1 + Σ PairInflation(model, n.Model) · clamp(n.Utilization, 0, 1)
//
// Neighbour utilisation NaN counts as 0. Invalid (negative or NaN)
// coefficients contribute nothing, so the result is never below 1.
func (m Model) Factor(model string, neighbours []Neighbour) float64 {
	f := 1.0
	for _, n := range neighbours {
		u := n.Utilization
		if math.IsNaN(u) || u <= 0 {
			continue
		}
		if u > 1 {
			u = 1
		}
		p := m.PairInflation(model, n.Model)
		if math.IsNaN(p) || p <= 0 {
			continue
		}
		f += p * u
	}
	return f
}
