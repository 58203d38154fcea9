package integration

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	cmclient "k8s.io/metrics/pkg/client/custom_metrics"

	"github.com/hetsev/hetsev/internal/sim/simulator"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// TestAdapterReportsGeneratedRate sends a known request rate to two
// simulated ResNet-50 servers and reads it back through the aggregated
// custom.metrics.k8s.io API with the standard client: per Deployment and
// per pod, within 10 % of what was generated.
func TestAdapterReportsGeneratedRate(t *testing.T) {
	s := startStack(t, false)
	ctx, c := s.ctx, s.cp.Client
	const rate = 300.0 // requests/s of trace time
	replicas := int32(2)
	sel := map[string]string{v1alpha1.LabelModelService: "resnet50"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "resnet50-t4", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel, Annotations: map[string]string{
					v1alpha1.AnnotationModel: "resnet50", v1alpha1.AnnotationGPUMemory: "2Gi",
					"prometheus.io/scrape": "true", "prometheus.io/port": fmt.Sprint(simulator.IstioPort), "prometheus.io/path": simulator.IstioPath,
				}},
				Spec: v1.PodSpec{
					SchedulerName: "hetsev-scheduler",
					NodeSelector:  map[string]string{gpuinventory.LabelGPUProduct: "Tesla-T4"},
					Containers:    []v1.Container{{Name: "model-server", Image: "model-server:resnet50"}},
				},
			},
		},
	}
	if _, err := c.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRunning(ctx, t, c, "hetsev.io/modelservice=resnet50", 2)

	p, _ := s.prof.Get("resnet50", "T4")
	svc := simulator.Service{Namespace: "default", Name: "resnet50", Model: "resnet50", Share: 1, RTMaxMs: 400, BatchSize: p.BatchSize,
		PerProduct: map[string]simulator.InstanceProfile{"Tesla-T4": {GPUType: "T4", LatencyMs: p.LatencyMs, LaunchSeconds: 1, GPUMemoryMiB: p.GPUMemoryMiB}}}
	w := s.world(t, []simulator.Service{svc}, steps(1200, rate), 20) // 1200 trace s in 60 s of wall time
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = w.Run(wctx) }()

	disc := discovery.NewDiscoveryClientForConfigOrDie(s.cp.Config)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	cm := cmclient.NewForConfig(s.cp.Config, mapper, cmclient.NewAvailableAPIsGetter(disc))
	deployments := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	pods := schema.GroupKind{Kind: "Pod"}

	// Let the 60 s (trace) rate window fill: 120 trace s = 6 s of wall time.
	var got float64
	waitFor(ctx, t, 40*time.Second, "deployment requests_per_second", func(ctx context.Context) (bool, error) {
		if w.Clock.Processed() < 120 {
			return false, nil
		}
		v, err := cm.NamespacedMetrics("default").GetForObject(deployments, "resnet50-t4", "requests_per_second", labels.Everything())
		if err != nil {
			t.Logf("not yet: %v", err)
			return false, nil
		}
		got = float64(v.Value.MilliValue()) / 1000
		return true, nil
	})
	if math.Abs(got-rate)/rate > 0.10 {
		t.Errorf("deployment requests_per_second = %.1f, generated %.0f (more than 10 %% off)", got, rate)
	}
	list, err := cm.NamespacedMetrics("default").GetForObjects(pods, labels.SelectorFromSet(sel), "requests_per_second", labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, item := range list.Items {
		sum += float64(item.Value.MilliValue()) / 1000
	}
	if len(list.Items) != 2 || math.Abs(sum-rate)/rate > 0.10 {
		t.Errorf("per-pod rates: %d pods summing to %.1f, want 2 pods summing to %.0f within 10 %%", len(list.Items), sum, rate)
	}
	// Latency is served too, and it is the simulated servers' (a T4 batch of
	// 8 takes 22.41 ms; p98 stays well under the 400 ms SLO at this load).
	l, err := cm.NamespacedMetrics("default").GetForObject(deployments, "resnet50-t4", "request_latency_p98_ms", labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if p98 := float64(l.Value.MilliValue()) / 1000; p98 < p.LatencyMs || p98 > 400 {
		t.Errorf("p98 latency %.1f ms, want between one batch (%.2f ms) and 400 ms", p98, p.LatencyMs)
	}
	// GPU utilisation from the DCGM exporters, joined through gpu-index.
	g, err := cm.NamespacedMetrics("default").GetForObject(deployments, "resnet50-t4", "gpu_utilization_percent", labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if u := float64(g.Value.MilliValue()) / 1000; u <= 0 || u > 100 {
		t.Errorf("gpu_utilization_percent = %.1f, want in (0, 100]", u)
	}
}
