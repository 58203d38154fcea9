package scaler

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
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
// hetsev_scaler_latency_p98_ms without a series, not at 0 ms, which would
// read as a fast service.
func TestLatencyP98SeriesOnlyWhenRead(t *testing.T) {
	m := &sloMetrics{rps: map[string]float64{}, attain: map[string]float64{}, latency: map[string]float64{}, p98: map[string]float64{}, asked: map[string]string{}}
	r, c, req, now := sloBed(t, "slo-p98-series", m)
	t4 := DeploymentName(req.Name, "T4")
	m.rps[t4], m.p98[t4] = 300, 310
	reconcileStatus(t, r, c, req, now)
	if g := testutil.ToFloat64(latencyP98Gauge.WithLabelValues(req.Namespace, req.Name)); g != 310 {
		t.Errorf("hetsev_scaler_latency_p98_ms = %v, want 310", g)
	}
	clear(m.p98)
	reconcileStatus(t, r, c, req, now)
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
