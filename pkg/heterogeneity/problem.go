package heterogeneity

import (
	"errors"
	"fmt"

	"github.com/hetsev/hetsev/pkg/heterogeneity/ilp"
)

// NewProblem builds the full ILP of HetSev 4.1 (ilp.AnyDirection) for the
// observation and policy: Target = W / SaturationThreshold, Lower_i = -N_i,
// Upper_i = MaxAdditional_i for the types that pass the policy's SLO check
// (Policy.MeetsSLO) and 0 for the others, and the policy's replica bounds.
func NewProblem(obs Observation, p Policy) (ilp.Problem, error) {
	return DecisionProblem(obs, p, ilp.AnyDirection)
}

// DecisionProblem builds the ILP that a decision in direction d solves, with
// the coefficients N_i, T_i, C_i and O_i of obs.Types (ilp.Type, named by
// GPUType):
//
//   - ilp.AnyDirection: the full ILP (see NewProblem);
//   - ilp.ScaleOutOnly: X_i in [0, MaxAdditional_i] for types that pass the
//     SLO check, X_i = 0 for the others; Target = W / SaturationThreshold;
//     MinReplicas and MaxReplicas from the policy;
//   - ilp.ScaleInOnly: X_i in [-N_i, 0]; Target = W / (SaturationThreshold -
//     ScaleInHysteresis), the bar of the heuristic's scale-in; MinReplicas
//     from the policy and no MaxReplicas (removing instances cannot exceed
//     it).
//
// It returns an error for an invalid observation, policy or direction.
func DecisionProblem(obs Observation, p Policy, d ilp.Direction) (ilp.Problem, error) {
	if err := errors.Join(p.Validate(), obs.Validate()); err != nil {
		return ilp.Problem{}, err
	}
	return buildProblem(obs, p, d)
}

// buildProblem is DecisionProblem for a validated observation and policy.
func buildProblem(obs Observation, p Policy, d ilp.Direction) (ilp.Problem, error) {
	n := len(obs.Types)
	pr := ilp.Problem{
		Types:       ilpTypes(obs.Types),
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
		// Constraint (4); a scale-in adds nothing, so it needs no SLO check.
		if d != ilp.ScaleInOnly && p.MeetsSLO(t) {
			pr.Upper[i] = t.MaxAdditional
		}
	}
	switch d {
	case ilp.AnyDirection:
	case ilp.ScaleOutOnly:
		clear(pr.Lower)
	case ilp.ScaleInOnly:
		clear(pr.Upper)
		pr.Target = obs.ArrivalRate / (p.SaturationThreshold - p.ScaleInHysteresis)
		pr.MaxReplicas = 0
	default:
		return ilp.Problem{}, fmt.Errorf("problem: unknown direction %d", int(d))
	}
	return pr, nil
}
