// Package adapter is hetsev's custom-metrics adapter: it serves request rate,
// request latency percentiles and GPU utilisation per pod and per Deployment
// through the custom.metrics.k8s.io API (sigs.k8s.io/custom-metrics-apiserver),
// for the hetsev scaler and for HorizontalPodAutoscalers.
//
// Data flow:
//
//	pods annotated prometheus.io/scrape="true"   (pod informer, TargetForPod)
//	  -> Scraper: GET http://<podIP>:<prometheus.io/port><prometheus.io/path>
//	     every --scrape-interval, parsed with expfmt, kept as short per-pod
//	     histories in the samples' own clock
//	  -> Source (interface; a Prometheus-query backend can replace the Scraper)
//	  -> Provider (provider.CustomMetricsProvider) -> custom.metrics.k8s.io
//
// Inputs, as the real exporters publish them:
//
//   - Istio standard metrics from each model-server pod's sidecar:
//     istio_requests_total (counter) and
//     istio_request_duration_milliseconds (histogram, buckets in ms), only
//     reporter="destination", summed over all other labels of the pod.
//   - dcgm-exporter gauges DCGM_FI_DEV_GPU_UTIL (percent) and
//     DCGM_FI_DEV_FB_USED (MiB), one series per GPU labelled gpu (index) and
//     Hostname (node name). A pod's GPU is (spec.nodeName, annotation
//     hetsev.io/gpu-index), written by hetsev-scheduler.
//
// Metrics served (see the Metric* constants for units):
//
//	requests_per_second       pods, deployments.apps   sum of pod rates
//	request_latency_p50_ms    pods, deployments.apps   merged histogram
//	request_latency_p98_ms    pods, deployments.apps   merged histogram
//	request_latency_p99_ms    pods, deployments.apps   merged histogram
//	gpu_utilization_percent   pods, deployments.apps   mean of pods
//	gpu_memory_used_mib       pods
//
// Time: a sample carrying its own timestamp in the exposition is stored at
// that time (hetsev's simulated exporters stamp samples with a compressed
// simulation clock, and Prometheus honours such timestamps); other samples
// are stored at the scrape's start time. Rates and histogram increases are
// computed over the last --rate-window of that sample clock, ending at the
// pod's newest sample.
//
// Missing data is never reported as zero: a pod that was never scraped, whose
// last scrape failed, that exposes no matching series, or that has fewer than
// two samples in the window yields a NotFound error
// (provider.NewMetricNotFoundForError), so that a scaler cannot mistake it for
// an idle pod. A Deployment is reported over those of its pods that have data,
// and is NotFound only when none has.
//
// The adapter's own metrics (hetsev_metrics_adapter_*) are registered in
// k8s.io/component-base/metrics/legacyregistry, which the generic API server
// serves on /metrics; see RegisterMetrics.
package adapter
