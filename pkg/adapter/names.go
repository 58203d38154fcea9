package adapter

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// Names of the metrics the adapter serves through custom.metrics.k8s.io.
const (
	// MetricRequestsPerSecond is the rate of istio_requests_total
	// (reporter="destination") over the rate window, in requests per second.
	// Per pod: summed over all label sets of the pod. Per Deployment: the sum
	// of its pods' rates.
	MetricRequestsPerSecond = "requests_per_second"
	// MetricLatencyP50 is the 50th percentile of request duration in
	// milliseconds, from the increases of istio_request_duration_milliseconds
	// buckets over the rate window, interpolated linearly inside the bucket as
	// Prometheus' histogram_quantile does. Per Deployment the pods' bucket
	// increases are merged first (percentiles are never averaged).
	MetricLatencyP50 = "request_latency_p50_ms"
	// MetricLatencyP98 is the 98th percentile of request duration in ms (see
	// MetricLatencyP50); HetSev's default service level is 98 %.
	MetricLatencyP98 = "request_latency_p98_ms"
	// MetricLatencyP99 is the 99th percentile of request duration in ms (see
	// MetricLatencyP50).
	MetricLatencyP99 = "request_latency_p99_ms"
	// MetricLatency is the q-quantile of request duration in ms, q given by
	// the metric selector quantile=<q> (SelectorQuantile, 0 < q < 1, e.g.
	// 0.98 or 0.999), from the same bucket increases as MetricLatencyP50
	// and merged the same way per Deployment and ModelService.
	MetricLatency = "request_latency_ms"
	// MetricSLOAttainment is the fraction (0-1) of the requests over the
	// rate window whose duration was at most the metric selector's
	// le=<ms> (SelectorLE, ms > 0), from the same merged bucket increases
	// (HistogramFractionAtMost). When ms falls between two bucket bounds
	// the fraction is an estimate, interpolated linearly inside the bucket
	// as histogram_quantile does. Not served when the window holds no
	// requests.
	MetricSLOAttainment = "request_slo_attainment"
	// MetricGPUUtilization is the latest DCGM_FI_DEV_GPU_UTIL of the pod's GPU,
	// in percent (0-100). A pod that shares its GPU with other pods is
	// reported the utilisation of the WHOLE GPU: DCGM measures devices, not
	// processes. Per Deployment: the mean over its pods.
	MetricGPUUtilization = "gpu_utilization_percent"
	// MetricGPUMemoryUsed is the latest DCGM_FI_DEV_FB_USED of the pod's GPU,
	// in MiB; like MetricGPUUtilization it is the whole GPU's value. Served
	// for pods only.
	MetricGPUMemoryUsed = "gpu_memory_used_mib"
)

// Labels of the metric selector (custom.metrics.k8s.io's
// metricLabelSelector) that parametrise MetricLatency and
// MetricSLOAttainment; each takes exactly one, as label=value.
const (
	// SelectorQuantile is MetricLatency's quantile, a number in (0, 1).
	SelectorQuantile = "quantile"
	// SelectorLE is MetricSLOAttainment's response time bound in ms, a
	// number > 0 (Prometheus' le, the bucket bound label).
	SelectorLE = "le"
)

// The resources the metrics are served for.
var (
	// PodsResource is pods in the core group.
	PodsResource = schema.GroupResource{Group: "", Resource: "pods"}
	// DeploymentsResource is deployments in the apps group.
	DeploymentsResource = schema.GroupResource{Group: "apps", Resource: "deployments"}
	// ModelServicesResource is hetsev's ModelService (manifests/crd-modelservice.yaml).
	ModelServicesResource = v1alpha1.Resource.GroupResource()
)

// Series the adapter reads, named as Istio and dcgm-exporter publish them.
const (
	// SeriesIstioRequests is Istio's request counter.
	SeriesIstioRequests = "istio_requests_total"
	// SeriesIstioDuration is Istio's request duration histogram, in
	// milliseconds.
	SeriesIstioDuration = "istio_request_duration_milliseconds"
	// SeriesIstioDurationBucket is the bucket series of Istio's request
	// duration histogram (label le, upper bound in milliseconds).
	SeriesIstioDurationBucket = SeriesIstioDuration + "_bucket"
	// SeriesDCGMGPUUtil is dcgm-exporter's GPU utilisation gauge (percent).
	SeriesDCGMGPUUtil = "DCGM_FI_DEV_GPU_UTIL"
	// SeriesDCGMFBUsed is dcgm-exporter's used framebuffer gauge (MiB).
	SeriesDCGMFBUsed = "DCGM_FI_DEV_FB_USED"

	// LabelReporter is Istio's reporter label; only "destination" is read
	// (the server-side sidecar's view of requests to the pod).
	LabelReporter = "reporter"
	// ReporterDestination is the LabelReporter value the adapter reads.
	ReporterDestination = "destination"
	// LabelDCGMGPU is dcgm-exporter's GPU index label.
	LabelDCGMGPU = "gpu"
	// LabelDCGMHostname is dcgm-exporter's Hostname label (the node name).
	LabelDCGMHostname = "Hostname"
	// LabelDCGMUUID is dcgm-exporter's GPU UUID label ("GPU-...").
	LabelDCGMUUID = "UUID"
)

// Pod annotations the adapter reads.
const (
	// AnnotationScrape must be "true" for a pod to be scraped.
	AnnotationScrape = "prometheus.io/scrape"
	// AnnotationPort is the port to scrape (required).
	AnnotationPort = "prometheus.io/port"
	// AnnotationPath is the HTTP path to scrape; DefaultMetricsPath if absent.
	AnnotationPath = "prometheus.io/path"
	// DefaultMetricsPath is the path scraped when AnnotationPath is absent.
	DefaultMetricsPath = "/metrics"
)
