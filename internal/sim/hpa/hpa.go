// Package hpa is the replica rule of Kubernetes' HorizontalPodAutoscaler
// (autoscaling/v2) with its default behaviour, for replaying "default
// Kubernetes" in simulated time: the controller itself
// (k8s.io/kubernetes/pkg/controller/podautoscaler) needs listers and a
// metrics client and cannot run without a cluster.
//
// The rule, as documented for the HPA
// (https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/):
//
//	desired = ceil(current * metric / target)
//
// skipped while |metric/target - 1| <= tolerance (0.1); scale-down takes the
// highest recommendation of the last 300 s (stabilisation window); scale-up
// is limited per 15 s period to max(4 pods, +100 %) (the default
// behaviour's two policies, selectPolicy Max); scale-down to -100 % per 15 s.
package hpa

import (
	"errors"
	"math"
	"time"
)

// Defaults of autoscaling/v2 (the controller's --horizontal-pod-autoscaler-
// tolerance and the default HPAScalingRules).
const (
	DefaultTolerance              = 0.1
	DefaultDownscaleStabilization = 300 * time.Second
	DefaultScaleUpPeriod          = 15 * time.Second
	DefaultScaleUpPods            = 4
	DefaultScaleUpPercent         = 100
)

// Autoscaler holds one HPA's state: its recent recommendations and scale
// events.
type Autoscaler struct {
	Min, Max  int32   // replicas bounds, Min >= 1
	Target    float64 // target metric value per pod (e.g. requests/s per pod), > 0
	Tolerance float64

	recommendations []recommendation
	scaleUps        []scaleEvent
}

type recommendation struct {
	at       time.Time
	replicas int32
}

type scaleEvent struct {
	at    time.Time
	added int32
}

// New returns an autoscaler with the default tolerance. It refuses min < 1,
// max < min and a target that is not a positive number.
func New(min, max int32, target float64) (*Autoscaler, error) {
	switch {
	case min < 1:
		return nil, errors.New("hpa: minReplicas must be at least 1")
	case max < min:
		return nil, errors.New("hpa: maxReplicas must be at least minReplicas")
	case !(target > 0) || math.IsInf(target, 1):
		return nil, errors.New("hpa: target must be a positive number")
	}
	return &Autoscaler{Min: min, Max: max, Target: target, Tolerance: DefaultTolerance}, nil
}

// Desired returns the replica count the HPA sets at now, given the current
// replicas and the metric's average per pod (same unit as Target). A metric
// that is NaN or negative (no data) keeps the current count, as the
// controller does when it cannot fetch metrics.
func (a *Autoscaler) Desired(now time.Time, current int32, metric float64) int32 {
	if current < 1 || math.IsNaN(metric) || metric < 0 {
		return current
	}
	ratio := metric / a.Target
	raw := current
	if math.Abs(ratio-1) > a.Tolerance {
		raw = int32(math.Ceil(float64(current) * ratio))
	}
	raw = min(max(raw, a.Min), a.Max)

	// Stabilisation: scale up to this recommendation (window 0), scale down
	// only to the highest recommendation of the last 300 s.
	a.recommendations = append(a.recommendations, recommendation{now, raw})
	keep := a.recommendations[:0]
	down := raw
	for _, r := range a.recommendations {
		if now.Sub(r.at) <= DefaultDownscaleStabilization {
			keep = append(keep, r)
			down = max(down, r.replicas)
		}
	}
	a.recommendations = keep
	desired := current
	if raw > current {
		desired = raw
	}
	if down < current {
		desired = down
	}

	// Scale-up rate: per 15 s period, max(4 pods, 100 %) of the replicas at
	// the period's start.
	if desired > current {
		var added int32
		events := a.scaleUps[:0]
		for _, e := range a.scaleUps {
			if now.Sub(e.at) < DefaultScaleUpPeriod {
				events = append(events, e)
				added += e.added
			}
		}
		a.scaleUps = events
		base := current - added
		limit := max(base+DefaultScaleUpPods, base*(100+DefaultScaleUpPercent)/100)
		desired = min(desired, max(limit, current))
		if desired > current {
			a.scaleUps = append(a.scaleUps, scaleEvent{now, desired - current})
		}
	}
	return desired
}
