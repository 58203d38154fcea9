package ilp

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Tolerance is the relative rounding tolerance of comparisons of rates
// (requests/s) and costs (USD/h): 1e-9.
const Tolerance = 1e-9

// MaxInstances bounds instance counts (running instances, bounds, replica
// limits; 2^30) so that absurd inputs cannot overflow an int.
const MaxInstances = 1 << 30

// Type is one GPU type of a Problem: the constants of HetSev 4.1 indexed by
// instance type i.
type Type struct {
	// Name labels the type, e.g. "T4"; for reports only.
	Name string
	// Running is N_i, the instances of the type that run now (>= 0).
	Running int
	// ThroughputRPS is T_i, the throughput of one instance, in requests/s
	// (> 0).
	ThroughputRPS float64
	// PriceUSDPerHour is C_i, the price of one instance, in USD/h (>= 0).
	PriceUSDPerHour float64
	// LaunchSeconds is O_i, the time one instance takes to launch, in
	// seconds (>= 0).
	LaunchSeconds float64
}

// Direction restricts the sign of a scaling action X.
type Direction int

// Directions of a Problem.
const (
	// AnyDirection allows X_i in [-N_i, room_i] for every type: the full ILP
	// of HetSev 4.1, in which one action may remove instances of one
	// type and add instances of another.
	AnyDirection Direction = iota
	// ScaleOutOnly requires X_i >= 0: the amount of a scale-out.
	ScaleOutOnly
	// ScaleInOnly requires X_i <= 0: the amount of a scale-in. Together with
	// ScaleOutOnly it keeps the rule of HetSev 4.1 that a running instance is
	// never switched to another type.
	ScaleInOnly
)

func (d Direction) String() string {
	switch d {
	case AnyDirection:
		return "any"
	case ScaleOutOnly:
		return "scale-out"
	case ScaleInOnly:
		return "scale-in"
	default:
		return fmt.Sprintf("Direction(%d)", int(d))
	}
}

// Problem is one instance of the scaling ILP of HetSev 4.1 (section 4.1,
// "Formulation") for one service, over integer variables X_i, the instances
// of type i to add (> 0) or remove (< 0):
//
//	minimise   sum_i C_i (X_i + lambda O_i max(X_i, 0))              (USD/h)
//	subject to sum_i T_i (N_i + X_i) >= Target                          (1)
//	           X_i <= Upper_i  (free resources)                         (2)
//	           N_i + X_i >= 0, X_i >= Lower_i                           (3)
//	           X_i <= 0 for types that fail the SLO check               (4)
//	           MinReplicas <= sum_i (N_i + X_i) <= MaxReplicas (0: none)
//
// with N_i = Types[i].Running, T_i = Types[i].ThroughputRPS (requests/s),
// C_i = Types[i].PriceUSDPerHour (USD/h), O_i = Types[i].LaunchSeconds (s)
// and lambda per second. Constraints (2) and (4) are folded into Upper, and
// (3) and a Direction into Lower.
//
// Constraint (1): the paper writes sum T_i (N_i + X_i) >= W.
// pkg/heterogeneity, which builds the problems of its decisions
// (heterogeneity.DecisionProblem), uses Target = W / SaturationThreshold, the
// capacity the heuristic already scales out to (HetSev 4.1 keeps 20 %
// headroom "to absorb sudden load spikes"), so that the heuristic and the
// exact solver are compared on the same problem; a scale-in uses W /
// (SaturationThreshold - ScaleInHysteresis). Constraint (2): the paper bounds
// the resources of all instances of a type; the caller turns the free GPU
// memory, CPU and memory and the anti-affinity rule into the instances that
// still fit per type, so constraint (2) becomes a bound on X_i. Constraint
// (4): the caller sets Upper_i = 0 for the types that fail its SLO check.
//
// Capacity comparisons allow a relative rounding tolerance of 1e-9
// (Tolerance).
type Problem struct {
	// Types are the GPU types, with N_i, T_i, C_i and O_i; X is aligned
	// with them.
	Types []Type
	// ArrivalRate is W, the arrival rate the target was derived from, in
	// requests/s (for reports; Target is what binds).
	ArrivalRate float64
	// Target is the right-hand side of constraint (1), in requests/s.
	Target float64
	// Lambda weighs launch latency against hardware cost, per second.
	Lambda float64
	// Lower and Upper bound X_i (instances), aligned with Types.
	Lower, Upper []int
	// MinReplicas is the least total number of instances after the action
	// (>= 0); MaxReplicas the most, 0 for no cap.
	MinReplicas, MaxReplicas int
}

