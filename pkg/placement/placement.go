// Package placement chooses the GPU of a node for a model instance: the
// rating that hetsev-scheduler's HetsevGPUShare plugin scores and reserves
// by, and that the trace-driven evaluator (internal/sim/evaluate) places simulated
// instances with, so that both make the same choice.
package placement

import (
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/interference"
)

// DefaultInterferenceWeight is w in Placer's rating when none is
// configured: our choice, not the paper's (HetSev 4.2 ranks by worst fit
// alone, w = 0). Fit and predicted interference count equally: with hard
// anti-affinity worst fit and low interference mostly agree; the weight
// matters when GPUs differ in which models they host (the pairs of
// pkg/interference).
const DefaultInterferenceWeight = 0.5

// Placer chooses the GPU for an instance on one node: among the GPUs that
// fit it (gpuinventory.Candidates: GPU memory, anti-affinity), the one with
// the highest rating. The GPUs' occupancy (memory used, models, instances)
// is gpuinventory's (Occupancy); only the rating is placement's:
//
//	rating = (1 - w) * fit + w * 1 / (1 + ΔI)
//
// where fit is the worst-fit share of the GPU's memory left free after
// placing the instance ((free - demand) / total; best fit: (used + demand) /
// total), w is InterferenceWeight and ΔI the predicted latency inflation the
// placement adds (pkg/interference): the new instance's own slowdown from
// every instance already on the GPU plus the slowdown it causes each of
// them. The scheduler does not know the neighbours' load, so each is taken
// as busy all the time (utilisation 1), the worst case. With w = 0 and
// FitWorst the choice is HetSev 4.2's worst fit: the GPU with the most free
// memory, ties to the lower index.
type Placer struct {
	Choice gpuinventory.Choice
	// InterferenceWeight is w in [0, 1].
	InterferenceWeight float64
	Interference       interference.Model
}

// Pick returns the chosen GPU's index, its rating in [0, 1], whether it
// already hosts the instance's model (soft anti-affinity only) and whether
// any GPU fits.
func (pl Placer) Pick(gpus []gpuinventory.GPU, d gpuinventory.Demand) (idx int, rating float64, clash, ok bool) {
	fit, clash := gpuinventory.Candidates(gpus, d, pl.Choice)
	for _, g := range fit {
		if r := pl.Rate(g, d); !ok || r > rating {
			idx, rating, ok = g.Index, r, true
		}
	}
	return idx, rating, clash, ok
}

// Rate is the rating of placing d on g, which must fit.
func (pl Placer) Rate(g gpuinventory.GPU, d gpuinventory.Demand) float64 {
	var fit float64
	if g.TotalMiB > 0 {
		fit = float64(g.FreeMiB()-d.MemoryMiB) / float64(g.TotalMiB)
		if pl.Choice.Fit == gpuinventory.FitBest {
			fit = float64(g.UsedMiB+d.MemoryMiB) / float64(g.TotalMiB)
		}
	}
	if pl.InterferenceWeight == 0 {
		return fit
	}
	return (1-pl.InterferenceWeight)*fit + pl.InterferenceWeight/(1+pl.addedInflation(g, d))
}

// addedInflation is ΔI: Σ over the instances on g of
// PairInflation(new, theirs) + PairInflation(theirs, new), each counted
// once per instance (pkg/interference's additive model, utilisation 1).
func (pl Placer) addedInflation(g gpuinventory.GPU, d gpuinventory.Demand) float64 {
	var sum float64
	named := 0
	for m, n := range g.Models {
		sum += float64(n) * (pl.Interference.PairInflation(d.Model, m) + pl.Interference.PairInflation(m, d.Model))
		named += n
	}
	// Instances without a model name interfere like a different model.
	if anon := g.Instances - named; anon > 0 {
		sum += float64(anon) * 2 * pl.Interference.DifferentPair
	}
	return sum
}
