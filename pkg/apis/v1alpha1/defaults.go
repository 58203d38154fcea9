package v1alpha1

// Defaults of ModelService fields. The CRD's schema applies them (the
// +kubebuilder:default markers in types.go repeat these values, since a
// marker cannot name a constant; TestCRDDefaults checks that they agree)
// and hetsev-scaler applies them again to objects read from an API server
// without the schema's defaulting (or a fake client). The paper fixes only
// the 0.8 threshold (HetSev 4.1); the periods are ours, not measurements on a cluster.
const (
	// DefaultSaturationThreshold: scale out above W / sum T_i N_i = 0.8.
	DefaultSaturationThreshold = 0.8
	// DefaultIntervalSeconds between two decisions, seconds. On every
	// replay of `make evaluate --ablation` (docs/evaluation.md), 5 s
	// missed no more requests than 15 s at a cost at most 0.2 % higher,
	// lower on two of the four.
	DefaultIntervalSeconds = 5
	// MinIntervalSeconds is the shortest interval between two decisions
	// (spec.scaling.intervalSeconds' minimum; keep the CRD marker equal):
	// each decision writes status, and make demo's compressed clock needs
	// 0.57 s.
	MinIntervalSeconds = 0.1
	// DefaultScaleOutPeriodSeconds the saturation must stay above the
	// threshold before a scale-out, seconds.
	DefaultScaleOutPeriodSeconds = 30
	// DefaultScaleInIntervalSeconds between two scale-ins, seconds.
	DefaultScaleInIntervalSeconds = 60
	// DefaultScaleInCoolDownSeconds after a scale-out before any scale-in,
	// seconds.
	DefaultScaleInCoolDownSeconds = 300
	// DefaultScaleInHysteresis is 0, the paper's rule: the stabilized
	// scale-in and the cool-down already keep a scale-in from being undone
	// by the next decision, and `make evaluate --ablation` measures a
	// margin on top of them as cost with no fewer missed requests.
	DefaultScaleInHysteresis = 0.0
	// DefaultLambda weighs launch latency against cost, per second.
	DefaultLambda = 0.01
	// DefaultMinReplicas over all GPU types: never zero.
	DefaultMinReplicas = 1
	// DefaultServicePort is Triton's HTTP port.
	DefaultServicePort = 8000
)
