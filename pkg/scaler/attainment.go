package scaler

import (
	"context"
	"math"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// sloTarget is the SLO the scaler reads attainment and latency for: RT_max
// in ms (spec.slo.responseTimeMs) and the service level as the decision
// uses it (spec.slo.serviceLevel, 1 taken as 0.999: a percentile below
// 1 is measurable, p100 of a histogram is not).
type sloTarget struct {
	RTMaxMs      float64
	ServiceLevel float64
}

// sloMeasure is a ModelService's SLO attainment and latency at its service
// level, merged over its Deployments.
type sloMeasure struct {
	// attained and weight: the sum over the Deployments with an
	// attainment of attainment x requests/s, and of requests/s; n counts
	// them and plain sums their attainments (the mean when no Deployment
	// has requests/s above 0).
	attained, weight, plain float64
	n                       int
	// LatencyMs is the highest latency at the service level over the
	// Deployments that have one, ms; HasLatency says whether any has.
	LatencyMs  float64
	HasLatency bool
}

// Attainment is the request-weighted mean of the Deployments' attainments
// (weight: each Deployment's requests/s), the fraction of the service's
// requests within RT_max; false when no Deployment had one.
func (m sloMeasure) Attainment() (float64, bool) {
	switch {
	case m.n == 0:
		return 0, false
	case m.weight > 0:
		return m.attained / m.weight, true
	}
	return m.plain / float64(m.n), true
}

// measureSLO reads, for Deployment d with rps requests/s, the adapter's
// request_slo_attainment{le=RT_max} and request_latency_ms{quantile=SL}
// into a.SLO when r.Metrics is a SelectedMetricsSource. A value the
// adapter withholds (no requests in the window, a serving pod without
// data) is left out; so is one that timed out, after which the other SLO
// and latency reads of the decision are skipped (optionalCall sets
// a.LatencyTimedOut). Neither read is needed for the decision, so neither
// sets a.TimedOut.
func (r *Reconciler) measureSLO(ctx context.Context, a *arrival, d *appsv1.Deployment, rps float64, slo sloTarget) {
	src, ok := r.Metrics.(SelectedMetricsSource)
	if !ok || !(slo.RTMaxMs > 0) || !(slo.ServiceLevel > 0 && slo.ServiceLevel < 1) {
		return
	}
	logger := klog.FromContext(ctx)
	read := func(metric, key string, param float64) (float64, bool) {
		sel, err := labels.ValidatedSelectorFromSet(labels.Set{key: strconv.FormatFloat(param, 'f', -1, 64)})
		if err != nil {
			logger.V(2).Info("SLO parameter is no label value", "metric", metric, key, param, "err", err)
			return 0, false
		}
		var v float64
		err = r.optionalCall(ctx, a, func(ctx context.Context) (err error) {
			v, err = src.DeploymentMetricFor(ctx, d.Namespace, d.Name, metric, sel)
			return err
		})
		if err != nil {
			logger.V(4).Info("metric unavailable", "deployment", d.Name, "metric", metric, "err", err)
			return 0, false
		}
		return v, !math.IsNaN(v) && !math.IsInf(v, 0)
	}
	if v, ok := read(adapter.MetricSLOAttainment, adapter.SelectorLE, slo.RTMaxMs); ok {
		a.SLO.attained += v * rps
		a.SLO.weight += rps
		a.SLO.plain += v
		a.SLO.n++
	}
	if v, ok := read(adapter.MetricLatency, adapter.SelectorQuantile, slo.ServiceLevel); ok && (!a.SLO.HasLatency || v > a.SLO.LatencyMs) {
		a.SLO.LatencyMs, a.SLO.HasLatency = v, true
	}
}

// reportSLO writes m to status and the scaler's gauges: attainment with 4
// decimals, the latency at service level sl (the decision's, SL_min with 1
// read as 0.999) with its percentile's name, and sl as the service level
// gauge. Status fields of values the adapter did not give keep what they
// had: a missing value is no 0; measured says whether any was given. The
// attainment gauge loses its series instead, so that the PrometheusRule's
// averages over time leave out the decisions that measured none rather
// than repeat the last value.
func reportSLO(ms *v1alpha1.ModelService, status *v1alpha1.ModelServiceStatus, m sloMeasure, sl float64) (measured bool) {
	sloServiceLevelGauge.WithLabelValues(ms.Namespace, ms.Name).Set(sl)
	if v, ok := m.Attainment(); ok {
		measured = true
		status.Attainment = strconv.FormatFloat(v, 'f', 4, 64)
		sloAttainmentGauge.WithLabelValues(ms.Namespace, ms.Name).Set(v)
	} else {
		sloAttainmentGauge.DeleteLabelValues(ms.Namespace, ms.Name)
	}
	if m.HasLatency {
		measured = true
		status.LatencyPercentile = percentileName(sl)
		status.LatencyAtServiceLevelMs = strconv.FormatFloat(m.LatencyMs, 'f', 1, 64)
	}
	return measured
}

// percentileName names the q-quantile as a percentile: 0.98 "p98", 0.999
// "p99.9".
func percentileName(q float64) string {
	return "p" + strconv.FormatFloat(math.Round(q*100*1e6)/1e6, 'f', -1, 64)
}
