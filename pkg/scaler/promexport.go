package scaler

import (
	"github.com/prometheus/client_golang/prometheus"
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

// deleteMetrics drops the series of ModelService namespace/name.
func deleteMetrics(namespace, name string) {
	ms := prometheus.Labels{"namespace": namespace, "modelservice": name}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{decisionsTotal, statusWritesTotal, saturationGauge, arrivalRateGauge, replicasGauge} {
		v.DeletePartialMatch(ms)
	}
}

// Register adds the scaler's metrics to reg.
func Register(reg prometheus.Registerer) {
	reg.MustRegister(decisionsTotal, statusWritesTotal, saturationGauge, arrivalRateGauge, replicasGauge, decisionSeconds, solverSeconds)
}
