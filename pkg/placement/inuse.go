package placement

import "github.com/hetsev/hetsev/pkg/gpuinventory"

// AdmitsInUse reports whether the scheduler's rule (Pick, without the
// soft anti-affinity fallback) admits d on one of gpus, a node's GPUs,
// that hosts instances and whose index is not except (-1 for none): where
// a new instance that declares a busy share lands rather than on an empty
// GPU (Choice.Consolidate rates GPUs in use first). A consolidation move
// asks it for an instance alone on GPU except of that node, so that the
// move leaves that GPU empty. gpus is not modified.
func (pl Placer) AdmitsInUse(gpus []gpuinventory.GPU, d gpuinventory.Demand, except int) bool {
	var inUse []gpuinventory.GPU
	for _, g := range gpus {
		if g.Instances > 0 && g.Index != except {
			inUse = append(inUse, g)
		}
	}
	_, _, clash, ok := pl.Pick(inUse, d)
	return ok && !clash
}
