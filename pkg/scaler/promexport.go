package scaler

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

// Prometheus metrics of the scaler, served on --metrics-bind-address.
var (
	decisionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hetsev_scaler_decisions_total",
		Help: "Scaling decisions by action (None, ScaleOut, ScaleIn, NoFeasibleType, Hold).",
	}, []string{"namespace", "modelservice", "action"})
	saturationGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "hetsev_scaler_saturation",
		Help: "W / sum T_i N_i of each ModelService at its last decision.",
	}, []string{"namespace", "modelservice"})
	arrivalRateGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "hetsev_scaler_arrival_rate_requests_per_second",
		Help: "Arrival rate W of each ModelService at its last decision, requests/s.",
	}, []string{"namespace", "modelservice"})
	replicasGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "hetsev_scaler_replicas",
		Help: "Desired replicas per ModelService and GPU type.",
	}, []string{"namespace", "modelservice", "gpu_type"})
	// costGauge is what each ModelService's desired replicas cost per
	// hour, per GPU type (a light flavor is a column of its own), at the
	// price the decision plans with: the spec's or the catalog's USD/h
	// per GPU, a light flavor f at f times it. The cluster bills a GPU
	// whole while it hosts anything, so the sum over ModelServices is a
	// lower bound of the GPU bill, not the bill.
	costGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "hetsev_scaler_cost_usd_per_hour",
		Help: "Price of each ModelService's desired replicas per GPU type, USD/h (a light flavor at its busy share of the GPU's price).",
	}, []string{"namespace", "modelservice", "gpu_type"})
	// latencyP98Gauge and sloResponseTimeGauge let Prometheus compare a
	// ModelService's measured latency with its SLO: the p98 latency the
	// adapter gave at the last decision (the highest over its Deployments;
	// no series while that decision read none) and RT_max
	// (spec.slo.responseTimeMs), both in ms. The chart's dashboard plots
	// them; its PrometheusRule's SLO burn rate reads sloAttainmentGauge.
	latencyP98Gauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "hetsev_scaler_latency_p98_ms",
		Help: "Highest p98 latency over each ModelService's Deployments at its last decision, ms.",
	}, []string{"namespace", "modelservice"})
	sloResponseTimeGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "hetsev_scaler_slo_response_time_ms",
		Help: "RT_max of each ModelService (spec.slo.responseTimeMs), ms.",
	}, []string{"namespace", "modelservice"})
	// sloAttainmentGauge and sloServiceLevelGauge compare the SLO as the
	// adapter measured it with its target: the fraction of requests within
	// RT_max over the rate window (request-weighted over the Deployments;
	// no series while the last decision measured none) and the service
	// level the scaler plans with, SL_min (spec.slo.serviceLevel) with 1
	// read as 0.999; the SLO holds while the first is at least the second.
	// The chart's PrometheusRule takes 1 - the service level as the error
	// budget, which SL_min 1 would make 0 and the burn rate NaN or +Inf;
	// exporting the planned level rather than clamping the budget in the
	// rule keeps one reading of SL_min 1 (spec.go's), shared by the
	// decisions, the status percentile and the rule.
	sloAttainmentGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "hetsev_scaler_slo_attainment",
		Help: "Fraction of each ModelService's requests within RT_max over the rate window at its last decision (0-1).",
	}, []string{"namespace", "modelservice"})
	sloServiceLevelGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "hetsev_scaler_slo_service_level",
		Help: "Service level each ModelService is planned for, the fraction of requests to answer within RT_max (0-1): spec.slo.serviceLevel, 1 read as 0.999.",
	}, []string{"namespace", "modelservice"})
	// replacementsTotal counts the steps of make-before-break
	// replacements by kind: "move" for a consolidation move (a column
	// replaced by itself onto a GPU in use), "swap" for a replacement by
	// another column. An operator alerts on timed-out ones: the new
	// replicas never became Ready and routed, and the old were kept.
	replacementsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hetsev_scaler_replacements_total",
		Help: "Steps of make-before-break replacements by kind (swap, move) and phase (ReplacementStarted, ReplacementProgressed, ReplacementCompleted, ReplacementTimedOut, ReplacementAbandoned).",
	}, []string{"namespace", "modelservice", "kind", "phase"})
	statusWritesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hetsev_scaler_status_writes_total",
		Help: "Writes of a ModelService's status (made only when it changed).",
	}, []string{"namespace", "modelservice"})
	solverSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "hetsev_scaler_solver_duration_seconds",
		Help:    "Time of the scaling decision itself (heuristic or exact ILP), without metrics reads.",
		Buckets: prometheus.ExponentialBuckets(1e-6, 4, 10),
	}, []string{"solver"})
	decisionSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "hetsev_scaler_decision_duration_seconds",
		Help:    "Time to reach one decision, metrics reads included.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
	})
)

// The kinds of hetsev_scaler_replacements_total.
const (
	replacementKindMove = "move" // a column replaced by itself: a consolidation move
	replacementKindSwap = "swap" // a column replaced by another
)

// initReplacementSeries creates the timed-out series of
// hetsev_scaler_replacements_total of ModelService namespace/name at 0,
// for both kinds: Prometheus' increase() counts no rise into a series'
// first sample, so a count that appeared at 1 with its first timeout
// would never fire the chart's HetsevModelServiceReplacementTimedOut.
func initReplacementSeries(namespace, name string) {
	for _, kind := range []string{replacementKindMove, replacementKindSwap} {
		replacementsTotal.WithLabelValues(namespace, name, kind, string(heterogeneity.ReplacementTimedOut))
	}
}

// dropLatencySeries drops the p98 latency and SLO attainment series of
// ModelService namespace/name, for a decision that measured neither.
func dropLatencySeries(namespace, name string) {
	latencyP98Gauge.DeleteLabelValues(namespace, name)
	sloAttainmentGauge.DeleteLabelValues(namespace, name)
}

// deleteMetrics drops the series of ModelService namespace/name.
func deleteMetrics(namespace, name string) {
	ms := prometheus.Labels{"namespace": namespace, "modelservice": name}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{decisionsTotal, replacementsTotal, statusWritesTotal, saturationGauge, arrivalRateGauge, replicasGauge, costGauge, latencyP98Gauge, sloResponseTimeGauge, sloAttainmentGauge, sloServiceLevelGauge} {
		v.DeletePartialMatch(ms)
	}
}

// Register adds the scaler's metrics to reg.
func Register(reg prometheus.Registerer) {
	reg.MustRegister(decisionsTotal, replacementsTotal, statusWritesTotal, saturationGauge, arrivalRateGauge, replicasGauge, costGauge, latencyP98Gauge, sloResponseTimeGauge, sloAttainmentGauge, sloServiceLevelGauge, decisionSeconds, solverSeconds)
}
