package calibration

import (
	"fmt"
	"math"
	"sort"

	"github.com/hetsev/hetsev/pkg/interference"
)

// FitParams is what Fit adjusts: the Sharing coefficients and the MPS
// occupancies of the measured models other than BERT-large (fixed at 1).
type FitParams struct {
	Sharing        interference.Sharing
	MPSOccupancy   map[string]float64
	EagerOccupancy map[string]float64
}

// FitResult is a fit and its MAPE per file.
type FitResult struct {
	Params FitParams
	MAPE   map[string]float64 // by file path
}

// fitShared is the number of Sharing coefficients at the head of the
// optimiser's vector.
const fitShared = 6

// fitVector maps the parameters to and from the optimiser's vector.
var fitModels = []string{"resnet50", "resnet50-b32", "ssd300-vgg16"}

var eagerModels = []string{"resnet50", "resnet50-b32", "ssd300-vgg16", "bert-large-seq384"}

func (p FitParams) vector() []float64 {
	v := []float64{p.Sharing.TimeSlicing.Slice * 1000, p.Sharing.TimeSlicing.Switch * 1000, p.Sharing.MPS.Contention, p.Sharing.MPS.OccupancyExponent,
		p.Sharing.EagerTimeSlicing.Slice * 1000, p.Sharing.EagerTimeSlicing.Switch * 1000}
	for _, m := range fitModels {
		v = append(v, p.MPSOccupancy[m])
	}
	for _, m := range eagerModels {
		v = append(v, p.EagerOccupancy[m])
	}
	return v
}

func paramsOf(v []float64, p0 FitParams) FitParams {
	p := p0
	p.Sharing.TimeSlicing.Slice = v[0] / 1000
	p.Sharing.TimeSlicing.Switch = v[1] / 1000
	p.Sharing.MPS.Contention = v[2]
	p.Sharing.MPS.OccupancyExponent = v[3]
	p.Sharing.EagerTimeSlicing.Slice = v[4] / 1000
	p.Sharing.EagerTimeSlicing.Switch = v[5] / 1000
	p.MPSOccupancy = map[string]float64{}
	for i, m := range fitModels {
		p.MPSOccupancy[m] = v[fitShared+i]
	}
	p.EagerOccupancy = map[string]float64{}
	for i, m := range eagerModels {
		p.EagerOccupancy[m] = v[fitShared+len(fitModels)+i]
	}
	return p
}

// OccupancyTable is H100Occupancy with p's fitted MPS and eager
// occupancies.
func (p FitParams) OccupancyTable() interference.OccupancyTable { return p.table() }

func (p FitParams) table() interference.OccupancyTable {
	t := interference.H100Occupancy()
	mps := map[string]float64{"bert-large-seq384": 1}
	for m, o := range p.MPSOccupancy {
		mps[m] = o
	}
	t[interference.SharingMPS][interference.ExecutionCUDAGraph] = mps
	eager := map[string]float64{}
	for m, o := range p.EagerOccupancy {
		eager[m] = o
	}
	t[interference.SharingTimeSlicing][interference.ExecutionEager] = eager
	return t
}

// check reports a coefficient or occupancy out of its range: the fit's
// bounds.
func (p FitParams) check() error {
	if err := p.Sharing.Validate(); err != nil {
		return err
	}
	for _, o := range p.MPSOccupancy {
		if !(o > 0 && o <= 1) {
			return fmt.Errorf("MPS occupancy %g out of (0,1]", o)
		}
	}
	for _, o := range p.EagerOccupancy {
		if !(o >= 0.05 && o <= 1) {
			return fmt.Errorf("eager occupancy %g out of [0.05,1]", o)
		}
	}
	return nil
}

// Evaluate returns the MAPE of p on each file.
func (p FitParams) Evaluate(files []*ColocationFile) (map[string]float64, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	t := p.table()
	out := map[string]float64{}
	for _, f := range files {
		ps, err := PredictColocation(f, p.Sharing, t)
		if err != nil {
			return nil, err
		}
		out[f.Path] = MAPE(ps)
	}
	return out, nil
}

