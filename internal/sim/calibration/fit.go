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

// Evaluate returns the MAPE of p on each file.
func (p FitParams) Evaluate(files []*ColocationFile) (map[string]float64, error) {
	if err := p.Sharing.Validate(); err != nil {
		return nil, err
	}
	t := p.table()
	for _, o := range p.MPSOccupancy {
		if !(o > 0 && o <= 1) {
			return nil, fmt.Errorf("MPS occupancy %g out of (0,1]", o)
		}
	}
	for _, o := range p.EagerOccupancy {
		if !(o >= 0.05 && o <= 1) {
			return nil, fmt.Errorf("eager occupancy %g out of (0,1]", o)
		}
	}
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

// Fit minimises the sum over files of the MAPE of predicted inflations by
// Nelder-Mead from start; the BackToBackExponents stay as start has them (the
// files hold busy shares of 1 and of at most 0.75 only, so any p >= 6 fits
// them alike).
func Fit(files []*ColocationFile, start FitParams) (FitResult, error) {
	cost := func(v []float64) float64 {
		p := paramsOf(v, start)
		m, err := p.Evaluate(files)
		if err != nil {
			return math.Inf(1)
		}
		s := 0.0
		for _, x := range m {
			s += x
		}
		return s
	}
	// Restarts from the best point found rebuild the simplex, which gets
	// Nelder-Mead out of the flat spots the piecewise (ceil) slice count
	// leaves.
	best := start.vector()
	for r := 0; r < 4; r++ {
		best = nelderMead(cost, best, 3000)
	}
	p := paramsOf(best, start)
	m, err := p.Evaluate(files)
	if err != nil {
		return FitResult{}, err
	}
	return FitResult{Params: p, MAPE: m}, nil
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
		sort.Slice(simplex, func(i, j int) bool { return simplex[i].v < simplex[j].v })
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
	sort.Slice(simplex, func(i, j int) bool { return simplex[i].v < simplex[j].v })
	return simplex[0].x
}
