package interference

// GPU sharing as measured: the latency inflation of model instances that
// share one GPU, by the GPU's sharing mode, fitted to the H100 measurements
// in data/measurements/gpu-colocation-h100 (see data/measurements/
// PROVENANCE.md), not the ESTIMATED pair factors of HetSev 3.2;
// callers use it through Colocation (colocation.go).
//
// Inputs, per instance on the GPU (Instance):
//   - its busy share b: the fraction of wall time (0..1) it has a batch
//     outstanding on the GPU (running or waiting for the GPU), as a server
//     measures it around its batches;
//   - its solo batch latency L (seconds): one batch alone on the GPU, from
//     the model's profile;
//   - its solo occupancy o (0..1]: how much of the GPU one instance occupies
//     while it runs alone, a property of the model and how it is executed:
//     under time-slicing the share of the GPU's time it keeps the GPU busy
//     (1 for CUDA-graph/TensorRT servers, lower for eager frameworks whose
//     CPU launches leave gaps), under MPS the share of the GPU's SMs its
//     kernels fill.
//
// Time-slicing (CUDA's default between processes, and what the device
// plugin's time-slicing gives): the GPU runs one context at a time and
// round-robins between contexts that have work, with a time slice τ
// (TimeSlicingCoefficients.Slice) and a switch cost s. A batch of solo
// length L is cut into k = ceil(L/τ) slices, each q = L/k long. Before each
// of its k slices, an instance waits for every neighbour j that has work
// then: a full slice q_j + s when it yields to j, or, when its batch arrives
// at a random moment while j runs (the first slice of a batch that did not
// follow its previous one back to back), half a slice q_j/2 + s on average:
//
//	latency_i = L_i + Σ_j o_i o_j [ (β_i + k_i − 1) π_ij (q_j + s) + (1 − β_i) b_j (q_j/2 + s) ]
//	β_i  = b_i^p                 (share of batches started back to back)
//	π_ij = min(1, b_j (k_j/k_i) (I_i L_i)/(I_j L_j))
//
// π_ij is the share of i's yields at which j has work: j's slices per
// second over i's slices per second, at most 1. τ, s and p are those of
// the instance's execution (Sharing.TimeSlicing for CUDA graphs,
// Sharing.EagerTimeSlicing for eager frameworks): an eager context holds the
// GPU only while kernels it launched are queued, so it yields at the
// granularity of its bursts of kernels, not at the driver's time slice; its
// effective slice and switch cost are fitted to the eager file on their own.
// For a pair of different executions the switch cost is the mean of the
// two. The occupancies scale the
// waits: a neighbour that leaves the GPU idle between its kernels (o_j < 1)
// holds it for less of its slice, and an instance that does so itself
// (o_i < 1) loses only its GPU part to others (its CPU part overlaps
// them); for CUDA-graph servers both are 1. The inflation I_i =
// latency_i/L_i appears on both sides; Inflations solves the fixed point.
//
// MPS: kernels of different contexts run at the same time, sharing the SMs;
// an instance whose kernels fill more SMs takes more of the GPU from its
// neighbours than it loses to them:
//
//	I_i = 1 + Σ_j b_j γ (o_j/o_i)^α
//
// The GPU sharing mode "none" (no sharing configured in the device plugin)
// still lets processes that share a GPU, as hetsev places them by GPU
// memory, run one after another under CUDA's default time-slicing; it is
// computed as time-slicing.

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// SharingStrategyLabel is the node label through which NVIDIA GPU Feature
// Discovery publishes how the device plugin shares a node's GPUs; its values
// are the SharingMode constants.
const SharingStrategyLabel = "nvidia.com/gpu.sharing-strategy"

// SharingMode is how processes share one GPU: a value of the node label
// SharingStrategyLabel.
type SharingMode string

const (
	// SharingNone: the device plugin shares nothing; processes placed on
	// one GPU anyway run under CUDA's default time-slicing.
	SharingNone SharingMode = "none"
	// SharingTimeSlicing: the device plugin's time-slicing (contexts take
	// turns on the whole GPU).
	SharingTimeSlicing SharingMode = "time-slicing"
	// SharingMPS: CUDA Multi-Process Service (kernels of different
	// processes run at the same time on the SMs).
	SharingMPS SharingMode = "mps"
)

