package integration

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/internal/sim/demo"
	"github.com/hetsev/hetsev/internal/sim/simulator"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// TestScalerHoldsOnPartialMetrics: a load of 1500 requests/s grows
// ResNet-50 to several instances, one serving pod's sidecar stops
// exporting, and the load then drops to a fraction of one instance's
// capacity. The other pods' rate alone would call for a scale-in once the
// cool-down is over (the code before this test scaled in at once); the
// scaler decides on that rate as a lower bound of W, which may scale out
// but never in: it must hold (Hold decisions, MetricsUnavailable naming the
// Deployment and the quiet pod and saying the scale-in is held) for as many
// decisions as span the cool-down and the scale-in interval, and never
// lower the replicas meanwhile. Then every metric the chart's
// PrometheusRule and Grafana dashboard use is on the three programs'
// /metrics.
func TestScalerHoldsOnPartialMetrics(t *testing.T) {
	s := startStack(t, true)
	ctx := s.ctx
	ms := s.modelService(t, "resnet50", "resnet50", 400)
	// 1500 requests/s need 5 or 6 T4 instances; 100 requests/s need one.
	const quietAt, drop = 300.0, 450.0 // trace seconds
	w := s.world(t, []simulator.Service{demo.SimService(ms, 1, s.cat, factor)}, steps(drop, 1500, 1500, 100), factor)
	waitFor(ctx, t, 30*time.Second, "first instance", func(context.Context) (bool, error) {
		w.SyncPods()
		return w.Instances("resnet50") > 0, nil
	})
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = w.Run(wctx) }()

	var pods []v1.Pod
	waitFor(ctx, t, 90*time.Second, "three Ready pods", func(ctx context.Context) (bool, error) {
		if w.Clock.Processed() < quietAt {
			return false, nil
		}
		pods = readyPods(ctx, t, s, "resnet50")
		return len(pods) >= 3, nil
	})
	// While every pod exports, the scaler measures SLO attainment; a Hold
	// drops that series, so the monitoring check below counts this scrape.
	waitFor(ctx, t, 30*time.Second, "hetsev_scaler_slo_attainment exported", func(ctx context.Context) (bool, error) {
		families, err := cluster.ScrapeURL(ctx, http.DefaultClient, s.scalerMetrics)
		return err == nil && families["hetsev_scaler_slo_attainment"] != nil, nil
	})
	s.recordMonitoringMetrics(ctx, t)
	quiet := pods[0]
	deployment := "resnet50-" + quiet.Labels[v1alpha1.LabelGPUType]
	before := totalReplicas(ctx, t, s)
	holds := s.scalerDecisions(ctx, t, "resnet50", "Hold")
	if !w.StopExporter(quiet.Namespace, quiet.Name) {
		t.Fatalf("pod %s has no simulated server", quiet.Name)
	}
	t.Logf("trace %.0f s: %d Ready pods, %d replicas; pod %s of %s stopped exporting", w.Clock.Processed(), len(pods), before, quiet.Name, deployment)

	// Decisions spanning the cool-down after the last scale-out (which came
	// before the pod went quiet) and the scale-in interval, and two more;
	// the load drops during them.
	need := (knobs.ScaleInCoolDownSeconds+knobs.ScaleInIntervalSeconds)/knobs.IntervalSeconds + 2
	waitFor(ctx, t, 90*time.Second, fmt.Sprintf("%.0f Hold decisions", need), func(ctx context.Context) (bool, error) {
		if n := totalReplicas(ctx, t, s); n < before {
			return false, fmt.Errorf("replicas fell from %d to %d at trace %.0f s while pod %s had no metrics", before, n, w.Clock.Processed(), quiet.Name)
		}
		return s.scalerDecisions(ctx, t, "resnet50", "Hold")-holds >= need, nil
	})
	c := condition(ctx, t, s, "resnet50", v1alpha1.ConditionMetricsUnavailable)
	if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, deployment) ||
		!strings.Contains(c.Message, quiet.Name) || !strings.Contains(c.Message, "scale-in held") {
		t.Fatalf("MetricsUnavailable %+v, want True naming %s and pod %s, scale-in held", c, deployment, quiet.Name)
	}
	if after := totalReplicas(ctx, t, s); after < before {
		t.Errorf("replicas fell from %d to %d while pod %s had no metrics", before, after, quiet.Name)
	}
	t.Logf("trace %.0f s: held at %d replicas; %s", w.Clock.Processed(), totalReplicas(ctx, t, s), c.Message)
	// Now every kind of series the chart's monitoring uses exists: per-GPU
	// gauges of placed pods, decisions, and values the adapter withheld.
	s.checkMonitoringMetrics(ctx, t)
}

// readyPods returns the Ready, not terminating pods of ModelService name in
// namespace default, sorted by name.
func readyPods(ctx context.Context, t *testing.T, s *stack, name string) []v1.Pod {
	t.Helper()
	list, err := s.cp.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelModelService + "=" + name})
	if err != nil {
		t.Fatal(err)
	}
	var out []v1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodReady && c.Status == v1.ConditionTrue {
				out = append(out, p)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
