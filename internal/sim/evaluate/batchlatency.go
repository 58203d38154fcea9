package evaluate

import "github.com/hetsev/hetsev/pkg/catalog"

// batchLatencies is the solo latency, seconds, of a batch of 1, 2, ...,
// p.BatchSize requests on p's server (modelserver.Config.BatchLatencies),
// the same rule for every policy's servers: a server batches what has
// arrived (Triton's dynamic batching, TF-Serving's batching scheduler) and
// a batch of n runs for the measured latency of the smallest measured batch
// size >= n (p.SmallBatches, then p's own batch). Latency does not fall as
// a batch grows, so a size between two measured ones is charged the larger
// one's latency: an upper bound, not an interpolation that no one measured.
// Nil where p has no smaller measured batch: every batch then takes
// p.LatencyMs, as the profile states.
func batchLatencies(p catalog.Profile) []float64 {
	pts := make([]catalog.BatchPoint, 0, len(p.SmallBatches)+1)
	for _, pt := range p.SmallBatches {
		if pt.BatchSize < p.BatchSize && pt.LatencyMs > 0 {
			pts = append(pts, pt)
		}
	}
	if len(pts) == 0 || p.BatchSize < 1 {
		return nil
	}
	pts = append(pts, catalog.BatchPoint{BatchSize: p.BatchSize, LatencyMs: p.LatencyMs})
	out := make([]float64, p.BatchSize)
	k := 0
	for n := 1; n <= p.BatchSize; n++ {
		for pts[k].BatchSize < n {
			k++
		}
		// Measurements are noisy: never let a larger batch be charged
		// less than a smaller one.
		l := pts[k].LatencyMs / 1000
		if n > 1 && l < out[n-2] {
			l = out[n-2]
		}
		out[n-1] = l
	}
	return out
}
