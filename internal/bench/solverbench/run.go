package solverbench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hetsev/hetsev/pkg/heterogeneity"
	"github.com/hetsev/hetsev/pkg/heterogeneity/ilp"
)

// OptimalTolerance is the relative cost difference within which a heuristic
// decision counts as optimal.
const OptimalTolerance = 1e-9

// Stats compares the heuristic with the optimum over a group of instances.
//
// Cost measure: ilp.Problem.TotalCost, the hourly price of the
// service after the action plus the launch term of HetSev 4.1, in USD/h. It
// differs from the ILP objective (the cost of the action alone) by the
// constant price of the running instances, so it ranks actions exactly as
// the objective does, but it is positive, so the relative gap
// TotalCost(heuristic) / TotalCost(optimum) - 1 is defined for scale-ins too
// (whose objective is negative) and reads as "the heuristic's decision leaves
// the service this much more expensive per hour". ActionGap gives the gap of
// the objective itself for scale-outs, where it is positive.
type Stats struct {
	// Instances in the group.
	Instances int
	// ExactFeasible counts the instances whose ILP has a feasible action
	// (the optimum exists).
	ExactFeasible int
	// Optimal counts the instances where the heuristic's action is feasible
	// and costs within OptimalTolerance (relative) of the optimum.
	Optimal int
	// HeuristicMissed counts instances with an optimum where the
	// heuristic's action is not feasible (e.g. a partial scale-out although
	// a full one fits).
	HeuristicMissed int
	// BothInfeasible counts instances where neither finds a feasible action
	// (no eligible type, no room, MaxReplicas reached).
	BothInfeasible int
	// GapN counts the instances with both actions feasible, over which the
	// gaps are taken.
	GapN int
	// MeanGap and MaxGap are the mean and the largest TotalCost gap
	// (fractions, 0.1 = 10 %).
	MeanGap, MaxGap float64
	// ActionGapN, MeanActionGap and MaxActionGap are the gap of the ILP
	// objective (Problem.Cost) over the feasible scale-outs with a positive
	// optimum.
	ActionGapN                  int
	MeanActionGap, MaxActionGap float64
	// Anomalies counts impossible outcomes: the heuristic cheaper than the
	// optimum, a feasible heuristic action where the ILP has none, or an
	// exact Decide that does not return the optimum. It must be 0.
	Anomalies int

	sumGap, sumActionGap float64
}

// OptimalFraction is Optimal / ExactFeasible (0 when nothing is feasible).
func (s Stats) OptimalFraction() float64 {
	if s.ExactFeasible == 0 {
		return 0
	}
	return float64(s.Optimal) / float64(s.ExactFeasible)
}

func (s *Stats) finish() {
	if s.GapN > 0 {
		s.MeanGap = s.sumGap / float64(s.GapN)
	}
	if s.ActionGapN > 0 {
		s.MeanActionGap = s.sumActionGap / float64(s.ActionGapN)
	}
}

// Timing summarises decision times, in microseconds.
type Timing struct {
	// Samples is the number of timed calls.
	Samples int
	// P50, P99 and Max are percentiles of the call time, in microseconds.
	P50, P99, Max float64
	// MeanMicrosecs is the mean call time, in microseconds.
	MeanMicrosecs float64
}

