// Package interference models the latency inflation an inference instance
// suffers when other model instances share its GPU (multi-tenant inference),
// fitted to measurements on an NVIDIA H100 (data/measurements/
// gpu-colocation-h100): see sharing.go for the model (time-slicing and MPS)
// and colocation.go for Colocation, the one configured model every hetsev
// component uses (fitted by default, replaceable by a model file).
//
// It does not use the ESTIMATED pair factors of HetSev section 3.2 (+18 %
// for a busy different neighbour, +40 % for a busy identical one): measured,
// a busy neighbour about doubles a saturating (CUDA-graph/TensorRT)
// instance's batch latency under time-slicing.
package interference

import (
	"fmt"
	"math"
)

func checkCoefficient(field string, v float64) error {
	switch {
	case math.IsNaN(v):
		return fmt.Errorf("interference: %s is NaN", field)
	case math.IsInf(v, 0):
		return fmt.Errorf("interference: %s is infinite", field)
	case v < 0:
		return fmt.Errorf("interference: %s is negative (%g)", field, v)
	}
	return nil
}
