package scaler

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// sloMetrics is a SelectedMetricsSource with requests/s, SLO attainment
// and latency at the service level per Deployment; a Deployment absent
// from attain or latency has no such value. It records the metric
// selectors asked for.
type sloMetrics struct {
	rps, attain, latency map[string]float64
	p98                  map[string]float64 // request_latency_p98_ms; nil: none
	asked                map[string]string  // metric -> metric selector
}

func (m *sloMetrics) DeploymentMetric(_ context.Context, ns, name, metric string) (float64, error) {
	if v, ok := m.rps[name]; ok && metric == adapter.MetricRequestsPerSecond {
		return v, nil
	}
	if v, ok := m.p98[name]; ok && metric == adapter.MetricLatencyP98 {
		return v, nil
	}
	return 0, fmt.Errorf("no %s for %s/%s", metric, ns, name)
}

func (m *sloMetrics) PodMetrics(context.Context, string, labels.Selector, string) (map[string]float64, error) {
	return map[string]float64{}, nil
}

func (m *sloMetrics) DeploymentMetricFor(_ context.Context, ns, name, metric string, sel labels.Selector) (float64, error) {
	m.asked[metric] = sel.String()
	src := m.attain
	if metric == adapter.MetricLatency {
		src = m.latency
	}
	if v, ok := src[name]; ok {
		return v, nil
	}
	return 0, fmt.Errorf("no %s{%s} for %s/%s", metric, sel, ns, name)
}

// sloBed is resnet50 (named name) with one Ready replica on each of T4 and V100-32GB,
// read through metrics m.
func sloBed(t *testing.T, name string, m *sloMetrics) (*Reconciler, client.Client, reconcile.Request, *time.Time) {
	t.Helper()
	ctx := context.Background()
	ms := resnet()
	ms.Name = name
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	r, c := newFakeReconciler(t, ms, &now)
	r.Metrics = m
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ms.Namespace, Name: ms.Name}}
	if _, err := r.Reconcile(ctx, req); err != nil { // creates the Deployments
		t.Fatal(err)
	}
	for _, gpu := range []string{"T4", "V100-32GB"} {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ms.Namespace, Name: DeploymentName(ms.Name, gpu)}, d); err != nil {
			t.Fatal(err)
		}
		d.Spec.Replicas = ptr[int32](1)
		if err := c.Update(ctx, d); err != nil {
			t.Fatal(err)
		}
		d.Status.Replicas, d.Status.ReadyReplicas = 1, 1
		if err := c.Status().Update(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	return r, c, req, &now
}