func newTiming(d []time.Duration) Timing {
	if len(d) == 0 {
		return Timing{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	us := func(x time.Duration) float64 { return float64(x) / float64(time.Microsecond) }
	var sum time.Duration
	for _, x := range s {
		sum += x
	}
	at := func(q float64) float64 { return us(s[min(len(s)-1, int(q*float64(len(s))))]) }
	return Timing{Samples: len(s), P50: at(0.50), P99: at(0.99), Max: us(s[len(s)-1]),
		MeanMicrosecs: us(sum) / float64(len(s))}
}

// Report is the outcome of Run.
//
// What is compared. Each instance is decided by Autoscaler.Decide with each
// solver. The reference is the optimum of the ILP of HetSev 4.1 that the
// decision solves (heterogeneity.DecisionProblem in the instance's
// direction), found by ilp.SolveExactResult:
//
//   - ScaleOut: scale-outs whose ILP (X_i >= 0, capacity W/threshold, room,
//     SLO check, replica bounds) has a feasible action. This is the problem
//     the heuristic's instance selection approximates, and the headline
//     (ResultLine) is taken over it.
//   - ScaleOutPartial: scale-outs whose deficit cannot be covered; the
//     reference is the exact solver's partial action, the cheapest way to
//     reach the most capacity that fits (Problem.Relaxed).
//   - ScaleIn: scale-ins against the ILP with X_i <= 0 (capacity
//     W/(threshold - hysteresis)), whose optimum may remove several
//     instances at once. The heuristic removes one instance per interval by
//     design (HetSev 4.1), so its gap here measures that pace, not its
//     choice of instance.
//   - ScaleInOneStep: the same scale-ins against the best removal of at
//     most one instance, which is the choice the heuristic makes.
type Report struct {
	Config Config
	// Groups of decisions, see above.
	ScaleOut, ScaleOutPartial, ScaleIn, ScaleInOneStep Stats
	// NoAction counts scale-outs where no action is possible for either
	// solver (no eligible type with room, or MaxReplicas reached).
	NoAction int
	// ScaleOutByTypes splits ScaleOut by the number of GPU types (index
	// 2..8).
	ScaleOutByTypes [9]Stats
	// Synthetic counts instances with at least one synthetic type;
	// Perturbed those with perturbed prices.
	Synthetic, Perturbed int
	// Heuristic and Exact time Autoscaler.Decide with each solver over all
	// instances (validation, SLO check, solver and reason included); Solve
	// times ilp.SolveExactResult on the decision's ILP alone.
	Heuristic, Exact, Solve Timing
	// NotProven counts exact solutions that hit the node budget.
	NotProven int
	// MaxNodes is the largest search of the exact solver, in nodes.
	MaxNodes int
	// Elapsed is the wall time of Run.
	Elapsed time.Duration
}

// Anomalies sums the impossible outcomes over all groups; it must be 0.
func (r Report) Anomalies() int {
	return r.ScaleOut.Anomalies + r.ScaleOutPartial.Anomalies + r.ScaleIn.Anomalies + r.ScaleInOneStep.Anomalies
}

// Run decides every instance with both solvers, compares the actions with
// the optimum of the decision's ILP and times each solver cfg.Repetitions
// times per instance (time.Now around each call).
func Run(instances []Instance, cfg Config) Report {
	start := time.Now()
	rep := Report{Config: cfg}
	reps := max(cfg.Repetitions, 1)
	var th, te, ts []time.Duration
	for _, in := range instances {
		ph, pe := in.Policy, in.Policy
		ph.Solver, pe.Solver = heterogeneity.SolverHeuristic, heterogeneity.SolverExact
		pr, err := heterogeneity.DecisionProblem(in.Obs, in.Policy, in.Direction)
		if err != nil {
			rep.ScaleOut.Anomalies++
			continue
		}

		var h, e heterogeneity.Action
		var opt ilp.ExactResult
		for range reps {
			a := heterogeneity.NewAutoscaler(ph)
			t0 := time.Now()
			h = a.Decide(in.Obs)
			th = append(th, time.Since(t0))

			b := heterogeneity.NewAutoscaler(pe)
			t0 = time.Now()
			e = b.Decide(in.Obs)
			te = append(te, time.Since(t0))

			t0 = time.Now()
			opt = ilp.SolveExactResult(pr)
			ts = append(ts, time.Since(t0))
		}
		if !opt.Optimal {
			rep.NotProven++
		}
		rep.MaxNodes = max(rep.MaxNodes, opt.Nodes)
		if in.Synthetic > 0 {
			rep.Synthetic++
		}
		if in.PricesPerturbed {
			rep.Perturbed++
		}

		if in.Direction == ilp.ScaleOutOnly {
			if opt.Feasible {
				compare(&rep.ScaleOut, pr, h.Delta, e.Delta, opt, true)
				if k := len(in.Obs.Types); k < len(rep.ScaleOutByTypes) {
					compare(&rep.ScaleOutByTypes[k], pr, h.Delta, e.Delta, opt, true)
				}
				continue
			}
			relaxed := pr.Relaxed()
			optR := ilp.SolveExactResult(relaxed)
			if !optR.Feasible || isZero(optR.X) {
				rep.NoAction++
				if !isZero(h.Delta) || !isZero(e.Delta) {
					rep.ScaleOutPartial.Anomalies++
				}
				continue
			}
			compare(&rep.ScaleOutPartial, relaxed, h.Delta, e.Delta, optR, true)
			continue
		}
		compare(&rep.ScaleIn, pr, h.Delta, e.Delta, opt, false)
		one := pr
		total := 0
		for _, t := range pr.Types {
			total += t.Running
		}
		one.MinReplicas = max(pr.MinReplicas, total-1)
		compare(&rep.ScaleInOneStep, one, h.Delta, nil, ilp.SolveExactResult(one), false)
	}
	for _, s := range []*Stats{&rep.ScaleOut, &rep.ScaleOutPartial, &rep.ScaleIn, &rep.ScaleInOneStep} {
		s.finish()
	}
	for i := range rep.ScaleOutByTypes {
		rep.ScaleOutByTypes[i].finish()
	}
	rep.Heuristic, rep.Exact, rep.Solve = newTiming(th), newTiming(te), newTiming(ts)
	rep.Elapsed = time.Since(start)
	return rep
}

func isZero(x []int) bool {
	for _, v := range x {
		if v != 0 {
			return false
		}
	}
	return true
}

// compare adds one instance to s: the heuristic's action xh against the
// optimum opt of pr; xe, the exact Decide's action, must equal opt.X (nil:
// not checked).
func compare(s *Stats, pr ilp.Problem, xh, xe []int, opt ilp.ExactResult, scaleOut bool) {
	s.Instances++
	if xe != nil && opt.Feasible && !slices.Equal(xe, opt.X) {
		s.Anomalies++
	}
	hFeasible := pr.Feasible(xh)
	if !opt.Feasible {
		if hFeasible {
			s.Anomalies++ // the heuristic found what the exact solver says does not exist
		} else {
			s.BothInfeasible++
		}
		return
	}
	s.ExactFeasible++
	if !hFeasible {
		s.HeuristicMissed++
		return
	}
	ch, co := pr.TotalCost(xh), pr.TotalCost(opt.X)
	gap := 0.0
	if co > 0 {
		gap = ch/co - 1
	} else if ch > co {
		gap = math.Inf(1)
	}
	if ch < co-OptimalTolerance*math.Max(1, math.Abs(co)) {
		s.Anomalies++
	}
	if math.Abs(ch-co) <= OptimalTolerance*math.Max(1, math.Abs(co)) {
		s.Optimal++
		gap = 0
	}
	s.GapN++
	s.sumGap += gap
	s.MaxGap = math.Max(s.MaxGap, gap)
	if scaleOut {
		if ah, ao := pr.Cost(xh), pr.Cost(opt.X); ao > 0 {
			g := ah/ao - 1
			if math.Abs(ah-ao) <= OptimalTolerance*ao {
				g = 0
			}
			s.ActionGapN++
			s.sumActionGap += g
			s.MaxActionGap = math.Max(s.MaxActionGap, g)
		}
	}
}

// WriteTable prints the comparison and the timings.
func (r Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	n := r.ScaleOut.Instances + r.ScaleOutPartial.Instances + r.NoAction + r.ScaleIn.Instances
	fmt.Fprintf(&b, "hetsev bench-scaler: %d decision instances (%d scale-out, %d scale-in; seed %d; %d with synthetic GPU types, %d with perturbed prices), %d timed repetitions each\n",
		n, r.ScaleOut.Instances+r.ScaleOutPartial.Instances+r.NoAction, r.ScaleIn.Instances, r.Config.Seed, r.Synthetic, r.Perturbed, r.Config.Repetitions)
	fmt.Fprintf(&b, "cost = price of the service after the action + launch term (USD/h); gap = heuristic cost / optimal cost - 1; optimal = within %g relative\n", OptimalTolerance)
	b.WriteString("missed = an optimum exists but the heuristic's action is infeasible (counted as not optimal); action gap = gap of the ILP objective itself\n\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "decisions\tinstances\theuristic optimal\tshare\tmean gap\tmax gap\tmissed\tmean action gap\tmax action gap\t")
	row := func(name string, s Stats) {
		ag := "-\t-"
		if s.ActionGapN > 0 {
			ag = fmt.Sprintf("%.4f\t%.4f", s.MeanActionGap, s.MaxActionGap)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.4f\t%.4f\t%.4f\t%d\t%s\t\n", name, s.ExactFeasible, s.Optimal,
			s.OptimalFraction(), s.MeanGap, s.MaxGap, s.HeuristicMissed, ag)
	}
	row("scale-out (RESULT)", r.ScaleOut)
	for k := 2; k < len(r.ScaleOutByTypes); k++ {
		if r.ScaleOutByTypes[k].Instances > 0 {
			row(fmt.Sprintf("  %d GPU types", k), r.ScaleOutByTypes[k])
		}
	}
	row("scale-out, partial", r.ScaleOutPartial)
	row("scale-in, vs several at once", r.ScaleIn)
	row("scale-in, vs one instance", r.ScaleInOneStep)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(&b, "scale-outs with no possible action (no eligible type with room, or at max replicas): %d; scale-ins where nothing may go: %d\n",
		r.NoAction, r.ScaleIn.BothInfeasible)
	b.WriteString("\ndecision time over all instances, microseconds (time.Now around each call)\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "solver\tsamples\tp50\tp99\tmax\tmean\t")
	for _, t := range []struct {
		name string
		t    Timing
	}{{"heuristic Decide", r.Heuristic}, {"exact Decide", r.Exact}, {"SolveExact alone", r.Solve}} {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%.1f\t%.2f\t\n", t.name, t.t.Samples, t.t.P50, t.t.P99, t.t.Max, t.t.MeanMicrosecs)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(&b, "\nexact solver: largest search %d nodes, %d not proven optimal (node budget %d); anomalies %d (must be 0); run took %v\n",
		r.MaxNodes, r.NotProven, ilp.ExactNodeBudget, r.Anomalies(), r.Elapsed.Round(time.Millisecond))
	_, err := io.WriteString(w, b.String())
	return err
}

// ResultLine is the last line of `make bench-scaler`, over the scale-out
// decisions whose ILP has a feasible action (Report.ScaleOut):
//
//	RESULT optimal_fraction=<share of heuristic decisions that are optimal> max_gap=<largest cost gap, a fraction> exact_p99_us=<p99 of the exact Decide, microseconds>
//
// The cost gap is that of Stats (TotalCost); exact_p99_us is over all
// instances.
func (r Report) ResultLine() string {
	return fmt.Sprintf("RESULT optimal_fraction=%.4f max_gap=%.4f exact_p99_us=%.1f",
		r.ScaleOut.OptimalFraction(), r.ScaleOut.MaxGap, r.Exact.P99)
}
