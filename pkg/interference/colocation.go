package interference

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"

	"sigs.k8s.io/yaml"
)

// Colocation is the co-location model every hetsev component uses (the
// scheduler plugin through pkg/placement, the scaler, the simulator, the
// demo and the evaluator): the fitted coefficients (Sharing) and the solo
// occupancy table, configured the same way for all of them. FittedColocation
// is the default; an operator replaces it with a model file (LoadColocation,
// ColocationFile): the HetsevGPUShare argument interferenceModelFile and the
// hetsev-scaler flag --interference-model.
type Colocation struct {
	// Sharing holds the coefficients per sharing mode.
	Sharing Sharing
	// Occupancy holds solo occupancies of measured models (see
	// ProfileOccupancy for how production profiles use it).
	Occupancy OccupancyTable
	// Source says where the coefficients come from (for messages and logs).
	Source string
}

// FittedSource is the Source of FittedColocation.
const FittedSource = "fitted to data/measurements/gpu-colocation-h100 (NVIDIA H100 80GB HBM3; applied to T4/V100 unmeasured)"

// FittedColocation returns the model fitted to the H100 measurements:
// FittedSharing and H100Occupancy.
func FittedColocation() Colocation {
	return Colocation{Sharing: FittedSharing(), Occupancy: H100Occupancy(), Source: FittedSource}
}

// ProfileOccupancy is the solo occupancy hetsev assumes for an instance of a
// production profile's model (data/profiles): those profiles are NVIDIA
// TensorRT/Triton measurements, i.e. CUDA-graph-like servers that saturate
// the GPU while they run a batch.
//   - Time-slicing (and none): 1. The measurements show a solo CUDA-graph
//     server keeps the GPU busy 0.999-1.002 of the time
//     (data/measurements/gpu-colocation-h100, H100Occupancy).
//   - MPS: the table's fitted CUDA-graph occupancy where a measured model has
//     the profile's model name exactly (e.g. resnet50), else 1. The 1 is an
//     ASSUMPTION, not a measurement: a model hetsev serves but the
//     measurements do not name is taken to fill the whole GPU's SMs.
func (c Colocation) ProfileOccupancy(mode SharingMode, model string) float64 {
	if mode != SharingMPS {
		return 1
	}
	if o, ok := c.Occupancy.Lookup(SharingMPS, ExecutionCUDAGraph, model); ok && o > 0 && o <= 1 {
		return o
	}
	return 1
}

// ProfileInstance is an instance of a production profile's model (see
// ProfileOccupancy) busy a share busy of the time, whose solo batch latency
// is batchLatency seconds: the profile's batch latency for the GPU type it
// runs on (data/profiles via the GPU catalog). The time slice and switch cost
// are the H100's; on T4 and V100 they are applied unmeasured.
func (c Colocation) ProfileInstance(mode SharingMode, model string, busy, batchLatency float64) Instance {
	return Instance{Model: model, BusyShare: busy, BatchLatency: batchLatency, Occupancy: c.ProfileOccupancy(mode, model), Execution: ExecutionCUDAGraph}
}

// Validate reports the first invalid coefficient or occupancy, naming its
// field as the model file spells it.
func (c Colocation) Validate() error {
	f := c.File()
	return f.validate()
}

// ColocationFileVersion is the version a model file declares.
const ColocationFileVersion = "hetsev.io/interference/v1"

