// Package modelservice builds the ModelService objects the simulation runs:
// the demo creates them on its control plane, and the trace-driven evaluator
// resolves them through hetsev-scaler's own translation (scaler.Resolve), so
// both decide with the policy a user's object would get.
package modelservice

import (
	"fmt"

	"github.com/hetsev/hetsev/pkg/adapter"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hetsev/hetsev/internal/sim/simulator"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/catalog"
)

// Knobs are a ModelService's scaling knobs in trace seconds; For divides
// them by the time compression so the scaler, which runs on the
// wall clock, acts at the same trace times.
type Knobs struct {
	// SaturationThreshold of HetSev 4.1; 0 leaves it unset (the scaler's).
	SaturationThreshold float64
	// BusyShare is spec.scaling.busyShare; 0 leaves it unset.
	BusyShare              float64
	IntervalSeconds        float64
	ScaleOutPeriodSeconds  float64
	ScaleInIntervalSeconds float64
	ScaleInCoolDownSeconds float64
	MinReplicas            int
	MaxReplicas            int
	// Lambda (per second) and ScaleInHysteresis; nil leaves the
	// scaler's defaults.
	Lambda, ScaleInHysteresis *float64
}

// For builds a ModelService for model from the repo's profiles
// (every GPU type profiled), with RT_max rtMaxMs and SL_min 0.98 (HetSev 6).
// Times the scaler reads on the wall clock, the knobs and the profiles'
// launch times, are divided by compression (trace seconds per wall second)
// and lambda, per second, multiplied by it.
func For(name, ns, model string, rtMaxMs float64, profiles catalog.Profiles, k Knobs, compression float64) (*v1alpha1.ModelService, error) {
	ps := profiles.ForModel(model)
	if len(ps) == 0 {
		return nil, fmt.Errorf("no profiles for model %q", model)
	}
	ms := &v1alpha1.ModelService{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.ModelServiceSpec{
			Model: model, SLO: v1alpha1.SLO{ResponseTimeMs: rtMaxMs, ServiceLevel: 0.98}, BatchSize: ps[0].BatchSize,
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
					adapter.AnnotationScrape: "true",
					adapter.AnnotationPort:   fmt.Sprint(simulator.IstioPort),
					adapter.AnnotationPath:   simulator.IstioPath,
				}},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "model-server", Image: "model-server:" + model}}},
			},
		},
	}
	c := compression
	for _, p := range ps {
		ms.Spec.Profiles = append(ms.Spec.Profiles, v1alpha1.GPUProfile{
			GPUType: p.GPUType, ThroughputRPS: p.ThroughputRPS, LatencyMs: p.LatencyMs,
			GPUMemory: fmt.Sprintf("%dMi", p.GPUMemoryMiB), CPU: fmt.Sprintf("%dm", p.CPUMilli), Memory: fmt.Sprintf("%dMi", p.MemoryMiB),
			// The scaler reads O_i on the wall clock (the horizon of its
			// launch-time forecast); SimService converts it back to trace
			// seconds for the simulated servers.
			LaunchSeconds: p.LaunchSeconds / c,
			SmallBatches:  smallBatches(p.SmallBatches),
		})
	}
	period := k.ScaleOutPeriodSeconds / c
	// 0 leaves the threshold to hetsev-scaler (its default, or the one it
	// derives with --model-thresholds).
	threshold := k.SaturationThreshold
	// lambda is per second: per wall second c times the trace's, so that
	// lambda O_i, and the objective, are those of the uncompressed trace.
	lambda := k.Lambda
	if c != 1 {
		l := v1alpha1.DefaultLambda
		if k.Lambda != nil {
			l = *k.Lambda
		}
		l *= c
		lambda = &l
	}
	ms.Spec.Scaling = v1alpha1.Scaling{
		SaturationThreshold:    threshold,
		IntervalSeconds:        k.IntervalSeconds / c,
		ScaleOutPeriodSeconds:  &period,
		ScaleInIntervalSeconds: k.ScaleInIntervalSeconds / c,
		ScaleInCoolDownSeconds: k.ScaleInCoolDownSeconds / c,
		MinReplicas:            k.MinReplicas,
		MaxReplicas:            k.MaxReplicas,
		Lambda:                 lambda,
		ScaleInHysteresis:      k.ScaleInHysteresis,
		BusyShare:              k.BusyShare,
	}
	return ms, nil
}

// smallBatches are a profile's measured smaller batches as
// spec.profiles[].smallBatches lists them.
func smallBatches(pts []catalog.BatchPoint) []v1alpha1.BatchPoint {
	var out []v1alpha1.BatchPoint
	for _, pt := range pts {
		out = append(out, v1alpha1.BatchPoint{BatchSize: pt.BatchSize, ThroughputRPS: pt.ThroughputRPS, LatencyMs: pt.LatencyMs})
	}
	return out
}
