package heterogeneity

import (
	"errors"
	"fmt"
	"math"
)

// Direction restricts the sign of a scaling action X.
type Direction int

// Directions of a Problem.
const (
	// AnyDirection allows X_i in [-N_i, MaxAdditional_i] for every type: the
	// full ILP of HetSev 4.1, in which one action may remove instances of one
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
//	           X_i <= Upper_i  (free resources: MaxAdditional_i)        (2)
//	           N_i + X_i >= 0, X_i >= Lower_i                           (3)
//	           X_i <= 0 for types that fail the SLO check               (4)
//	           MinReplicas <= sum_i (N_i + X_i) <= MaxReplicas (0: none)
//
// with N_i = Types[i].Running, T_i = Types[i].ThroughputRPS (requests/s),
// C_i = Types[i].PriceUSDPerHour (USD/h), O_i = Types[i].LaunchSeconds (s)
// and lambda per second. Constraints (2) and (4) are folded into Upper, and
// (3) and a Direction into Lower.
//
// Constraint (1): the paper writes sum T_i (N_i + X_i) >= W. Both solvers
// here use Target = W / SaturationThreshold, the capacity the heuristic
// already scales out to (HetSev 4.1 keeps 20 % headroom "to absorb sudden
// load spikes"), so that the heuristic and the exact solver are compared on
// the same problem; a scale-in uses W / (SaturationThreshold -
// ScaleInHysteresis). Constraint (2): the paper bounds the resources of all
// instances of a type; the caller turns the free GPU memory, CPU and memory
// and the anti-affinity rule into MaxAdditional per type (see TypeState), so
// constraint (2) becomes a bound on X_i.
//
// Capacity comparisons allow a relative rounding tolerance of 1e-9.
type Problem struct {
	// Types are the GPU types, with N_i, T_i, C_i and O_i; X is aligned
	// with them.
	Types []TypeState
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

// NewProblem builds the full ILP of HetSev 4.1 (AnyDirection) for the
// observation and policy: Target = W / SaturationThreshold, Lower_i = -N_i,
// Upper_i = MaxAdditional_i for the types that pass the policy's SLO check
// (Policy.MeetsSLO) and 0 for the others, and the policy's replica bounds.
func NewProblem(obs Observation, p Policy) (Problem, error) {
	return DecisionProblem(obs, p, AnyDirection)
}

// DecisionProblem builds the ILP that a decision in direction d solves:
//
//   - AnyDirection: the full ILP (see NewProblem);
//   - ScaleOutOnly: X_i in [0, MaxAdditional_i] for types that pass the SLO
//     check, X_i = 0 for the others; Target = W / SaturationThreshold;
//     MinReplicas and MaxReplicas from the policy;
//   - ScaleInOnly: X_i in [-N_i, 0]; Target = W / (SaturationThreshold -
//     ScaleInHysteresis), the bar of the heuristic's scale-in; MinReplicas
//     from the policy and no MaxReplicas (removing instances cannot exceed
//     it).
//
// It returns an error for an invalid observation, policy or direction.
func DecisionProblem(obs Observation, p Policy, d Direction) (Problem, error) {
	if err := errors.Join(p.Validate(), obs.Validate()); err != nil {
		return Problem{}, err
	}
	return buildProblem(obs, p, d)
}

// buildProblem is DecisionProblem for a validated observation and policy.
func buildProblem(obs Observation, p Policy, d Direction) (Problem, error) {
	n := len(obs.Types)
	pr := Problem{
		Types:       append([]TypeState(nil), obs.Types...),
		ArrivalRate: obs.ArrivalRate,
		Target:      obs.ArrivalRate / p.SaturationThreshold,
		Lambda:      p.Lambda,
		Lower:       make([]int, n),
		Upper:       make([]int, n),
		MinReplicas: p.MinReplicas,
		MaxReplicas: p.MaxReplicas,
	}
	for i, t := range obs.Types {
		pr.Lower[i] = -t.Running
		if p.MeetsSLO(t) {
			pr.Upper[i] = t.MaxAdditional
		}
	}
	switch d {
	case AnyDirection:
	case ScaleOutOnly:
		clear(pr.Lower)
	case ScaleInOnly:
		clear(pr.Upper)
		pr.Target = obs.ArrivalRate / (p.SaturationThreshold - p.ScaleInHysteresis)
		pr.MaxReplicas = 0
	default:
		return Problem{}, fmt.Errorf("problem: unknown direction %d", int(d))
	}
	return pr, nil
}

// Validate reports every value of p that SolveExact cannot use: bounds not
// aligned with Types, a type that Observation.Validate would reject, a
// non-finite Target, a negative or non-finite Lambda, negative replica
// bounds, or bounds beyond +-2^30 instances.
func (p Problem) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("problem: "+format, args...))
	}
	if len(p.Lower) != len(p.Types) || len(p.Upper) != len(p.Types) {
		bad("Lower (%d) and Upper (%d) must have one entry per type (%d)", len(p.Lower), len(p.Upper), len(p.Types))
	}
	validateTypes(p.Types, bad)
	if math.IsNaN(p.Target) || math.IsInf(p.Target, 0) {
		bad("Target must be finite (requests/s), got %v", p.Target)
	}
	if !(p.Lambda >= 0) || math.IsInf(p.Lambda, 0) {
		bad("Lambda must be a finite number >= 0 (per second), got %v", p.Lambda)
	}
	if p.MinReplicas < 0 || p.MinReplicas > maxInstancesPerStep {
		bad("MinReplicas must be in [0, %d], got %d", maxInstancesPerStep, p.MinReplicas)
	}
	if p.MaxReplicas < 0 || p.MaxReplicas > maxInstancesPerStep {
		bad("MaxReplicas must be in [0, %d] (0: no cap), got %d", maxInstancesPerStep, p.MaxReplicas)
	}
	for i := range min(len(p.Lower), len(p.Upper)) {
		if abs(p.Lower[i]) > maxInstancesPerStep || abs(p.Upper[i]) > maxInstancesPerStep {
			bad("bounds of type %d out of range: [%d, %d]", i, p.Lower[i], p.Upper[i])
		}
	}
	return errors.Join(errs...)
}

// capacityTolerance is the rounding slack of constraint (1), in requests/s.
func capacityTolerance(target float64) float64 {
	return tolerance * math.Max(1, math.Abs(target))
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

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