// FitStart is where Fit starts, for `make interference-fit` and for every
// fold of CrossValidate alike: round values, none taken from a fit, so that
// the shipped coefficients are reproducible from the files alone and a fold
// starts from nothing its held-out scenario decided. τ 2 ms is the order of
// CUDA's time slice; every occupancy starts at 0.5, the MPS contention at
// 0.5 and its exponent at 1. BERT-large's MPS occupancy is fixed at 1 (only
// ratios enter the MPS model), and the BackToBackExponents at 8 (not
// fitted, see Fit).
func FitStart() FitParams {
	ts := interference.TimeSlicingCoefficients{Slice: 0.002, Switch: 0.0002, BackToBackExponent: 8}
	p := FitParams{
		Sharing: interference.Sharing{
			TimeSlicing:      ts,
			EagerTimeSlicing: ts,
			MPS:              interference.MPSCoefficients{Contention: 0.5, OccupancyExponent: 1},
		},
		MPSOccupancy:   map[string]float64{},
		EagerOccupancy: map[string]float64{},
	}
	for _, m := range fitModels {
		p.MPSOccupancy[m] = 0.5
	}
	for _, m := range eagerModels {
		p.EagerOccupancy[m] = 0.5
	}
	return p
}

// fitBlock is the part of the optimiser's vector that the files of one
// sharing mode and execution depend on, and only they: the model's
// coefficients per mode are disjoint (time-slicing with CUDA graphs: Slice
// and Switch; eager: EagerTimeSlicing and the eager occupancies; MPS: the MPS
// coefficients and occupancies), so a fit over several files is one fit per
// block, each over its own files.
type fitBlock struct {
	mode   interference.SharingMode
	exec   interference.Execution
	coords []int
}

func fitBlocks() []fitBlock {
	span := func(from, n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = from + i
		}
		return out
	}
	return []fitBlock{
		{interference.SharingTimeSlicing, interference.ExecutionCUDAGraph, []int{0, 1}},
		{interference.SharingMPS, interference.ExecutionCUDAGraph, append([]int{2, 3}, span(fitShared, len(fitModels))...)},
		{interference.SharingTimeSlicing, interference.ExecutionEager, append([]int{4, 5}, span(fitShared+len(fitModels), len(eagerModels))...)},
	}
}

// Fit minimises, per sharing mode and execution (fitBlock), the fit's cost
// (FitCost) summed over that mode's files, by Nelder-Mead from start;
// coefficients of a mode no file has stay as start has them, and so do the
// BackToBackExponents (the files hold busy shares of 1 and of at most 0.75
// only, so any p >= 6 fits them alike). The result does not depend on the
// order of files. A file without a co-located scenario is an error.
func Fit(files []*ColocationFile, start FitParams) (FitResult, error) {
	x := start.vector()
	for _, b := range fitBlocks() {
		var fs []*ColocationFile
		for _, f := range files {
			if mode, exec := f.Mode(); mode == b.mode && exec == b.exec {
				fs = append(fs, f)
			}
		}
		if len(fs) == 0 {
			continue
		}
		for _, f := range fs {
			if len(colocated(f)) == 0 {
				return FitResult{}, fmt.Errorf("%s: no co-located scenario (two members or more) to fit to", f.Path)
			}
		}
		sort.SliceStable(fs, func(i, j int) bool { return fs[i].Path < fs[j].Path })
		cost := func(sub []float64) float64 {
			v := append([]float64(nil), x...)
			for i, c := range b.coords {
				v[c] = sub[i]
			}
			p := paramsOf(v, start)
			s := 0.0
			for _, f := range fs {
				c, err := p.cost(f)
				if err != nil {
					return math.Inf(1)
				}
				s += c
			}
			return s
		}
		sub := make([]float64, len(b.coords))
		for i, c := range b.coords {
			sub[i] = x[c]
		}
		// Restarts from the best point found rebuild the simplex, which
		// gets Nelder-Mead out of the flat spots the piecewise (ceil)
		// slice count leaves.
		best := cost(sub)
		for r := 0; r < fitRestarts; r++ {
			next := nelderMead(cost, sub, fitIterations)
			v := cost(next)
			if !(v < best) && r > 0 {
				break
			}
			sub, best = next, math.Min(v, best)
		}
		for i, c := range b.coords {
			x[c] = sub[i]
		}
	}
	p := paramsOf(x, start)
	m, err := p.Evaluate(files)
	if err != nil {
		return FitResult{}, err
	}
	return FitResult{Params: p, MAPE: m}, nil
}

