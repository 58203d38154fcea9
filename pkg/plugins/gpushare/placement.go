package gpushare

import (
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/interference"
)

// placer chooses the GPU for an instance on one node: among the GPUs that
// fit it (gpuinventory.Candidates: GPU memory, anti-affinity), the one with the
// highest rating
//
//	rating = (1 - w) * fit + w * 1 / (1 + ΔI)
//
// where fit is the worst-fit share of the GPU's memory left free after
// placing the instance ((free - demand) / total; best fit: (used + demand) /
// total), w is Args.InterferenceWeight and ΔI the predicted latency
// inflation the placement adds (pkg/interference): the new instance's own
// slowdown from every instance already on the GPU plus the slowdown it
// causes each of them. The scheduler does not know the neighbours' load, so
// each is taken as busy all the time (utilisation 1), the worst case. With
// w = 0 the choice is gpuinventory.Choose's (HetSev 4.2 worst fit).
type placer struct {
	choice gpuinventory.Choice
	weight float64
	model  interference.Model
}

// pick returns the chosen GPU's index, its rating in [0, 1], whether it
// already hosts the instance's model (soft anti-affinity only) and whether
// any GPU fits.
func (pl placer) pick(gpus []gpuinventory.GPU, d gpuinventory.Demand) (idx int, rating float64, clash, ok bool) {
	fit, clash := gpuinventory.Candidates(gpus, d, pl.choice)
	for _, g := range fit {
		if r := pl.rate(g, d); !ok || r > rating {
			idx, rating, ok = g.Index, r, true
		}
	}
	return idx, rating, clash, ok
}

// rate is the rating of placing d on g, which must fit.
func (pl placer) rate(g gpuinventory.GPU, d gpuinventory.Demand) float64 {
	var fit float64
	if g.TotalMiB > 0 {
		fit = float64(g.FreeMiB()-d.MemoryMiB) / float64(g.TotalMiB)
		if pl.choice.Fit == gpuinventory.FitBest {
			fit = float64(g.UsedMiB+d.MemoryMiB) / float64(g.TotalMiB)
		}
	}
	if pl.weight == 0 {
		return fit
	}
	return (1-pl.weight)*fit + pl.weight/(1+pl.addedInflation(g, d))
}

// addedInflation is ΔI: Σ over the instances on g of
// PairInflation(new, theirs) + PairInflation(theirs, new), each counted
// once per instance (pkg/interference's additive model, utilisation 1).
func (pl placer) addedInflation(g gpuinventory.GPU, d gpuinventory.Demand) float64 {
	var sum float64
	for m, n := range g.Models {
		sum += float64(n) * (pl.model.PairInflation(d.Model, m) + pl.model.PairInflation(m, d.Model))
	}
	// Instances without a model name interfere like a different model.
	if anon := g.Instances - countModels(g); anon > 0 {
		sum += float64(anon) * 2 * pl.model.DifferentPair
	}
	return sum
}

func countModels(g gpuinventory.GPU) int {
	n := 0
	for _, c := range g.Models {
		n += c
	}
	return n
}
