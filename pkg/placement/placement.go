// Package placement chooses the GPU of a node for a model instance: the
// rating that hetsev-scheduler's HetsevGPUShare plugin scores and reserves
// by, and that the trace-driven evaluator (internal/sim/evaluate) places simulated
// instances with, so that both make the same choice.
package placement

import (
	"math"
	"sort"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/interference"
)

// DefaultInterferenceWeight is w in Placer's rating when none is
// configured: our choice, not the paper's (HetSev 4.2 ranks by worst fit
// alone, w = 0). Fit and predicted interference count equally: with hard
// anti-affinity worst fit and low interference mostly agree; the weight
// matters when GPUs differ in what they host (pkg/interference).
const DefaultInterferenceWeight = 0.5

// ReferenceBatchLatency is the solo batch latency in seconds the rating
// assumes for a model when Placer.BatchLatency does not give one (the
// scheduler does not know which profile a pod runs). The fitted
// time-slicing inflation of busy CUDA-graph instances depends on it only
// through the number of context switches per batch (about 2 + s·ceil(L/τ)/L
// for a busy pair), so the rating barely does. Our choice, 10 ms.
const ReferenceBatchLatency = 0.010

// Placer chooses the GPU for an instance on one node: among the GPUs that
// admit it (Admit: GPU memory, busy share, anti-affinity, inflation
// limits), the one with the highest rating. The GPUs' occupancy (memory used, models, instances)
// is gpuinventory's (Occupancy); only the rating is placement's:
//
//	rating = (1 - w) * fit + w * 1 / (1 + ΔI)
//
// where fit is the worst-fit share of the GPU's memory left free after
// placing the instance ((free - demand) / total; best fit: (used + demand) /
// total), w is InterferenceWeight and ΔI the latency inflation the placement
// adds, predicted by the fitted co-location model (interference.Colocation,
// in the node's sharing Mode): the new instance's inflation minus 1 plus the
// increase of every instance already on the GPU. Each instance is taken
// as busy its declared busy share of the time (hetsev.io/busy-share; one
// that declares none as busy all the time, the worst case); every instance
// is a production profile's model (interference.Colocation.ProfileOccupancy). With w = 0 and FitWorst
// the choice is HetSev 4.2's worst fit: the GPU with the most free memory,
// ties to the lower index.
type Placer struct {
	Choice gpuinventory.Choice
	// InterferenceWeight is w in [0, 1].
	InterferenceWeight float64
	// Colocation is the co-location model (interference.FittedColocation
	// unless the operator gave a model file).
	Colocation interference.Colocation
	// Mode is the node's GPU sharing mode (SharingModeOf its labels); ""
	// reads as time-slicing.
	Mode interference.SharingMode
	// BatchLatency, when set, gives a model's solo batch latency in
	// seconds; nil or a value <= 0 is ReferenceBatchLatency.
	BatchLatency func(model string) float64
}

// SharingModeOf is the GPU sharing mode of a node with these labels: GPU
// Feature Discovery's interference.SharingStrategyLabel; absent, empty or
// not a known value reads as time-slicing (CUDA's default between
// processes).
func SharingModeOf(labels map[string]string) interference.SharingMode {
	if m, err := interference.ParseSharingMode(labels[interference.SharingStrategyLabel]); err == nil && m == interference.SharingMPS {
		return m
	}
	return interference.SharingTimeSlicing
}

// OnNode is pl for a node with these labels (its sharing mode).
func (pl Placer) OnNode(labels map[string]string) Placer {
	pl.Mode = SharingModeOf(labels)
	return pl
}

// Pick returns the chosen GPU's index, its rating in [0, 1], whether it
// already hosts the instance's model (soft anti-affinity only) and whether
// any GPU fits.
//
// The GPUs it chooses among are those Admit admits: GPU memory, busy share,
// anti-affinity and every instance's hetsev.io/max-inflation. Under soft
// anti-affinity, when none is admitted, it chooses among the GPUs hosting
// the model that pass the other rules (clash true).
func (pl Placer) Pick(gpus []gpuinventory.GPU, d gpuinventory.Demand) (idx int, rating float64, clash, ok bool) {
	for _, hosting := range []bool{false, true} {
		if hosting && (!pl.Choice.SoftAntiAffinity || d.Model == "") {
			break
		}
		for _, g := range gpus {
			r, admitted := pl.rateIfAdmitted(g, d, hosting)
			if admitted && (!ok || r > rating) {
				idx, rating, ok = g.Index, r, true
			}
		}
		if ok {
			return idx, rating, hosting, true
		}
	}
	return 0, 0, false, false
}

