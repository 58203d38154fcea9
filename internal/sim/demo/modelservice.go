package demo

import (
	"context"
	"fmt"

	"github.com/hetsev/hetsev/pkg/catalog"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/hetsev/hetsev/internal/cluster"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	v1 "k8s.io/api/core/v1"

	"github.com/hetsev/hetsev/internal/sim/simulator"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// Knobs are a ModelService's scaling knobs in trace seconds; the harness
// divides them by the time compression so the scaler, which runs on the
// wall clock, acts at the same trace times.
type Knobs struct {
	// SaturationThreshold of HetSev 4.1; 0 means 0.8.
	SaturationThreshold    float64
	IntervalSeconds        float64
	ScaleOutPeriodSeconds  float64
	ScaleInIntervalSeconds float64
	ScaleInCoolDownSeconds float64
	MinReplicas            int
	MaxReplicas            int
}

// ModelServiceFor builds a ModelService for model from the repo's profiles
// (every GPU type profiled), with RT_max rtMaxMs and SL_min 0.98 (HetSev 6).
func ModelServiceFor(name, ns, model string, rtMaxMs float64, profiles catalog.Profiles, k Knobs, compression float64) (*v1alpha1.ModelService, error) {
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
					"prometheus.io/scrape": "true",
					"prometheus.io/port":   fmt.Sprint(simulator.IstioPort),
					"prometheus.io/path":   simulator.IstioPath,
				}},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "model-server", Image: "model-server:" + model}}},
			},
		},
	}
	for _, p := range ps {
		ms.Spec.Profiles = append(ms.Spec.Profiles, v1alpha1.GPUProfile{
			GPUType: p.GPUType, ThroughputRPS: p.ThroughputRPS, LatencyMs: p.LatencyMs,
			GPUMemory: fmt.Sprintf("%dMi", p.GPUMemoryMiB), CPU: fmt.Sprintf("%dm", p.CPUMilli), Memory: fmt.Sprintf("%dMi", p.MemoryMiB),
			LaunchSeconds: p.LaunchSeconds,
		})
	}
	c := compression
	period := k.ScaleOutPeriodSeconds / c
	threshold := k.SaturationThreshold
	if threshold == 0 {
		threshold = 0.8
	}
	ms.Spec.Scaling = v1alpha1.Scaling{
		SaturationThreshold:    threshold,
		IntervalSeconds:        k.IntervalSeconds / c,
		ScaleOutPeriodSeconds:  &period,
		ScaleInIntervalSeconds: k.ScaleInIntervalSeconds / c,
		ScaleInCoolDownSeconds: k.ScaleInCoolDownSeconds / c,
		MinReplicas:            k.MinReplicas,
		MaxReplicas:            k.MaxReplicas,
	}
	return ms, nil
}

// CreateModelService creates ms through the dynamic client.
func CreateModelService(ctx context.Context, dyn dynamic.Interface, ms *v1alpha1.ModelService) error {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ms)
	if err != nil {
		return err
	}
	_, err = dyn.Resource(v1alpha1.Resource).Namespace(ms.Namespace).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	return err
}

// SimService describes ms to the simulator.
func SimService(ms *v1alpha1.ModelService, share float64, cat catalog.Catalog) simulator.Service {
	s := simulator.Service{Namespace: ms.Namespace, Name: ms.Name, Model: ms.Spec.Model, Share: share,
		RTMaxMs: ms.Spec.SLO.ResponseTimeMs, DeadlineAware: true, BatchSize: ms.Spec.BatchSize, PerProduct: map[string]simulator.InstanceProfile{}}
	for _, p := range ms.Spec.Profiles {
		g, ok := cat.ByName(p.GPUType)
		if !ok {
			continue
		}
		s.PerProduct[g.ProductLabel] = simulator.InstanceProfile{GPUType: g.Name, LatencyMs: p.LatencyMs, LaunchSeconds: p.LaunchSeconds, PriceUSDPerH: g.PriceUSDPerHour}
	}
	return s
}

// CreateDCGMExporters puts one dcgm-exporter pod on every node, as its
// DaemonSet would (bound directly: no default scheduler runs here), annotated
// for scraping on dcgm-exporter's port.
func CreateDCGMExporters(ctx context.Context, c kubernetes.Interface, nodes []string) error {
	if err := cluster.EnsureNamespace(ctx, c, cluster.SystemNamespace); err != nil {
		return err
	}
	for _, n := range nodes {
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: "dcgm-exporter-" + n, Namespace: cluster.SystemNamespace,
				Labels: map[string]string{"app": simulator.LabelDCGMExporter},
				Annotations: map[string]string{
					"prometheus.io/scrape": "true",
					"prometheus.io/port":   fmt.Sprint(simulator.DCGMPort),
					"prometheus.io/path":   simulator.DCGMPath,
				},
			},
			Spec: v1.PodSpec{
				NodeName:   n,
				Containers: []v1.Container{{Name: "dcgm-exporter", Image: "nvcr.io/nvidia/k8s/dcgm-exporter:sim"}},
			},
		}
		if _, err := c.CoreV1().Pods(cluster.SystemNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s: %w", pod.Name, err)
		}
	}
	return nil
}