func reconcileStatus(t *testing.T, r *Reconciler, c client.Client, req reconcile.Request, now *time.Time) v1alpha1.ModelServiceStatus {
	t.Helper()
	*now = now.Add(time.Hour)
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.ModelService{}
	if err := c.Get(context.Background(), req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	return got.Status
}

// T4 serves 300 requests/s with 99 % within RT_max (400 ms), V100 100
// requests/s with 95 %: the service attains (0.99*300 + 0.95*100) / 400 =
// 0.98 (the unweighted mean would be 0.97). Its p98 latency is the higher
// of the two, 420 ms. The adapter is asked for le=400 and quantile=0.98.
// When the adapter gives neither later, the fields hold.
func TestStatusReportsSLOAttainmentAtServiceLevel(t *testing.T) {
	m := &sloMetrics{
		rps:     map[string]float64{},
		attain:  map[string]float64{},
		latency: map[string]float64{},
		asked:   map[string]string{},
	}
	r, c, req, now := sloBed(t, "slo-weighted", m)
	t4, v100 := DeploymentName(req.Name, "T4"), DeploymentName(req.Name, "V100-32GB")
	m.rps[t4], m.rps[v100] = 300, 100
	m.attain[t4], m.attain[v100] = 0.99, 0.95
	m.latency[t4], m.latency[v100] = 350, 420

	st := reconcileStatus(t, r, c, req, now)
	if st.Attainment != "0.9800" || st.LatencyPercentile != "p98" || st.LatencyAtServiceLevelMs != "420.0" {
		t.Errorf("status attainment %q, percentile %q, latency %q; want 0.9800, p98, 420.0", st.Attainment, st.LatencyPercentile, st.LatencyAtServiceLevelMs)
	}
	if m.asked[adapter.MetricSLOAttainment] != "le=400" || m.asked[adapter.MetricLatency] != "quantile=0.98" {
		t.Errorf("metric selectors asked %v, want le=400 and quantile=0.98", m.asked)
	}
	if g := testutil.ToFloat64(sloAttainmentGauge.WithLabelValues(req.Namespace, req.Name)); g < 0.98-1e-9 || g > 0.98+1e-9 {
		t.Errorf("hetsev_scaler_slo_attainment = %v, want 0.98", g)
	}
	if g := testutil.ToFloat64(sloServiceLevelGauge.WithLabelValues(req.Namespace, req.Name)); g != 0.98 {
		t.Errorf("hetsev_scaler_slo_service_level = %v, want 0.98", g)
	}

	// No requests in the window: the adapter gives neither value; the
	// status keeps the last ones rather than 0, and the attainment gauge
	// has no series, so that the PrometheusRule's averages over time do
	// not repeat the last value.
	clear(m.attain)
	clear(m.latency)
	st = reconcileStatus(t, r, c, req, now)
	if st.Attainment != "0.9800" || st.LatencyPercentile != "p98" || st.LatencyAtServiceLevelMs != "420.0" {
		t.Errorf("without SLO metrics: attainment %q, percentile %q, latency %q; want the last 0.9800, p98, 420.0", st.Attainment, st.LatencyPercentile, st.LatencyAtServiceLevelMs)
	}
	if hasSeries(t, sloAttainmentGauge, req.Namespace, req.Name) {
		t.Errorf("hetsev_scaler_slo_attainment has a series after a decision that measured no attainment, want none")
	}
}

// SL_min 0.999 asks for quantile=0.999 and reports p99.9; SL_min 1 is read
// as 0.999, as the decision reads it, and exported as such: the
// PrometheusRule's error budget, 1 - hetsev_scaler_slo_service_level, is
// 0.001 rather than 0 (a NaN or +Inf burn rate).
func TestStatusLatencyPercentileFollowsServiceLevel(t *testing.T) {
	for _, sl := range []float64{0.999, 1} {
		t.Run(fmt.Sprint(sl), func(t *testing.T) {
			m := &sloMetrics{rps: map[string]float64{}, attain: map[string]float64{}, latency: map[string]float64{}, asked: map[string]string{}}
			r, c, req, now := sloBed(t, fmt.Sprintf("slo-level-%d", int(sl*1000)), m)
			ms := &v1alpha1.ModelService{}
			if err := c.Get(context.Background(), req.NamespacedName, ms); err != nil {
				t.Fatal(err)
			}
			ms.Spec.SLO.ServiceLevel = sl
			if err := c.Update(context.Background(), ms); err != nil {
				t.Fatal(err)
			}
			t4 := DeploymentName(req.Name, "T4")
			m.rps[t4], m.attain[t4], m.latency[t4] = 300, 0.9995, 380.26
			st := reconcileStatus(t, r, c, req, now)
			if m.asked[adapter.MetricLatency] != "quantile=0.999" {
				t.Errorf("latency selector %q, want quantile=0.999", m.asked[adapter.MetricLatency])
			}
			if st.LatencyPercentile != "p99.9" || st.LatencyAtServiceLevelMs != "380.3" || st.Attainment != "0.9995" {
				t.Errorf("percentile %q, latency %q, attainment %q; want p99.9, 380.3, 0.9995", st.LatencyPercentile, st.LatencyAtServiceLevelMs, st.Attainment)
			}
			if g := testutil.ToFloat64(sloServiceLevelGauge.WithLabelValues(req.Namespace, req.Name)); g != 0.999 || !(1-g > 0) {
				t.Errorf("hetsev_scaler_slo_service_level = %v (error budget %v) for SL_min %v, want 0.999 as planned (budget 0.001)", g, 1-g, sl)
			}
		})
	}
}

func TestPercentileName(t *testing.T) {
	for q, want := range map[float64]string{0.98: "p98", 0.999: "p99.9", 0.5: "p50", 0.9999: "p99.99", 0.95: "p95", 0.57: "p57"} {
		if got := percentileName(q); got != want {
			t.Errorf("percentileName(%v) = %q, want %q", q, got, want)
		}
	}
}
