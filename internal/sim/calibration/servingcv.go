package calibration

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hetsev/hetsev/pkg/interference"
)

// P98Bias is the mean over ps of PredictedP98/MeasuredP98 − 1 (< 0: the
// simulation under-predicts the tail on average); NaN when ps is empty.
func P98Bias(ps []ServingPrediction) float64 {
	if len(ps) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, p := range ps {
		s += p.PredictedP98/p.MeasuredP98 - 1
	}
	return s / float64(len(ps))
}

// SplitCoLocated returns the members of ps that ran alone on their GPU
// and those that shared it, in ps's order. The bias of the shared ones is
// the co-location model's (with the server's own error under it); the
// solo ones' bias is the simulated server's alone, which no co-location
// coefficient changes.
func SplitCoLocated(ps []ServingPrediction) (solo, shared []ServingPrediction) {
	for _, p := range ps {
		if p.CoLocated {
			shared = append(shared, p)
		} else {
			solo = append(solo, p)
		}
	}
	return solo, shared
}

// modelSet is the sorted models of a scenario's members, joined by "+".
func modelSet(models []string) string {
	sort.Strings(models)
	return strings.Join(models, "+")
}

// FindColocation returns the co-location file in dir (*.json, read with
// occupancies) of sharing mode and execution mode/exec, the first by name;
// an error when there is none.
func FindColocation(dir string, mode interference.SharingMode, exec interference.Execution, occupancies interference.OccupancyTable) (*ColocationFile, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	for _, p := range paths {
		c, err := ReadColocation(p, occupancies)
		if err != nil {
			return nil, err
		}
		if m, e := c.Mode(); m == mode && e == exec {
			return c, nil
		}
	}
	return nil, fmt.Errorf("%s: no co-location file of %s to cross-validate against", dir, ModeName(mode, exec))
}

// CrossValidateServing predicts every member of f held out: the serving
// files never enter the fit, but a co-located serving scenario runs models
// whose co-location the fit has seen in c, the co-location file of f's
// mode and execution. So for each serving scenario of two members or more,
// the model is refitted with Fit from start to c without every co-located
// scenario of the same models (the serving pair of ResNet-50s leaves out
// the identical pair, the duty sweeps and the half-busy pair of
// ResNet-50s), and the scenario is simulated as PredictServing simulates it
// (same arrivals) with the refitted model and col's other settings. A solo
// scenario has no neighbour for the model to predict: it is simulated with
// col, as in sample. A serving scenario whose models leave no co-located
// scenario in c to fit to is an error naming it.
func CrossValidateServing(f *ServingFile, c *ColocationFile, col interference.Colocation, opt SimOptions, start FitParams) ([]ServingPrediction, error) {
	fm, fe := f.Mode()
	if cm, ce := c.Mode(); cm != fm || ce != fe {
		return nil, fmt.Errorf("%s is %s, %s is %s: cross-validation needs the co-location file of the serving file's mode", c.Path, ModeName(cm, ce), f.Path, ModeName(fm, fe))
	}
	var out []ServingPrediction
	for si, s := range f.Scenarios {
		use := col
		if len(s.Members) >= 2 {
			models := make([]string, len(s.Members))
			for i, m := range s.Members {
				models[i] = m.Model()
			}
			key := modelSet(models)
			train := *c
			train.Scenarios = nil
			left := 0
			for _, cs := range c.Scenarios {
				ms := make([]string, len(cs.Members))
				for i, m := range cs.Members {
					ms[i] = m.Model()
				}
				if len(cs.Members) >= 2 && modelSet(ms) == key {
					left++
					continue
				}
				train.Scenarios = append(train.Scenarios, cs)
			}
			if len(colocated(&train)) == 0 {
				return nil, fmt.Errorf("%s: scenario %q: %s without its %d co-located scenario(s) of %s has none left to fit to", f.Path, s.Label, c.Path, left, key)
			}
			res, err := Fit([]*ColocationFile{&train}, start)
			if err != nil {
				return nil, fmt.Errorf("%s: scenario %q: fit without %s: %w", f.Path, s.Label, key, err)
			}
			use.Sharing = res.Params.Sharing
			use.Occupancy = res.Params.OccupancyTable()
			use.Source = fmt.Sprintf("refitted to %s without its %d scenario(s) of %s", c.Path, left, key)
		}
		ps, err := predictServing(f, use, opt, func(i int) bool { return i == si })
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	return out, nil
}
