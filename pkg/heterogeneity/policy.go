package heterogeneity

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Policy holds the tunable knobs of the autoscaler for one service.
type Policy struct {
	// SaturationThreshold is the saturation W / sum T_i N_i above which the
	// service scales out, in (0, 1]. HetSev 4.1 uses 0.8 "based on
	// experience, leaving room to absorb sudden load spikes".
	SaturationThreshold float64
	// Lambda weighs launch latency against hardware cost in the objective,
	// per second, >= 0. The default 0.01 is an ESTIMATE: HetSev 4.1 calls it
	// tunable and gives no value.
	Lambda float64
	// ScaleOutPeriod is how long the saturation must stay above the threshold
	// before scaling out ("for a period of time", HetSev 4.1). 0 acts on the
	// first observation above the threshold.
	ScaleOutPeriod time.Duration
	// ScaleInInterval is the least time between two scale-ins ("at regular
	// intervals", HetSev 4.1).
	ScaleInInterval time.Duration
	// ScaleInCoolDown is the least time from the last scale-out to the next
	// scale-in ("a predefined cool-down period", HetSev 4.1).
	ScaleInCoolDown time.Duration
	// ScaleInHysteresis lowers the bar for scale-in: an instance is removed
	// only if the load then fits under SaturationThreshold minus this
	// margin. 0 is the paper's rule; a margin stops a scale-in that lands
	// just under the threshold from triggering the next scale-out.
	ScaleInHysteresis float64
	// MinReplicas is the least number of instances over all types, >= 1: a
	// service never scales to zero.
	MinReplicas int
	// MaxReplicas caps the number of instances over all types after a
	// scale-out; 0 means no cap.
	MaxReplicas int
	// RTMaxMs is the response-time threshold of the service's SLO, in ms. A
	// GPU type is eligible for new instances only if its profiled batch
	// latency L_i <= RTMaxMs (constraint 4 of HetSev 4.1). Set it per
	// service; the default 400 ms is HetSev's RT_max for ResNet-50 (section 6).
	RTMaxMs float64
}

// DefaultPolicy returns the defaults: threshold 0.8 (HetSev 4.1), lambda
// 0.01/s (ESTIMATE), scale-out period 30 s, scale-in interval 60 s and
// cool-down 5 min (ESTIMATES, the paper gives no values; 5 min is the default
// scale-down stabilization window of the Kubernetes HPA, which HetSev's
// evaluation mirrors), MinReplicas 1, no MaxReplicas, RT_max 400 ms (HetSev 6,
// ResNet-50).
func DefaultPolicy() Policy {
	return Policy{
		SaturationThreshold: 0.8,
		Lambda:              0.01,
		ScaleOutPeriod:      30 * time.Second,
		ScaleInInterval:     60 * time.Second,
		ScaleInCoolDown:     5 * time.Minute,
		MinReplicas:         1,
		MaxReplicas:         0,
		RTMaxMs:             400,
	}
}

// Validate reports every knob out of range.
func (p Policy) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("policy: "+format, args...))
	}
	if !(p.SaturationThreshold > 0 && p.SaturationThreshold <= 1) {
		bad("SaturationThreshold must be in (0, 1], got %v", p.SaturationThreshold)
	}
	if !(p.Lambda >= 0) || math.IsInf(p.Lambda, 0) {
		bad("Lambda must be a finite number >= 0 (per second), got %v", p.Lambda)
	}
	if !(p.ScaleInHysteresis >= 0 && p.ScaleInHysteresis < p.SaturationThreshold) {
		bad("ScaleInHysteresis must be in [0, SaturationThreshold), got %v", p.ScaleInHysteresis)
	}
	if p.ScaleOutPeriod < 0 {
		bad("ScaleOutPeriod must be >= 0, got %v", p.ScaleOutPeriod)
	}
	if p.ScaleInInterval < 0 {
		bad("ScaleInInterval must be >= 0, got %v", p.ScaleInInterval)
	}
	if p.ScaleInCoolDown < 0 {
		bad("ScaleInCoolDown must be >= 0, got %v", p.ScaleInCoolDown)
	}
	if p.MinReplicas < 1 {
		bad("MinReplicas must be >= 1 (never scale to zero), got %d", p.MinReplicas)
	}
	if p.MaxReplicas < 0 {
		bad("MaxReplicas must be >= 0 (0: no cap), got %d", p.MaxReplicas)
	} else if p.MaxReplicas > 0 && p.MaxReplicas < p.MinReplicas {
		bad("MaxReplicas %d is below MinReplicas %d", p.MaxReplicas, p.MinReplicas)
	}
	if !(p.RTMaxMs > 0) || math.IsInf(p.RTMaxMs, 0) {
		bad("RTMaxMs must be a finite number > 0 (ms), got %v", p.RTMaxMs)
	}
	return errors.Join(errs...)
}