// ColocationFile is the model file format (YAML or JSON), e.g.
//
//	version: hetsev.io/interference/v1
//	source: my measurements on A100, 2026-12
//	timeSlicing: {sliceSeconds: 0.00217, switchSeconds: 0.00025, backToBackExponent: 8}
//	eagerTimeSlicing: {sliceSeconds: 0.003037, switchSeconds: 0.000298, backToBackExponent: 8}
//	mps: {contention: 0.7332, occupancyExponent: 0.8911}
//	occupancy:
//	  time-slicing: {cuda-graph: {resnet50: 1}, eager: {resnet50: 0.4129}}
//	  mps: {cuda-graph: {resnet50: 0.3006}}
//
// The coefficients do not depend on the sharing mode's label value beyond
// time-slicing and MPS (none reads as time-slicing). Every coefficient is
// required; unknown fields are refused.
type ColocationFile struct {
	// Version must be ColocationFileVersion.
	Version string `json:"version"`
	// Source says where the values come from (free text, optional).
	Source           string           `json:"source,omitempty"`
	TimeSlicing      *TimeSlicingFile `json:"timeSlicing"`
	EagerTimeSlicing *TimeSlicingFile `json:"eagerTimeSlicing"`
	MPS              *MPSFile         `json:"mps"`
	Occupancy        OccupancyTable   `json:"occupancy,omitempty"`
}

// TimeSlicingFile are TimeSlicingCoefficients in a model file.
type TimeSlicingFile struct {
	// SliceSeconds is τ in seconds (> 0).
	SliceSeconds *float64 `json:"sliceSeconds"`
	// SwitchSeconds is s in seconds (>= 0).
	SwitchSeconds *float64 `json:"switchSeconds"`
	// BackToBackExponent is p (>= 0).
	BackToBackExponent *float64 `json:"backToBackExponent"`
}

// MPSFile are MPSCoefficients in a model file.
type MPSFile struct {
	// Contention is γ (>= 0).
	Contention *float64 `json:"contention"`
	// OccupancyExponent is α (>= 0).
	OccupancyExponent *float64 `json:"occupancyExponent"`
}

// File returns c as a model file.
func (c Colocation) File() ColocationFile {
	ts := func(t TimeSlicingCoefficients) *TimeSlicingFile {
		return &TimeSlicingFile{SliceSeconds: ptr(t.Slice), SwitchSeconds: ptr(t.Switch), BackToBackExponent: ptr(t.BackToBackExponent)}
	}
	return ColocationFile{
		Version: ColocationFileVersion, Source: c.Source,
		TimeSlicing: ts(c.Sharing.TimeSlicing), EagerTimeSlicing: ts(c.Sharing.EagerTimeSlicing),
		MPS:       &MPSFile{Contention: ptr(c.Sharing.MPS.Contention), OccupancyExponent: ptr(c.Sharing.MPS.OccupancyExponent)},
		Occupancy: c.Occupancy,
	}
}

func ptr(v float64) *float64 { return &v }

