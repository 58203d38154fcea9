package evaluate

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// The co-location check: hetsev-scheduler admits and rates a GPU by the
// inflation the co-location model predicts at its tenants' declared busy
// shares (pkg/placement Inflation), and hetsev-scaler divides a shared
// instance's throughput by it. The replay runs each server at the
// inflation the same model gives at the busy shares it measures
// (internal/sim/replay). Their ratio says how far the declarations
// anticipate what the tenants do: below 1 the placement packed more than
// it should have (an under-prediction costs requests), above 1 it held
// back (it costs GPUs).

// InflationPrediction summarises, for hetsev-exact and hetsev-heuristic,
// the ratio of the predicted to the replayed inflation of its instances
// on shared GPUs, one sample per ready instance on a GPU with another
// instance at each of its service's decisions. Ratios are dimensionless.
type InflationPrediction struct {
	Samples int     `json:"samples"`
	Median  float64 `json:"median"`
	P5      float64 `json:"p5"`
	P95     float64 `json:"p95"`
	// MeanBias is the mean of predicted / replayed - 1, the interference
	// checks' signed bias.
	MeanBias float64 `json:"mean_bias"`
	// UnderPredicted is the share of samples with a ratio below 1.
	UnderPredicted float64 `json:"under_predicted"`
}

// predictsColocation says r is a hetsev policy with a co-location model:
// the policies that place and count capacity by the prediction. The
// peers' placers pack by GPU memory or whole GPUs and declare no busy
// share, so a ratio of theirs would measure nothing they decided by.
func (r *policyRun) predictsColocation() bool {
	_, hetsev := r.pol.(*hetsevPolicy)
	c := r.cl.placer.Colocation
	return hetsev && (c.Source != "" || c.Occupancy != nil)
}

// samplePrediction records the ratio of every ready instance of s on a
// shared GPU at second t.
func (r *policyRun) samplePrediction(s *serviceRun, t int) {
	for _, in := range s.insts {
		if in.readyAt > float64(t) || len(r.gpus[in.node][in.gpu].Instances()) < 2 {
			continue
		}
		pred := r.cl.placer.Inflation(r.cl.nodes[in.node].gpus()[in.gpu], in.demand)
		if sim := in.run.Server.Factor(); sim > 0 {
			r.predicted = append(r.predicted, pred/sim)
		}
	}
}

// inflationPrediction summarises ratios; nil for none.
func inflationPrediction(ratios []float64) *InflationPrediction {
	if len(ratios) == 0 {
		return nil
	}
	x := slices.Clone(ratios)
	slices.Sort(x)
	q := func(f float64) float64 { return x[int(f*float64(len(x)-1)+0.5)] }
	out := &InflationPrediction{Samples: len(x), Median: q(0.5), P5: q(0.05), P95: q(0.95)}
	under := 0
	for _, v := range x {
		out.MeanBias += v - 1
		if v < 1 {
			under++
		}
	}
	out.MeanBias /= float64(len(x))
	out.UnderPredicted = float64(under) / float64(len(x))
	return out
}

// printInflationPrediction prints the co-location check of each policy
// that has samples.
func printInflationPrediction(w io.Writer, r RunResult) {
	var parts []string
	for _, p := range r.Policies {
		if ip := p.InflationPrediction; ip != nil {
			parts = append(parts, fmt.Sprintf("%s median %.3f (p5 %.3f, p95 %.3f), bias %+.1f%%, under-predicted in %.1f%% of %d samples",
				p.Policy, ip.Median, ip.P5, ip.P95, 100*ip.MeanBias, 100*ip.UnderPredicted, ip.Samples))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "co-location prediction (predicted at declared busy shares / replayed at measured ones, instances on shared GPUs): %s\n", strings.Join(parts, "; "))
	}
}