// Rate is the rating of placing d on g, which must fit. With
// Choice.Consolidate and a declared busy share (d.BusyShare > 0), the
// rating r is mapped to 0.5 + r/2 on a GPU in use and r/2 on an empty
// one, so that a new GPU is opened only when none in use admits d.
func (pl Placer) Rate(g gpuinventory.GPU, d gpuinventory.Demand) float64 {
	return pl.rateWith(g, d, pl.predictor(g, d))
}

// rateIfAdmitted is Rate when g admits d (refusal, with hosting as there
// is ""), and false when it does not: Pick's question for every GPU, the
// co-location model solved once for both the inflation limits and the
// rating.
func (pl Placer) rateIfAdmitted(g gpuinventory.GPU, d gpuinventory.Demand, hosting bool) (float64, bool) {
	switch {
	case d.MemoryMiB > g.FreeMiB(),
		!g.HasRoom(),
		!g.FitsBusyShare(d, pl.Choice.MaxBusyShare),
		(d.Model != "" && g.Models[d.Identity()] > 0) != hosting:
		return 0, false
	}
	p := pl.predictor(g, d)
	if !pl.admits(g, d, p) {
		return 0, false
	}
	return pl.rateWith(g, d, p), true
}

// prediction is the co-location model's answer for placing a demand on a
// GPU (predict's results).
type prediction struct {
	nb            []gpuinventory.InstanceShare
	before, after []float64
	err           error
}

// predictor returns predict(g, d), solved on the first call and kept.
func (pl Placer) predictor(g gpuinventory.GPU, d gpuinventory.Demand) func() *prediction {
	var p *prediction
	return func() *prediction {
		if p == nil {
			p = &prediction{}
			p.nb, p.before, p.after, p.err = pl.predict(g, d)
		}
		return p
	}
}

// rateWith is Rate with the prediction from p.
func (pl Placer) rateWith(g gpuinventory.GPU, d gpuinventory.Demand, p func() *prediction) float64 {
	r := pl.rate(g, d, p)
	if !pl.Choice.Consolidate || !(d.BusyShare > 0) {
		return r
	}
	if g.Instances > 0 {
		return 0.5 + r/2
	}
	return r / 2
}

// rate is the rating of worst fit weighed against interference.
func (pl Placer) rate(g gpuinventory.GPU, d gpuinventory.Demand, p func() *prediction) float64 {
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
	return (1-pl.InterferenceWeight)*fit + pl.InterferenceWeight/(1+addedInflation(g, p))
}

// AddedInflation is ΔI of placing d on g: Σ (I - 1) over the instances on g
// and the new one after the placement minus Σ (I - 1) over g's instances
// before. Each instance loads its GPU its busy share alone
// (hetsev.io/busy-share, gpuinventory.GPU.Shares and Demand.Busy; one that
// declares none is busy all the time), the model's busy shares solved at
// those loads (interference.Sharing.InflationsAtLoad). A GPU whose Shares do not list every
// instance (built by hand, not by gpuinventory.Occupancy.Place) counts its
// Models, every instance busy all the time. Instances without a model name
// count as an unnamed model of ReferenceBatchLatency. An input the model
// refuses (it cannot, with positive latencies) counts as +Inf (rating w·0).
func (pl Placer) AddedInflation(g gpuinventory.GPU, d gpuinventory.Demand) float64 {
	return addedInflation(g, pl.predictor(g, d))
}

// addedInflation is AddedInflation with the prediction from p.
func addedInflation(g gpuinventory.GPU, p func() *prediction) float64 {
	if g.Instances == 0 {
		return 0
	}
	pr := p()
	if pr.err != nil {
		return math.Inf(1)
	}
	var sum float64
	for _, f := range pr.after {
		sum += f - 1
	}
	for _, f := range pr.before {
		sum -= f - 1
	}
	return math.Max(0, sum)
}

// Admits reports whether placing d on g keeps every instance's predicted
// latency inflation within what it allows: d's within d.MaxInflation, each
// neighbour's within its InstanceShare.MaxInflation (0: no limit). A GPU
// with no instance admits anything; an input the model refuses admits
// nothing that has a limit.
func (pl Placer) Admits(g gpuinventory.GPU, d gpuinventory.Demand) bool {
	return pl.admits(g, d, pl.predictor(g, d))
}