// ParseSharingMode returns the SharingMode for a value of the label
// SharingStrategyLabel; an empty value (label absent) is SharingNone. Other
// values are refused with an error that quotes them.
func ParseSharingMode(v string) (SharingMode, error) {
	switch SharingMode(strings.TrimSpace(v)) {
	case "", SharingNone:
		return SharingNone, nil
	case SharingTimeSlicing:
		return SharingTimeSlicing, nil
	case SharingMPS:
		return SharingMPS, nil
	}
	return "", fmt.Errorf("interference: %s=%q is not one of %s, %s, %s", SharingStrategyLabel, v, SharingNone, SharingTimeSlicing, SharingMPS)
}

// Execution is how a model server runs its model on the GPU, which decides
// its solo occupancy.
type Execution string

const (
	// ExecutionCUDAGraph: each forward pass is one captured CUDA graph (or a
	// TensorRT engine, as Triton and TensorRT servers run): the GPU is busy
	// for the whole batch.
	ExecutionCUDAGraph Execution = "cuda-graph"
	// ExecutionEager: a framework launches each kernel from the CPU
	// (PyTorch eager); the GPU idles between launches.
	ExecutionEager Execution = "eager"
)

// Instance is one model instance (one process, one CUDA context) on a
// shared GPU.
type Instance struct {
	// Model names the model (for messages only).
	Model string
	// BusyShare is the fraction of wall time, 0..1, the instance has a
	// batch outstanding on the GPU (running or waiting for it). Values
	// outside [0,1] are clamped; NaN counts as 0.
	BusyShare float64
	// BatchLatency is the solo batch latency in seconds (the profile's
	// batch latency at the batch size the instance runs). Must be > 0.
	BatchLatency float64
	// Occupancy is the solo occupancy, (0,1]: see the package comment.
	// 0 means 1 (a saturating CUDA-graph/TensorRT server). It is the
	// occupancy at the profiled (full) batch.
	Occupancy float64
	// Execution is how the instance runs its model; "" means
	// ExecutionCUDAGraph. Under time-slicing it picks the coefficients
	// (Sharing.TimeSlicing or Sharing.EagerTimeSlicing).
	Execution Execution
	// FullBatchLatency is the solo latency in seconds of the profiled full
	// batch, when the instance runs smaller batches on average
	// (BatchLatency is then their mean solo latency); 0 means
	// BatchLatency. Under MPS the occupancy is scaled by
	// BatchLatency/FullBatchLatency: smaller batches fill fewer SMs.
	FullBatchLatency float64
}

// TimeSlicingCoefficients are the time-slicing model's coefficients (see
// the package comment).
type TimeSlicingCoefficients struct {
	// Slice is the time slice τ in seconds a context runs before the GPU
	// switches to another context that has work.
	Slice float64
	// Switch is the cost s in seconds of one switch between contexts.
	Switch float64
	// BackToBackExponent is p in β = b^p, the share of an instance's
	// batches that start right after its previous one (so that it has just
	// yielded the GPU and waits a full slice of each neighbour with work).
	BackToBackExponent float64
}

// MPSCoefficients are the MPS model's coefficients (see the package
// comment).
type MPSCoefficients struct {
	// Contention is γ: the inflation a busy neighbour with the same
	// occupancy adds (1+γ for a pair of busy identical instances).
	Contention float64
	// OccupancyExponent is α: how strongly the neighbour's occupancy
	// relative to the instance's own weighs.
	OccupancyExponent float64
}

// Sharing is the fitted co-location model: coefficients per sharing mode
// (and, under time-slicing, per execution).
type Sharing struct {
	// TimeSlicing: the round-robin coefficients of CUDA-graph/TensorRT
	// instances.
	TimeSlicing TimeSlicingCoefficients
	// EagerTimeSlicing: the round-robin coefficients of eager instances
	// (Execution ExecutionEager).
	EagerTimeSlicing TimeSlicingCoefficients
	MPS              MPSCoefficients
}

// The Fitted* coefficients and the H100*Occupancy values are in fitted.go,
// which `make interference-fit` (hack/interference-fit) writes.