// Validate reports every value of p that the solvers cannot use: bounds not
// aligned with Types, a type with Running outside [0, 2^30] or a throughput,
// price or launch time out of range (see Type), a non-finite Target, a
// negative or non-finite Lambda, negative replica bounds, or bounds beyond
// +-2^30 instances.
func (p Problem) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("problem: "+format, args...))
	}
	if len(p.Lower) != len(p.Types) || len(p.Upper) != len(p.Types) {
		bad("Lower (%d) and Upper (%d) must have one entry per type (%d)", len(p.Lower), len(p.Upper), len(p.Types))
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	for i, t := range p.Types {
		// name is built only for an error: this runs in every solve.
		name := func() string { return fmt.Sprintf("Types[%d] (%s)", i, t.Name) }
		if t.Running < 0 || t.Running > MaxInstances {
			bad("%s: Running must be in [0, %d], got %d", name(), MaxInstances, t.Running)
		}
		if !finite(t.ThroughputRPS) || t.ThroughputRPS <= 0 {
			bad("%s: ThroughputRPS must be a finite number > 0 (requests/s), got %v", name(), t.ThroughputRPS)
		}
		if !finite(t.PriceUSDPerHour) || t.PriceUSDPerHour < 0 {
			bad("%s: PriceUSDPerHour must be a finite number >= 0 (USD/h), got %v", name(), t.PriceUSDPerHour)
		}
		if !finite(t.LaunchSeconds) || t.LaunchSeconds < 0 {
			bad("%s: LaunchSeconds must be a finite number >= 0 (s), got %v", name(), t.LaunchSeconds)
		}
	}
	if math.IsNaN(p.Target) || math.IsInf(p.Target, 0) {
		bad("Target must be finite (requests/s), got %v", p.Target)
	}
	if !(p.Lambda >= 0) || math.IsInf(p.Lambda, 0) {
		bad("Lambda must be a finite number >= 0 (per second), got %v", p.Lambda)
	}
	if p.MinReplicas < 0 || p.MinReplicas > MaxInstances {
		bad("MinReplicas must be in [0, %d], got %d", MaxInstances, p.MinReplicas)
	}
	if p.MaxReplicas < 0 || p.MaxReplicas > MaxInstances {
		bad("MaxReplicas must be in [0, %d] (0: no cap), got %d", MaxInstances, p.MaxReplicas)
	}
	for i := range min(len(p.Lower), len(p.Upper)) {
		if abs(p.Lower[i]) > MaxInstances || abs(p.Upper[i]) > MaxInstances {
			bad("bounds of type %d out of range: [%d, %d]", i, p.Lower[i], p.Upper[i])
		}
	}
	return errors.Join(errs...)
}

// Relaxed returns p with Target and MinReplicas lowered to the largest
// capacity (requests/s) and replica count that an action within the bounds
// and MaxReplicas can reach, so that it has a feasible action whenever the
// bounds and MaxReplicas admit one. It is what the exact solver aims at in a
// partial scale-out: the most capacity that fits, at the least cost. A
// reachable p is returned unchanged.
//
// The largest capacity is found greedily, X_i at Lower_i and then the
// remaining room filled with the highest-throughput types first, which is
// optimal because every instance counts once against MaxReplicas.
func (p Problem) Relaxed() Problem {
	if len(p.Lower) != len(p.Types) || len(p.Upper) != len(p.Types) {
		return p
	}
	x := make([]int, len(p.Types))
	budget := bigCount
	total := 0
	for i, t := range p.Types {
		x[i] = max(p.Lower[i], -t.Running)
		total += t.Running + x[i]
	}
	if p.MaxReplicas > 0 {
		budget = max(p.MaxReplicas-total, 0)
	}
	order := make([]int, len(p.Types))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int {
		return cmp.Compare(p.Types[j].ThroughputRPS, p.Types[i].ThroughputRPS)
	})
	for _, i := range order {
		take := min(max(p.Upper[i]-x[i], 0), budget)
		x[i] += take
		budget -= take
		total += take
	}
	r := p
	r.Target = math.Min(p.Target, p.Capacity(x))
	r.MinReplicas = min(p.MinReplicas, total)
	return r
}

// capacityTolerance is the rounding slack of constraint (1), in requests/s.
func capacityTolerance(target float64) float64 {
	return Tolerance * math.Max(1, math.Abs(target))
}

// Feasible reports whether x (aligned with Types) satisfies every constraint
// of p. It is false for an x of the wrong length and for a p with misaligned
// bounds.
func (p Problem) Feasible(x []int) bool {
	n := len(p.Types)
	if len(x) != n || len(p.Lower) != n || len(p.Upper) != n {
		return false
	}
	total := 0
	for i, t := range p.Types {
		if x[i] < p.Lower[i] || x[i] > p.Upper[i] || t.Running+x[i] < 0 {
			return false
		}
		total += t.Running + x[i]
	}
	if total < p.MinReplicas || (p.MaxReplicas > 0 && total > p.MaxReplicas) {
		return false
	}
	return p.Capacity(x) >= p.Target-capacityTolerance(p.Target)
}

// Cost is the objective of HetSev 4.1 for x, in USD/h: sum_i C_i (X_i +
// lambda O_i max(X_i, 0)) (see Objective). It is negative when the action
// saves more than it adds.
func (p Problem) Cost(x []int) float64 {
	return Objective(p.Types, x, p.Lambda)
}

// TotalCost is the hourly price of the service after the action plus the
// launch term, in USD/h: sum_i C_i (N_i + X_i) + lambda C_i O_i max(X_i, 0).
// It differs from Cost by the constant sum_i C_i N_i, so both have the same
// minimisers; unlike Cost it is positive whenever an instance runs, which
// makes it the measure for relative gaps between solutions.
func (p Problem) TotalCost(x []int) float64 {
	running := 0.0
	for _, t := range p.Types {
		running += t.PriceUSDPerHour * float64(t.Running)
	}
	return p.Cost(x) + running
}

// Capacity is sum_i T_i (N_i + X_i), the left side of constraint (1), in
// requests/s.
func (p Problem) Capacity(x []int) float64 {
	return Capacity(p.Types, x)
}

// Uncovered is the capacity that x leaves short of Target, Target -
// Capacity(x) in requests/s, or 0 when x meets constraint (1) within its
// rounding tolerance.
func (p Problem) Uncovered(x []int) float64 {
	if left := p.Target - p.Capacity(x); left > capacityTolerance(p.Target) {
		return left
	}
	return 0
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