// The optimiser's budget: restarts of Nelder-Mead per block, and iterations
// per restart (each stops earlier once its simplex has collapsed).
const (
	fitRestarts   = 4
	fitIterations = 3000
)

// cost is what Fit minimises on one file: the MAPE of p's predictions.
func (p FitParams) cost(f *ColocationFile) (float64, error) {
	if err := p.check(); err != nil {
		return 0, err
	}
	ps, err := PredictColocation(f, p.Sharing, p.table())
	if err != nil {
		return 0, err
	}
	return MAPE(ps), nil
}

// nelderMead minimises f from x0 (initial simplex: +10 % per coordinate).
func nelderMead(f func([]float64) float64, x0 []float64, iters int) []float64 {
	n := len(x0)
	type pt struct {
		x []float64
		v float64
	}
	simplex := make([]pt, n+1)
	simplex[0] = pt{append([]float64(nil), x0...), f(x0)}
	for i := 0; i < n; i++ {
		x := append([]float64(nil), x0...)
		if x[i] == 0 {
			x[i] = 0.05
		} else {
			x[i] *= 1.1
		}
		simplex[i+1] = pt{x, f(x)}
	}
	lerp := func(a, b []float64, t float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = a[i] + t*(b[i]-a[i])
		}
		return out
	}
	for it := 0; it < iters; it++ {
		sort.SliceStable(simplex, func(i, j int) bool { return simplex[i].v < simplex[j].v })
		if collapsed(simplex[0].x, simplex[n].x, simplex[0].v, simplex[n].v) {
			break
		}
		c := make([]float64, n)
		for _, p := range simplex[:n] {
			for i := range c {
				c[i] += p.x[i] / float64(n)
			}
		}
		worst := simplex[n]
		xr := lerp(c, worst.x, -1)
		vr := f(xr)
		switch {
		case vr < simplex[0].v:
			xe := lerp(c, worst.x, -2)
			if ve := f(xe); ve < vr {
				simplex[n] = pt{xe, ve}
			} else {
				simplex[n] = pt{xr, vr}
			}
		case vr < simplex[n-1].v:
			simplex[n] = pt{xr, vr}
		default:
			xc := lerp(c, worst.x, 0.5)
			if vc := f(xc); vc < worst.v {
				simplex[n] = pt{xc, vc}
				continue
			}
			for i := 1; i <= n; i++ {
				x := lerp(simplex[0].x, simplex[i].x, 0.5)
				simplex[i] = pt{x, f(x)}
			}
		}
	}
	sort.SliceStable(simplex, func(i, j int) bool { return simplex[i].v < simplex[j].v })
	return simplex[0].x
}

// collapsed tells whether a simplex whose best and worst points are a and b
// (costs va, vb) has converged: costs within 1e-12 and every coordinate
// within 1e-9 (the optimiser's units: ms and fractions). Both are needed:
// on the flat steps the slice count leaves, costs agree while the points
// still differ.
func collapsed(a, b []float64, va, vb float64) bool {
	if math.Abs(vb-va) > 1e-12 {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-9 {
			return false
		}
	}
	return true
}
