package integration

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/utils/ptr"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/internal/sim/exporters"
	"github.com/hetsev/hetsev/pkg/adapter"
)

// TestHPAScalesOnRequestsPerSecond: the real kube-controller-manager's HPA
// scales a Deployment on hetsev's requests_per_second Pods metric, read
// through the APIService from hetsev-metrics-adapter's Prometheus backend.
// The load is split evenly over the Deployment's running pods; with a
// target of 10 requests/s per pod, 6 requests/s keep 1 replica, a step to
// 36 requests/s takes it to ceil(36/10) = 4, and the step back to 6 brings
// it to 1 again.
func TestHPAScalesOnRequestsPerSecond(t *testing.T) {
	cp, ctx := testbed(t)
	c := cp.Client
	const ns, name = "default", "echo"
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1ListAll)
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("nodes: %v", err)
	}
	sel := map[string]string{"app": name}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				// Bound by name: this test is about the HPA, not placement;
				// kwok runs the pods.
				Spec: v1.PodSpec{NodeName: nodes.Items[0].Name, Containers: []v1.Container{{Name: "server", Image: "echo"}}},
			},
		},
	}
	if _, err := c.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	load := exporters.NewPodRequestLoad()
	addr, stop, err := cluster.ServeLoopback(exporters.Handler(load))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	prom, err := cluster.StartPrometheus(ctx, cp.Dir, time.Second, []cluster.PrometheusTarget{
		{Job: "istio-sidecars", Address: addr, HonorLabels: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, prom.Process)
	ad, _, err := cluster.StartAdapter(ctx, cp, cluster.AdapterOptions{
		PrometheusURL: prom.URL, RateWindow: "5s", ExtraArgs: []string{"--prometheus-cache-ttl=500ms"},
	})
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, ad)

	// total is the whole Deployment's load, requests/s, split evenly over
	// its running pods every 250 ms.
	total := make(chan float64, 1)
	go func() {
		rate := 0.0
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case rate = <-total:
			case <-tick.C:
			}
			pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
			if err != nil {
				continue
			}
			var running []types.NamespacedName
			for _, p := range pods.Items {
				if p.Status.Phase == v1.PodRunning && p.DeletionTimestamp == nil {
					running = append(running, types.NamespacedName{Namespace: ns, Name: p.Name})
				}
			}
			rates := map[types.NamespacedName]float64{}
			for _, p := range running {
				rates[p] = rate / float64(len(running))
			}
			load.SetRates(rates)
		}
	}()
	total <- 6

	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			MinReplicas:    ptr.To[int32](1),
			MaxReplicas:    6,
			Metrics: []autoscalingv2.MetricSpec{{
				Type: autoscalingv2.PodsMetricSourceType,
				Pods: &autoscalingv2.PodsMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: adapter.MetricRequestsPerSecond},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: resource.NewQuantity(10, resource.DecimalSI)},
				},
			}},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp:   &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0)},
				ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](5)},
			},
		},
	}
	if _, err := c.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, hpa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	status := func(ctx context.Context) (*autoscalingv2.HorizontalPodAutoscaler, int32) {
		h, err := c.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d, err := c.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return h, *d.Spec.Replicas
	}
	current := func(h *autoscalingv2.HorizontalPodAutoscaler) string {
		for _, m := range h.Status.CurrentMetrics {
			if m.Pods != nil && m.Pods.Metric.Name == adapter.MetricRequestsPerSecond && m.Pods.Current.AverageValue != nil {
				return m.Pods.Current.AverageValue.String()
			}
		}
		return "none"
	}
	last := ""
	// waitSettled waits until the Deployment has want replicas, the HPA
	// wants as many, and the HPA's reading is the load split over them
	// (within 10 %): the rate window has caught up with the step, so a
	// transient on the way (the old pods' window still holding the step's
	// edge) is over.
	waitSettled := func(want int32, load float64, what string) {
		t.Helper()
		waitFor(ctx, t, 120*time.Second, what, func(ctx context.Context) (bool, error) {
			h, r := status(ctx)
			if s := fmt.Sprintf("replicas %d (HPA desired %d), requests_per_second per pod %s", r, h.Status.DesiredReplicas, current(h)); s != last {
				t.Log(s)
				last = s
			}
			per, err := resource.ParseQuantity(current(h))
			if err != nil {
				return false, nil
			}
			share := load / float64(want)
			return r == want && h.Status.DesiredReplicas == want && math.Abs(per.AsApproximateFloat64()-share) <= 0.1*share, nil
		})
	}

	// Before the step: the HPA reads the metric and keeps 1 replica.
	waitFor(ctx, t, 90*time.Second, "the HPA reading requests_per_second", func(ctx context.Context) (bool, error) {
		h, _ := status(ctx)
		return current(h) != "none", nil
	})
	// Three HPA reconciliations at the low load, each deciding no change.
	waitHPAReconciliations(ctx, t, 3, func(ctx context.Context) error {
		if h, r := status(ctx); r != 1 {
			return fmt.Errorf("at 6 requests/s: %d replicas, want 1 (per pod %s)", r, current(h))
		}
		return nil
	})

	total <- 36
	waitSettled(4, 36, "scale-up to 4 replicas at 36 requests/s")
	// Four more reconciliations, none scaling: 4 pods at 9 requests/s each
	// is within the HPA's tolerance of the target.
	waitHPAReconciliations(ctx, t, 4, func(ctx context.Context) error {
		if h, r := status(ctx); r != 4 {
			return fmt.Errorf("settled at 36 requests/s: %d replicas, want 4 (per pod %s)", r, current(h))
		}
		return nil
	})

	total <- 6
	waitSettled(1, 6, "scale-down to 1 replica at 6 requests/s")
	h, _ := status(ctx)
	for _, cond := range h.Status.Conditions {
		if cond.Type == autoscalingv2.ScalingActive && cond.Status != v1.ConditionTrue {
			t.Errorf("ScalingActive %s: %s", cond.Status, cond.Message)
		}
	}
}

// hpaReconciliations reads the in-process kube-controller-manager's
// horizontal_pod_autoscaler_controller_reconciliations_total by action
// ("none", "scale_up", "scale_down") and error ("none", "spec",
// "internal"), keyed "action/error".
func hpaReconciliations(t *testing.T) map[string]float64 {
	t.Helper()
	mfs, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "horizontal_pod_autoscaler_controller_reconciliations_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out[labels["action"]+"/"+labels["error"]] += m.GetCounter().GetValue()
		}
	}
	return out
}

// waitHPAReconciliations waits until the HPA controller has reconciled n
// more times without error and without scaling, checking state on every
// poll; a reconciliation that scales ends the test (one that fails, e.g. a
// metrics read timing out, neither counts nor fails). It asserts "nothing
// changed" on the decisions the controller made, not on wall-clock time.
// The test's one HPA is the only one in the cluster.
func waitHPAReconciliations(ctx context.Context, t *testing.T, n float64, state func(context.Context) error) {
	t.Helper()
	base := hpaReconciliations(t)
	waitFor(ctx, t, 60*time.Second, fmt.Sprintf("%.0f HPA reconciliations that keep the replicas", n), func(ctx context.Context) (bool, error) {
		now := hpaReconciliations(t)
		for k, v := range now {
			if !strings.HasPrefix(k, "none/") && v > base[k] {
				return false, fmt.Errorf("HPA reconciliation %s (action/error) while the replicas should hold", k)
			}
		}
		if err := state(ctx); err != nil {
			return false, err
		}
		return now["none/none"]-base["none/none"] >= n, nil
	})
}
