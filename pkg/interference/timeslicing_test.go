package interference

import (
	"math"
	"math/rand/v2"
	"testing"
)

// timeSlicingReference is the round-robin model's step written as the
// formula reads, every term computed where it is used: the solver
// computes what does not move with the inflations once, and must give the
// same answer to the bit.
func timeSlicingReference(s Sharing, members []Instance, atLoad bool) []float64 {
	n := len(members)
	k, q, beta, exp, sw := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
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
	return dampedFixedPoint(n, func(inf, next []float64) {
		if atLoad {
			for i, in := range members {
				beta[i] = math.Pow(busyAt(in.BusyShare, inf[i], true), exp[i])
			}
		}
		for i, a := range members {
			lat := a.BatchLatency
			for j, b := range members {
				if j == i {
					continue
				}
				bj := busyAt(b.BusyShare, inf[j], atLoad)
				pi := math.Min(1, bj*(k[j]/k[i])*(inf[i]*a.BatchLatency)/(inf[j]*b.BatchLatency))
				s := (sw[i] + sw[j]) / 2
				lat += occupancy(a) * occupancy(b) * ((beta[i]+k[i]-1)*pi*(q[j]+s) + (1-beta[i])*bj*(q[j]/2+s))
			}
			next[i] = lat / a.BatchLatency
		}
	})
}

func TestTimeSlicingSolverMatchesTheFormulaToTheBit(t *testing.T) {
	s := FittedSharing()
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 2000 {
		n := 2 + rng.IntN(5)
		members := make([]Instance, n)
		for i := range members {
			members[i] = Instance{
				BusyShare:    rng.Float64() * 1.2,
				BatchLatency: 1e-3 + rng.Float64()*0.2,
				Occupancy:    rng.Float64(),
			}
			if rng.IntN(3) == 0 {
				members[i].Execution = ExecutionEager
			}
		}
		for _, atLoad := range []bool{false, true} {
			got := s.timeSlicing(members, atLoad)
			want := timeSlicingReference(s, members, atLoad)
			for i := range want {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					t.Fatalf("trial %d, atLoad %v, member %d of %+v: %v, the formula gives %v", trial, atLoad, i, members, got[i], want[i])
				}
			}
		}
	}
}