// admits is Admits with the prediction from p, asked only where a limit
// applies.
func (pl Placer) admits(g gpuinventory.GPU, d gpuinventory.Demand, p func() *prediction) bool {
	if g.Instances == 0 {
		return true
	}
	limited := d.MaxInflation > 0
	if len(g.Shares) == g.Instances { // else neighbours has no limits
		for _, s := range g.Shares {
			limited = limited || s.MaxInflation > 0
		}
	}
	if !limited {
		return true
	}
	pr := p()
	if pr.err != nil {
		return false
	}
	nb, after := pr.nb, pr.after
	for i, s := range nb {
		if s.MaxInflation > 0 && after[i] > s.MaxInflation {
			return false
		}
	}
	return !(d.MaxInflation > 0 && after[len(after)-1] > d.MaxInflation)
}

// Inflation is the latency inflation (>= 1) the model predicts for the
// instance of d's model identity (Demand.Identity: namespace/model, or
// the model cluster-wide) on g, from the busy shares recorded on g (as
// AddedInflation reads them): 1 when g hosts no other instance, and when
// g hosts no instance of that identity (nothing to predict). Two
// namespaces' instances of one model name on g are two tenants; the
// co-location model still reads each by its model name. hetsev-scaler
// divides an instance's throughput by it.
func (pl Placer) Inflation(g gpuinventory.GPU, d gpuinventory.Demand) float64 {
	if g.Instances < 2 {
		return 1
	}
	mode := pl.Mode
	if mode == "" {
		mode = interference.SharingTimeSlicing
	}
	nb := neighbours(g)
	members := make([]interference.Instance, len(nb))
	id, at := d.Identity(), -1
	for i, s := range nb {
		members[i] = pl.instance(mode, s.Model, s.BusyShare)
		if at < 0 && s.Identity() == id {
			at = i
		}
	}
	if at < 0 {
		return 1
	}
	f, err := pl.Colocation.Sharing.InflationsAtLoad(mode, members)
	if err != nil {
		return 1
	}
	return math.Max(1, f[at])
}

// predict is the model's inflation of g's instances (nb, in that order)
// before d joins, and of them and d (last) after.
func (pl Placer) predict(g gpuinventory.GPU, d gpuinventory.Demand) (nb []gpuinventory.InstanceShare, before, after []float64, err error) {
	mode := pl.Mode
	if mode == "" {
		mode = interference.SharingTimeSlicing
	}
	nb = neighbours(g)
	members := make([]interference.Instance, 0, len(nb)+1)
	for _, s := range nb {
		members = append(members, pl.instance(mode, s.Model, s.BusyShare))
	}
	if before, err = pl.Colocation.Sharing.InflationsAtLoad(mode, members); err != nil {
		return nil, nil, nil, err
	}
	if after, err = pl.Colocation.Sharing.InflationsAtLoad(mode, append(members, pl.instance(mode, d.Model, d.Busy()))); err != nil {
		return nil, nil, nil, err
	}
	return nb, before, after, nil
}

// neighbours are g's instances with their busy shares, sorted by model,
// scope and share: the fixed point's rounding must not depend on the order
// pods were counted in. Without Shares for every instance they come from
// g.Models, whose keys are identities (gpuinventory.SplitIdentity gives
// the model the co-location model reads and the scope).
func neighbours(g gpuinventory.GPU) []gpuinventory.InstanceShare {
	var out []gpuinventory.InstanceShare
	if len(g.Shares) == g.Instances {
		out = append(out, g.Shares...)
	} else {
		named := 0
		for id, n := range g.Models {
			m, scope := gpuinventory.SplitIdentity(id)
			for i := 0; i < n; i++ {
				out = append(out, gpuinventory.InstanceShare{Model: m, Scope: scope, BusyShare: 1}) // no limit known
			}
			named += n
		}
		for i := named; i < g.Instances; i++ {
			out = append(out, gpuinventory.InstanceShare{BusyShare: 1})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Model != out[j].Model {
			return out[i].Model < out[j].Model
		}
		if out[i].Scope != out[j].Scope {
			return out[i].Scope < out[j].Scope
		}
		return out[i].BusyShare < out[j].BusyShare
	})
	return out
}

func (pl Placer) instance(mode interference.SharingMode, model string, busy float64) interference.Instance {
	l := 0.0
	if pl.BatchLatency != nil && model != "" {
		l = pl.BatchLatency(model)
	}
	if !(l > 0) || math.IsInf(l, 0) {
		l = ReferenceBatchLatency
	}
	if !(busy > 0) || busy > 1 {
		busy = 1
	}
	return pl.Colocation.ProfileInstance(mode, model, busy, l)
}
