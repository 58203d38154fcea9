// Package selfmetrics holds hetsev-metrics-adapter's own metrics
// (hetsev_metrics_adapter_*), shared by the scrape and Prometheus backends
// and registered once by the server (see Register).
package selfmetrics

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/hetsev/hetsev/pkg/servingcert"
)

// Results of one scrape, the values of the result label of
// hetsev_metrics_adapter_scrapes_total.
const (
	ScrapeSuccess    = "success"     // parsed and stored
	ScrapeTimeout    = "timeout"     // no complete answer within --scrape-timeout
	ScrapeError      = "error"       // connection or transport error
	ScrapeHTTPError  = "http_error"  // HTTP status other than 200
	ScrapeTooLarge   = "too_large"   // body over the size limit
	ScrapeParseError = "parse_error" // not valid Prometheus exposition
)

// Reasons a series is ignored, the values of the reason label of
// hetsev_metrics_adapter_series_ignored_total.
const (
	IgnoredNoReporter = "missing_reporter" // Istio series without a reporter label
	IgnoredBadLe      = "bad_le"           // bucket without a parsable le label
	IgnoredBadGPU     = "bad_gpu"          // DCGM series without a parsable gpu label
	IgnoredNoNode     = "no_node"          // DCGM series of a target with no node
	// IgnoredNotDCGMExporter: a DCGM series from a pod that is not a
	// trusted dcgm-exporter (--dcgm-exporter-namespace and -selector).
	IgnoredNotDCGMExporter = "not_dcgm_exporter"
	// IgnoredForeignNode: a DCGM series whose Hostname names neither the
	// exporter's node nor its pod.
	IgnoredForeignNode = "foreign_node"
	IgnoredBadValue    = "bad_value" // NaN, infinite, or negative counter value
	IgnoredDuplicate   = "duplicate" // same series twice in one scrape
	IgnoredNoPod       = "no_pod"    // Prometheus result without the namespace or pod label
)

var (
	// ScrapesTotal counts scrapes by result (Scrape* constants).
	ScrapesTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "hetsev",
		Subsystem:      "metrics_adapter",
		Name:           "scrapes_total",
		Help:           "Scrapes of pod metrics endpoints, by result (success, timeout, error, http_error, too_large, parse_error).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})

	// SeriesIgnoredTotal counts ignored series by series name and reason
	// (Ignored* constants); see Ignore.
	SeriesIgnoredTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "hetsev",
		Subsystem:      "metrics_adapter",
		Name:           "series_ignored_total",
		Help:           "Scraped or queried series of interest ignored because of unexpected labels or values, by series name and reason.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"series", "reason"})

	// ScrapeDuration observes the wall-clock duration of one scrape.
	ScrapeDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Namespace:      "hetsev",
		Subsystem:      "metrics_adapter",
		Name:           "scrape_duration_seconds",
		Help:           "Wall-clock duration of one scrape (request, read and parse), in seconds.",
		Buckets:        metrics.ExponentialBuckets(0.0005, 2, 14),
		StabilityLevel: metrics.ALPHA,
	})

	// ScrapeTargets is the number of pods selected for scraping.
	ScrapeTargets = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace:      "hetsev",
		Subsystem:      "metrics_adapter",
		Name:           "scrape_targets",
		Help:           "Pods currently selected for scraping.",
		StabilityLevel: metrics.ALPHA,
	})

	// PrometheusQueriesTotal counts PromQL queries by query and result.
	PrometheusQueriesTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "hetsev",
		Subsystem:      "metrics_adapter",
		Name:           "prometheus_queries_total",
		Help:           "PromQL queries of the Prometheus backend, by query (request_rate, request_duration, gpu_util, gpu_memory) and result (success, error, timeout).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"query", "result"})

	// PrometheusQueryDuration observes the wall-clock duration of one
	// PromQL query, by query.
	PrometheusQueryDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace:      "hetsev",
		Subsystem:      "metrics_adapter",
		Name:           "prometheus_query_duration_seconds",
		Help:           "Wall-clock duration of one PromQL query of the Prometheus backend, in seconds, by query.",
		Buckets:        metrics.ExponentialBuckets(0.0005, 2, 16),
		StabilityLevel: metrics.ALPHA,
	}, []string{"query"})

	// PartialDataTotal counts Deployment and ModelService values withheld
	// (answered NotFound) because some of their serving pods had no data,
	// by resource and metric.
	PartialDataTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "hetsev",
		Subsystem:      "metrics_adapter",
		Name:           "partial_data_total",
		Help:           "Deployment and ModelService values withheld (answered NotFound) because a Ready pod of theirs had no data, by resource and metric.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"resource", "metric"})

	// CertificateExpiry is servingcert.ExpiryMetricName: the NotAfter of
	// the self-signed serving certificate (--cert-self-signed), by
	// component; absent when the certificate comes from files.
	CertificateExpiry = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name:           servingcert.ExpiryMetricName,
		Help:           servingcert.ExpiryMetricHelp,
		StabilityLevel: metrics.ALPHA,
	}, []string{"component"})

	registerOnce sync.Once
)

// Ignore counts one ignored series of the named series for reason.
func Ignore(series, reason string) {
	SeriesIgnoredTotal.WithLabelValues(series, reason).Inc()
}

// Register registers the adapter's own metrics in
// k8s.io/component-base/metrics/legacyregistry, which the generic API server
// serves on /metrics:
//
//	hetsev_metrics_adapter_scrapes_total{result}           counter
//	hetsev_metrics_adapter_series_ignored_total{series,reason} counter
//	hetsev_metrics_adapter_scrape_duration_seconds         histogram
//	hetsev_metrics_adapter_scrape_targets                  gauge
//	hetsev_metrics_adapter_prometheus_queries_total{query,result} counter
//	hetsev_metrics_adapter_prometheus_query_duration_seconds{query} histogram
//	hetsev_metrics_adapter_partial_data_total{resource,metric}    counter
//	hetsev_serving_certificate_expiry_timestamp_seconds{component} gauge
//
// Component-base metrics record nothing until registered. Safe to call more
// than once.
func Register() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(ScrapesTotal, SeriesIgnoredTotal, ScrapeDuration, ScrapeTargets, PrometheusQueriesTotal, PrometheusQueryDuration, PartialDataTotal, CertificateExpiry)
	})
}
