package calibration

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/hetsev/hetsev/pkg/interference"
)

// ModeName names a file's sharing mode and execution,
// "<mode>/<execution>" (e.g. "mps/cuda-graph", "time-slicing/eager").
func ModeName(mode interference.SharingMode, exec interference.Execution) string {
	return string(mode) + "/" + string(exec)
}

// ModeFit is how well the co-location model predicts one file (one sharing
// mode and execution): in sample (the model fitted to every scenario) and
// leave-one-scenario-out cross-validated (each co-located scenario predicted
// by the model refitted without it). MAPE and Bias are fractions; Bias is
// the mean over members of predicted/measured − 1 (< 0: under-prediction).
type ModeFit struct {
	Path string
	// Mode is ModeName of the file.
	Mode string
	// Scenarios and Members count the file's co-located scenarios and
	// their members.
	Scenarios, Members int
	// MAPE and Bias of the in-sample predictions (InSample).
	MAPE, Bias float64
	// CVMAPE and CVBias of the held-out predictions (Held).
	CVMAPE, CVBias float64
	// InSample and Held are the members' predictions, in file order.
	InSample, Held []MemberPrediction
}

// Bias is the mean over ps of Predicted/Measured − 1: the signed error of
// the predicted inflation (< 0 when the model under-predicts on average).
// NaN when ps is empty.
func Bias(ps []MemberPrediction) float64 {
	if len(ps) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, p := range ps {
		s += p.Predicted/p.Measured - 1
	}
	return s / float64(len(ps))
}

// withoutScenario returns f without its scenario index si; the other
// scenarios, solo rows included, are shared with f.
func withoutScenario(f *ColocationFile, si int) *ColocationFile {
	g := *f
	g.Scenarios = make([]ColocationScenario, 0, len(f.Scenarios)-1)
	g.Scenarios = append(append(g.Scenarios, f.Scenarios[:si]...), f.Scenarios[si+1:]...)
	return &g
}

// onlyScenario returns f with its solo rows (the solo latencies every
// inflation is relative to) and its scenario index si as the only
// co-located one.
func onlyScenario(f *ColocationFile, si int) *ColocationFile {
	g := *f
	g.Scenarios = nil
	for i, s := range f.Scenarios {
		if i == si || len(s.Members) < 2 {
			g.Scenarios = append(g.Scenarios, s)
		}
	}
	return &g
}

// colocated lists the indices of f's scenarios with two members or more:
// the ones the model predicts, and the folds of the cross-validation.
func colocated(f *ColocationFile) []int {
	var out []int
	for i, s := range f.Scenarios {
		if len(s.Members) >= 2 {
			out = append(out, i)
		}
	}
	return out
}

// CrossValidate predicts every co-located member of f in sample, with
// model and occupancies (the shipped model: fitted to every scenario), and
// held out: for each co-located scenario of f (a fold) it refits the
// model with Fit from start to f without that scenario and predicts the
// scenario with the refitted model. Only f's own scenarios enter a fold's
// fit: the other files' modes have coefficients of their own (see
// fitBlock), so their scenarios would not change a fold's prediction. The
// solo rows stay in every fold: they are the solo latencies the inflations
// are measured against, not predictions. A file with fewer than two
// co-located scenarios cannot be cross-validated and is an error that says
// so. Folds run in parallel; the result does not depend on their order.
func CrossValidate(f *ColocationFile, model interference.Sharing, occupancies interference.OccupancyTable, start FitParams) (ModeFit, error) {
	mode, exec := f.Mode()
	name := ModeName(mode, exec)
	folds := colocated(f)
	if len(folds) < 2 {
		return ModeFit{}, fmt.Errorf("%s: %s: %d co-located scenario(s): leave-one-scenario-out cross-validation needs at least 2 (one to hold out, one to fit)", f.Path, name, len(folds))
	}
	in, err := PredictColocation(f, model, occupancies)
	if err != nil {
		return ModeFit{}, err
	}
	held := make([][]MemberPrediction, len(folds))
	errs := make([]error, len(folds))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				held[k], errs[k] = predictHeldOut(f, folds[k], start)
			}
		}()
	}
	for k := range folds {
		next <- k
	}
	close(next)
	wg.Wait()
	var out []MemberPrediction
	for k := range folds {
		if errs[k] != nil {
			return ModeFit{}, errs[k]
		}
		out = append(out, held[k]...)
	}
	return ModeFit{Path: f.Path, Mode: name, Scenarios: len(folds), Members: len(in),
		MAPE: MAPE(in), Bias: Bias(in), CVMAPE: MAPE(out), CVBias: Bias(out), InSample: in, Held: out}, nil
}

// MinBias is the least signed bias (mean predicted/measured − 1) the
// co-location model may have in any sharing mode, in sample and
// cross-validated: it must not under-predict inflation on average, because
// the scheduler packs instances on a GPU while their predicted inflation
// stays within each one's inflation limit, and an under-predicted
// inflation packs where it should not (an SLO miss), while an
// over-predicted one costs at most a GPU left less full. Where the data is
// noisy (eager time-slicing, where identical instances in one scenario
// differ by up to 1.8x) the model must err towards more inflation. The 5 %
// allows for the noise of a held-out scenario.
const MinBias = -0.05

// CheckBias reports, naming the file and the mode, a bias of m below
// MinBias, in sample or cross-validated.
func (m ModeFit) CheckBias() error {
	for _, b := range []struct {
		what string
		v    float64
	}{{"in-sample", m.Bias}, {"cross-validated", m.CVBias}} {
		if !(b.v >= MinBias) {
			return fmt.Errorf("%s: %s: %s bias %+.4f is below %+.2f: the model under-predicts inflation on average", m.Path, m.Mode, b.what, b.v, MinBias)
		}
	}
	return nil
}

// predictHeldOut refits on f without scenario si and predicts si.
func predictHeldOut(f *ColocationFile, si int, start FitParams) ([]MemberPrediction, error) {
	res, err := Fit([]*ColocationFile{withoutScenario(f, si)}, start)
	if err != nil {
		return nil, fmt.Errorf("%s: fit without scenario %q: %w", f.Path, f.Scenarios[si].Label, err)
	}
	return PredictColocation(onlyScenario(f, si), res.Params.Sharing, res.Params.table())
}