// FittedSharing returns the model with the Fitted* coefficients.
func FittedSharing() Sharing {
	return Sharing{
		TimeSlicing:      TimeSlicingCoefficients{Slice: FittedSlice, Switch: FittedSwitch, BackToBackExponent: FittedBackToBackExponent},
		EagerTimeSlicing: TimeSlicingCoefficients{Slice: FittedEagerSlice, Switch: FittedEagerSwitch, BackToBackExponent: FittedBackToBackExponent},
		MPS:              MPSCoefficients{Contention: FittedMPSContention, OccupancyExponent: FittedMPSOccupancyExponent},
	}
}

// Validate reports the first coefficient that is NaN, infinite or out of
// range, naming its field.
func (s Sharing) Validate() error {
	for _, c := range []struct {
		field    string
		v        float64
		positive bool
	}{
		{"TimeSlicing.Slice", s.TimeSlicing.Slice, true},
		{"TimeSlicing.Switch", s.TimeSlicing.Switch, false},
		{"TimeSlicing.BackToBackExponent", s.TimeSlicing.BackToBackExponent, false},
		{"EagerTimeSlicing.Slice", s.EagerTimeSlicing.Slice, true},
		{"EagerTimeSlicing.Switch", s.EagerTimeSlicing.Switch, false},
		{"EagerTimeSlicing.BackToBackExponent", s.EagerTimeSlicing.BackToBackExponent, false},
		{"MPS.Contention", s.MPS.Contention, false},
		{"MPS.OccupancyExponent", s.MPS.OccupancyExponent, false},
	} {
		if err := checkCoefficient(c.field, c.v); err != nil {
			return err
		}
		if c.positive && c.v == 0 {
			return fmt.Errorf("interference: %s must be > 0", c.field)
		}
	}
	return nil
}

// validateInstance reports what is wrong with member i.
func validateInstance(i int, in Instance) error {
	name := fmt.Sprintf("instance %d (%s)", i, in.Model)
	switch {
	case math.IsNaN(in.BatchLatency) || math.IsInf(in.BatchLatency, 0) || in.BatchLatency <= 0:
		return fmt.Errorf("interference: %s: BatchLatency %g s must be finite and > 0", name, in.BatchLatency)
	case math.IsNaN(in.FullBatchLatency) || math.IsInf(in.FullBatchLatency, 0) || in.FullBatchLatency < 0:
		return fmt.Errorf("interference: %s: FullBatchLatency %g s must be finite and >= 0", name, in.FullBatchLatency)
	case math.IsNaN(in.Occupancy) || in.Occupancy < 0 || in.Occupancy > 1:
		return fmt.Errorf("interference: %s: Occupancy %g must be in (0,1] (0 for 1)", name, in.Occupancy)
	case in.Execution != "" && in.Execution != ExecutionCUDAGraph && in.Execution != ExecutionEager:
		return fmt.Errorf("interference: %s: Execution %q is not one of %s, %s", name, in.Execution, ExecutionCUDAGraph, ExecutionEager)
	}
	return nil
}

func clamp01(v float64) float64 {
	switch {
	case math.IsNaN(v) || v < 0:
		return 0
	case v > 1:
		return 1
	}
	return v
}

func occupancy(in Instance) float64 {
	if in.Occupancy == 0 {
		return 1
	}
	return in.Occupancy
}

// Inflations returns, for every member of a GPU shared in mode, its latency
// inflation (>= 1): its mean batch latency beside the others over its solo
// batch latency. An unknown mode or an invalid member (BatchLatency not > 0,
// Occupancy outside [0,1]) is an error naming it.
func (s Sharing) Inflations(mode SharingMode, members []Instance) ([]float64, error) {
	return s.inflations(mode, members, false)
}

// InflationsAtLoad is Inflations for members whose BusyShare is the share
// of wall time each keeps the GPU busy alone (its solo load u: a declared
// hetsev.io/busy-share, an instance flavor's share) rather than measured
// beside its neighbours. A batch that waits for its neighbours is
// outstanding I times as long as alone, so the busy share the model reads
// is b = min(1, u I), solved together with the inflations: three instances
// whose solo loads sum to 1 keep each other waiting nearly all the time on
// a time-sliced GPU, where reading their solo loads as busy shares would
// predict far less inflation than the GPU then shows.
func (s Sharing) InflationsAtLoad(mode SharingMode, members []Instance) ([]float64, error) {
	return s.inflations(mode, members, true)
}

