package scaler

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// hasSeries says whether gauge vec has a series for ModelService
// namespace/name.
func hasSeries(t *testing.T, vec *prometheus.GaugeVec, namespace, name string) bool {
	t.Helper()
	ch := make(chan prometheus.Metric, 1024)
	vec.Collect(ch)
	close(ch)
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, l := range pb.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if got["namespace"] == namespace && got["modelservice"] == name {
			return true
		}
	}
	return false
}

// A decision whose Deployments gave no p98 latency leaves
// hetsev_scaler_latency_p98_ms without a series and status.latencyP98Ms
// as it was, not at 0 ms, which would read as a fast service.
func TestLatencyP98SeriesOnlyWhenRead(t *testing.T) {
	m := &sloMetrics{rps: map[string]float64{}, attain: map[string]float64{}, latency: map[string]float64{}, p98: map[string]float64{}, asked: map[string]string{}}
	r, c, req, now := sloBed(t, "slo-p98-series", m)
	t4 := DeploymentName(req.Name, "T4")
	m.rps[t4] = 300
	if st := reconcileStatus(t, r, c, req, now); st.LatencyP98Ms != "" {
		t.Errorf("status.latencyP98Ms = %q before any p98 was read, want none", st.LatencyP98Ms)
	}
	m.p98[t4] = 310
	if st := reconcileStatus(t, r, c, req, now); st.LatencyP98Ms != "310.0" {
		t.Errorf("status.latencyP98Ms = %q, want 310.0", st.LatencyP98Ms)
	}
	if g := testutil.ToFloat64(latencyP98Gauge.WithLabelValues(req.Namespace, req.Name)); g != 310 {
		t.Errorf("hetsev_scaler_latency_p98_ms = %v, want 310", g)
	}
	clear(m.p98)
	if st := reconcileStatus(t, r, c, req, now); st.LatencyP98Ms != "310.0" {
		t.Errorf("status.latencyP98Ms = %q after a decision that read no p98, want 310.0 kept", st.LatencyP98Ms)
	}
	if hasSeries(t, latencyP98Gauge, req.Namespace, req.Name) {
		t.Errorf("hetsev_scaler_latency_p98_ms = %v after a decision that read no p98, want no series",
			testutil.ToFloat64(latencyP98Gauge.WithLabelValues(req.Namespace, req.Name)))
	}
}

// A decision that Holds for want of an arrival rate measures no latency
// and no attainment: their series go rather than repeat the last values.
func TestHoldDropsLatencyAndAttainmentSeries(t *testing.T) {
	m := &sloMetrics{rps: map[string]float64{}, attain: map[string]float64{}, latency: map[string]float64{}, p98: map[string]float64{}, asked: map[string]string{}}
	r, c, req, now := sloBed(t, "slo-hold-series", m)
	t4 := DeploymentName(req.Name, "T4")
	m.rps[t4], m.p98[t4], m.attain[t4], m.latency[t4] = 300, 310, 0.99, 350
	reconcileStatus(t, r, c, req, now)
	if !hasSeries(t, sloAttainmentGauge, req.Namespace, req.Name) || !hasSeries(t, latencyP98Gauge, req.Namespace, req.Name) {
		t.Fatalf("no attainment or p98 series after a measured decision")
	}
	clear(m.rps) // traffic metrics gone: the Deployments' values are withheld
	st := reconcileStatus(t, r, c, req, now)
	if d := st.LastDecision; d == nil || d.Action != "Hold" {
		t.Fatalf("last decision %+v, want Hold", d)
	}
	for n, vec := range map[string]*prometheus.GaugeVec{"hetsev_scaler_slo_attainment": sloAttainmentGauge, "hetsev_scaler_latency_p98_ms": latencyP98Gauge} {
		if hasSeries(t, vec, req.Namespace, req.Name) {
			t.Errorf("%s = %v after a Hold, want no series", n, testutil.ToFloat64(vec.WithLabelValues(req.Namespace, req.Name)))
		}
	}
}

// hungSLOMetrics answers requests/s as sloMetrics does, but its SLO
// attainment calls wait until their context is done (or release is
// closed, the test's end); it counts them.
type hungSLOMetrics struct {
	*sloMetrics
	release chan struct{}
	calls   atomic.Int32
}

func (m *hungSLOMetrics) DeploymentMetricFor(ctx context.Context, ns, name, metric string, sel labels.Selector) (float64, error) {
	if metric != adapter.MetricSLOAttainment {
		return m.sloMetrics.DeploymentMetricFor(ctx, ns, name, metric, sel)
	}
	m.calls.Add(1)
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-m.release:
		return 0.5, nil
	}
}

// The SLO attainment read hangs while the arrival rate answers: the
// decision scales on the rate within about one metrics timeout, leaves the
// attainment unmeasured (no status value, no series), says so in
// MetricsUnavailable (False), and asks for no further attainment.
func TestHungSLOReadDoesNotHoldDecision(t *testing.T) {
	m := &hungSLOMetrics{release: make(chan struct{}), sloMetrics: &sloMetrics{rps: map[string]float64{}, attain: map[string]float64{}, latency: map[string]float64{}, asked: map[string]string{}}}
	r, c, req, now := sloBed(t, "slo-hung", m.sloMetrics)
	r.Metrics, r.MetricsTimeout = m, 50*time.Millisecond
	t4, v100 := DeploymentName(req.Name, "T4"), DeploymentName(req.Name, "V100-32GB")
	m.rps[t4], m.rps[v100] = 3000, 1000
	if err := c.Create(context.Background(), node("t4-node", 8, 16384, "64")); err != nil { // room to scale out
		t.Fatal(err)
	}

	// Two decisions: the first starts the scale-out period, the second
	// scales out.
	var st v1alpha1.ModelServiceStatus
	for range 2 {
		done := make(chan v1alpha1.ModelServiceStatus, 1)
		go func() { done <- reconcileStatus(t, r, c, req, now) }()
		select {
		case st = <-done:
		case <-time.After(10 * time.Second):
			close(m.release)
			st = <-done
			t.Fatalf("the decision waited on the hung attainment read until the test released it: the call had no deadline")
		}
	}
	d := st.LastDecision
	if d == nil || d.Action != "ScaleOut" {
		t.Fatalf("last decision %+v, want ScaleOut on 4000 requests/s", d)
	}
	if st.Attainment != "" {
		t.Errorf("status attainment %q, want none", st.Attainment)
	}
	if hasSeries(t, sloAttainmentGauge, req.Namespace, req.Name) {
		t.Errorf("hetsev_scaler_slo_attainment has a series, want none")
	}
	cond := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionMetricsUnavailable)
	if cond == nil || cond.Status != metav1.ConditionFalse || !strings.Contains(cond.Message, "SLO attainment not read") {
		t.Errorf("MetricsUnavailable %+v, want False noting the attainment not read", cond)
	}
	if n := m.calls.Load(); n != 2 {
		t.Errorf("%d attainment calls in two decisions, want 2: after a timeout the others of the decision are skipped", n)
	}
}