// LoadColocation reads and validates a model file (YAML or JSON). An empty
// path is FittedColocation. Errors name the file and the field.
func LoadColocation(path string) (Colocation, error) {
	if path == "" {
		return FittedColocation(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Colocation{}, fmt.Errorf("interference model file: %w", err)
	}
	return ParseColocation(path, data)
}

// ParseColocation parses and validates the model file data read from path
// (path only names it in errors).
func ParseColocation(path string, data []byte) (Colocation, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return Colocation{}, fmt.Errorf("interference model file %s: %w", path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	var f ColocationFile
	if err := dec.Decode(&f); err != nil {
		return Colocation{}, fmt.Errorf("interference model file %s: %w", path, err)
	}
	if err := f.validate(); err != nil {
		return Colocation{}, fmt.Errorf("interference model file %s: %w", path, err)
	}
	c := Colocation{Source: f.Source, Occupancy: f.Occupancy}
	if c.Source == "" {
		c.Source = path
	}
	c.Sharing.TimeSlicing = TimeSlicingCoefficients{Slice: *f.TimeSlicing.SliceSeconds, Switch: *f.TimeSlicing.SwitchSeconds, BackToBackExponent: *f.TimeSlicing.BackToBackExponent}
	c.Sharing.EagerTimeSlicing = TimeSlicingCoefficients{Slice: *f.EagerTimeSlicing.SliceSeconds, Switch: *f.EagerTimeSlicing.SwitchSeconds, BackToBackExponent: *f.EagerTimeSlicing.BackToBackExponent}
	c.Sharing.MPS = MPSCoefficients{Contention: *f.MPS.Contention, OccupancyExponent: *f.MPS.OccupancyExponent}
	if c.Occupancy == nil {
		c.Occupancy = OccupancyTable{}
	}
	return c, nil
}

// validate reports the first missing or invalid field, named as in the file.
func (f ColocationFile) validate() error {
	if f.Version != ColocationFileVersion {
		return fmt.Errorf("version: %q is not %q", f.Version, ColocationFileVersion)
	}
	type coef struct {
		field    string
		v        *float64
		positive bool
	}
	var cs []coef
	for _, t := range []struct {
		name string
		ts   *TimeSlicingFile
	}{{"timeSlicing", f.TimeSlicing}, {"eagerTimeSlicing", f.EagerTimeSlicing}} {
		if t.ts == nil {
			return fmt.Errorf("%s: required", t.name)
		}
		cs = append(cs, coef{t.name + ".sliceSeconds", t.ts.SliceSeconds, true}, coef{t.name + ".switchSeconds", t.ts.SwitchSeconds, false}, coef{t.name + ".backToBackExponent", t.ts.BackToBackExponent, false})
	}
	if f.MPS == nil {
		return fmt.Errorf("mps: required")
	}
	cs = append(cs, coef{"mps.contention", f.MPS.Contention, false}, coef{"mps.occupancyExponent", f.MPS.OccupancyExponent, false})
	for _, c := range cs {
		switch {
		case c.v == nil:
			return fmt.Errorf("%s: required", c.field)
		case math.IsNaN(*c.v) || math.IsInf(*c.v, 0):
			return fmt.Errorf("%s: %g is not finite", c.field, *c.v)
		case *c.v < 0 || (c.positive && *c.v == 0):
			if c.positive {
				return fmt.Errorf("%s: %g must be > 0", c.field, *c.v)
			}
			return fmt.Errorf("%s: %g must be >= 0", c.field, *c.v)
		}
	}
	modes := make([]string, 0, len(f.Occupancy))
	for m := range f.Occupancy {
		modes = append(modes, string(m))
	}
	sort.Strings(modes)
	for _, m := range modes {
		if SharingMode(m) != SharingTimeSlicing && SharingMode(m) != SharingMPS {
			return fmt.Errorf("occupancy.%s: sharing mode is not one of %s, %s", m, SharingTimeSlicing, SharingMPS)
		}
		for e, models := range f.Occupancy[SharingMode(m)] {
			if e != ExecutionCUDAGraph && e != ExecutionEager {
				return fmt.Errorf("occupancy.%s.%s: execution is not one of %s, %s", m, e, ExecutionCUDAGraph, ExecutionEager)
			}
			names := make([]string, 0, len(models))
			for n := range models {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				if o := models[n]; !(o > 0 && o <= 1) {
					return fmt.Errorf("occupancy.%s.%s.%s: %g must be in (0,1]", m, e, n, o)
				}
			}
		}
	}
	return nil
}

// PairInflation is the latency inflation of an instance of a production
// profile's model (ProfileInstance; solo batch latency batchLatency seconds)
// beside one other instance of the same model and latency, both busy a
// share busy of the time, on a GPU shared in mode: the co-location hetsev
// allows for where it does not know the neighbours (the scaler's capacity
// factor, the simulated servers' deadline-aware queue timeout). Under
// time-slicing it is about 1 + busy (a busy neighbour doubles the batch
// latency, as measured); under MPS 1 + busy·γ. An invalid latency (not > 0)
// or mode gives 1.
func (c Colocation) PairInflation(mode SharingMode, model string, busy, batchLatency float64) float64 {
	in := c.ProfileInstance(mode, model, busy, batchLatency)
	f, err := c.Sharing.Inflations(mode, []Instance{in, in})
	if err != nil {
		return 1
	}
	return f[0]
}