func (s Sharing) inflations(mode SharingMode, members []Instance, atLoad bool) ([]float64, error) {
	for i, in := range members {
		if err := validateInstance(i, in); err != nil {
			return nil, err
		}
	}
	switch mode {
	case SharingNone, SharingTimeSlicing:
		return s.timeSlicing(members, atLoad), nil
	case SharingMPS:
		return s.mps(members, atLoad), nil
	}
	return nil, fmt.Errorf("interference: sharing mode %q is not one of %s, %s, %s", mode, SharingNone, SharingTimeSlicing, SharingMPS)
}

// busyAt is the busy share of a member of busy share (or solo load, with
// atLoad) u at inflation inf.
func busyAt(u, inf float64, atLoad bool) float64 {
	if atLoad {
		return clamp01(u * inf)
	}
	return clamp01(u)
}

// Inflation returns the latency inflation of self beside neighbours on a
// GPU shared in mode (see Inflations).
func (s Sharing) Inflation(mode SharingMode, self Instance, neighbours []Instance) (float64, error) {
	members := make([]Instance, 0, 1+len(neighbours))
	members = append(append(members, self), neighbours...)
	f, err := s.Inflations(mode, members)
	if err != nil {
		return 0, err
	}
	return f[0], nil
}

// smOccupancy is the occupancy under MPS at the batches the instance runs.
func smOccupancy(in Instance) float64 {
	o := occupancy(in)
	if in.FullBatchLatency > in.BatchLatency {
		o *= in.BatchLatency / in.FullBatchLatency
	}
	return o
}

// mps is the MPS model's inflations; with atLoad, the fixed point of
// the busy shares at the members' solo loads.
func (s Sharing) mps(members []Instance, atLoad bool) []float64 {
	step := func(inf, next []float64) {
		for i, a := range members {
			f := 1.0
			for j, b := range members {
				if j == i {
					continue
				}
				f += busyAt(b.BusyShare, inf[j], atLoad) * s.MPS.Contention * math.Pow(smOccupancy(b)/smOccupancy(a), s.MPS.OccupancyExponent)
			}
			next[i] = f
		}
	}
	if !atLoad { // the busy shares do not move: one step is the answer
		ones, next := make([]float64, len(members)), make([]float64, len(members))
		for i := range ones {
			ones[i] = 1
		}
		step(ones, next)
		return next
	}
	return dampedFixedPoint(len(members), step)
}

// dampedFixedPoint solves I = step(I) for n inflations by damped
// iteration from I = 1 (each round moves halfway to step's answer),
// stopping after fixedPointIterations rounds or once no inflation moves
// by fixedPointTolerance. step writes its answer for inf into next.
func dampedFixedPoint(n int, step func(inf, next []float64)) []float64 {
	inf := make([]float64, n)
	next := make([]float64, n)
	for i := range inf {
		inf[i] = 1
	}
	for iter := 0; iter < fixedPointIterations; iter++ {
		step(inf, next)
		delta := 0.0
		for i := range inf {
			v := 0.5*inf[i] + 0.5*next[i]
			delta = max(delta, math.Abs(v-inf[i]))
			inf[i] = v
		}
		if delta < fixedPointTolerance {
			break
		}
	}
	return inf
}

const (
	fixedPointIterations = 200
	fixedPointTolerance  = 1e-9
)

// timeSlicing solves the fixed point of the round-robin model by damped
// iteration from I = 1; with atLoad, the busy shares (and the back-to-back
// shares β they set) move with the inflations.
func (s Sharing) timeSlicing(members []Instance, atLoad bool) []float64 {
	n := len(members)
	k := make([]float64, n)
	q := make([]float64, n)
	beta := make([]float64, n)
	exp := make([]float64, n)
	sw := make([]float64, n)
	for i, in := range members {
		c := s.TimeSlicing
		if in.Execution == ExecutionEager {
			c = s.EagerTimeSlicing
		}
		k[i] = math.Max(1, math.Ceil(in.BatchLatency/c.Slice-1e-9))
		q[i] = in.BatchLatency / k[i]
		exp[i] = c.BackToBackExponent
		beta[i] = math.Pow(clamp01(in.BusyShare), exp[i])
		sw[i] = c.Switch
	}
	// What does not move with the inflations is computed once, per member
	// and per pair, in the same operation order as the formula below, so
	// the answer is the same to the bit: the fixed point runs tens of
	// rounds per solve and the replay solves it for every shared GPU at
	// every step.
	occ := make([]float64, n*n)    // occupancy(a) x occupancy(b)
	kRatio := make([]float64, n*n) // k_j / k_i
	qRun := make([]float64, n*n)   // q_j + switch: a slice of j that runs
	qHalf := make([]float64, n*n)  // q_j / 2 + switch: half of one, on average
	for i, a := range members {
		for j, b := range members {
			s := (sw[i] + sw[j]) / 2
			occ[i*n+j] = occupancy(a) * occupancy(b)
			kRatio[i*n+j] = k[j] / k[i]
			qRun[i*n+j] = q[j] + s
			qHalf[i*n+j] = q[j]/2 + s
		}
	}
	busy := make([]float64, n)  // b_j at the current inflations
	scale := make([]float64, n) // inf_j x L_j
	return dampedFixedPoint(n, func(inf, next []float64) {
		for j, b := range members {
			busy[j] = busyAt(b.BusyShare, inf[j], atLoad)
			scale[j] = inf[j] * b.BatchLatency
			if atLoad {
				beta[j] = math.Pow(busy[j], exp[j])
			}
		}
		for i, a := range members {
			lat := a.BatchLatency
			back, idle := beta[i]+k[i]-1, 1-beta[i]
			for j := range members {
				if j == i {
					continue
				}
				// pi: the chance that j's slice runs when i's is due.
				pi := min(1, busy[j]*kRatio[i*n+j]*scale[i]/scale[j])
				lat += occ[i*n+j] * (back*pi*qRun[i*n+j] + idle*busy[j]*qHalf[i*n+j])
			}
			next[i] = lat / a.BatchLatency
		}
	})
}

// OccupancyTable gives models' solo occupancy (see Instance.Occupancy) per
// sharing mode and execution.
type OccupancyTable map[SharingMode]map[Execution]map[string]float64

// Lookup returns the occupancy of model under mode and exec; SharingNone
// reads as SharingTimeSlicing.
func (t OccupancyTable) Lookup(mode SharingMode, exec Execution, model string) (float64, bool) {
	if mode == SharingNone {
		mode = SharingTimeSlicing
	}
	v, ok := t[mode][exec][model]
	return v, ok
}

// Models lists the models known under mode and exec, sorted.
func (t OccupancyTable) Models(mode SharingMode, exec Execution) []string {
	if mode == SharingNone {
		mode = SharingTimeSlicing
	}
	out := make([]string, 0, len(t[mode][exec]))
	for m := range t[mode][exec] {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// H100Occupancy returns the solo occupancies of the models measured in
// data/measurements/gpu-colocation-h100 (NVIDIA H100 80GB HBM3):
//   - time-slicing, CUDA graphs: 1 for every model, by definition and as
//     measured (a solo CUDA-graph instance is busy 0.999-1.002 of the time);
//   - time-slicing, eager: fitted (`make interference-fit`) to
//     timeslice-eager.json, bounded to [0.05, 1]. ResNet-50's 0.41 and
//     SSD300's 0.78 are near the solo CUDA-graph over solo eager batch
//     latency (0.37, 0.65: the share of an eager batch the GPU runs
//     kernels); BERT-large runs faster eager than captured in these files,
//     so that ratio says nothing for it, and the fit gives 0.25;
//   - MPS, CUDA graphs: fitted (`make interference-fit`) to mps-cudagraph.json
//     with BERT-large fixed at 1 (only ratios enter the MPS model).
func H100Occupancy() OccupancyTable {
	return OccupancyTable{
		SharingTimeSlicing: {
			ExecutionCUDAGraph: {"resnet50": 1, "resnet50-b32": 1, "ssd300-vgg16": 1, "bert-large-seq384": 1},
			ExecutionEager: {
				"resnet50":          H100EagerOccupancyResNet50,
				"resnet50-b32":      H100EagerOccupancyResNet50B32,
				"ssd300-vgg16":      H100EagerOccupancySSD300,
				"bert-large-seq384": H100EagerOccupancyBERTLarge,
			},
		},
		SharingMPS: {
			ExecutionCUDAGraph: {"resnet50": H100MPSOccupancyResNet50, "resnet50-b32": H100MPSOccupancyResNet50B32, "ssd300-vgg16": H100MPSOccupancySSD300, "bert-large-seq384": 1},
		},
	}
}
