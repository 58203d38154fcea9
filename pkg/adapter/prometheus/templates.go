package prometheus

import (
	"bytes"
	"strconv"
	"text/template"

	"github.com/prometheus/common/model"

	"github.com/hetsev/hetsev/pkg/adapter"
)

// Default PromQL templates of the Prometheus backend (see PromQLData for
// the fields). They are the queries HetSev section 5 describes: Istio's
// destination-side request counter and duration histogram per pod, and
// dcgm-exporter's per-GPU gauges. Rendered with the default labels, a
// one-minute window and namespace ml:
//
//	sum by (namespace, pod) (rate(istio_requests_total{reporter="destination",namespace="ml"}[1m]))
//	sum by (namespace, pod, le) (increase(istio_request_duration_milliseconds_bucket{reporter="destination",namespace="ml"}[1m]))
//	max by (Hostname, gpu, UUID) (DCGM_FI_DEV_GPU_UTIL{job=~".*dcgm-exporter.*"})
//	max by (Hostname, gpu, UUID) (DCGM_FI_DEV_FB_USED{job=~".*dcgm-exporter.*"})
//
// The GPU queries keep dcgm-exporter's UUID label: a pod whose GPU has a
// UUID (hetsev.io/gpu-uuid) is joined by it, others by node and index.
//
// The DCGM queries read only dcgm-exporter's scrape jobs (DCGMMatcher):
// Prometheus scraping annotated pods would otherwise take a tenant's own
// DCGM_FI_* series, with any Hostname, as a GPU's.
const (
	DefaultRequestRateQuery = `sum by ({{.NamespaceLabel}}, {{.PodLabel}}) (rate(` + adapter.SeriesIstioRequests + `{` + destination + `,{{.NamespaceMatcher}}}[{{.Window}}]))`
	DefaultDurationQuery    = `sum by ({{.NamespaceLabel}}, {{.PodLabel}}, le) (increase(` + adapter.SeriesIstioDurationBucket + `{` + destination + `,{{.NamespaceMatcher}}}[{{.Window}}]))`
	DefaultGPUUtilQuery     = `max by ({{.NodeLabel}}, {{.GPULabel}}, ` + adapter.LabelDCGMUUID + `) (` + adapter.SeriesDCGMGPUUtil + `{{"{"}}{{.DCGMMatcher}}{{"}"}})`
	DefaultGPUMemoryQuery   = `max by ({{.NodeLabel}}, {{.GPULabel}}, ` + adapter.LabelDCGMUUID + `) (` + adapter.SeriesDCGMFBUsed + `{{"{"}}{{.DCGMMatcher}}{{"}"}})`

	// DefaultDCGMMatcher selects dcgm-exporter's series by the scrape
	// job: the GPU Operator's ServiceMonitor gives nvidia-dcgm-exporter,
	// dcgm-exporter's own chart dcgm-exporter.
	DefaultDCGMMatcher = `job=~".*dcgm-exporter.*"`
)

// destination matches the Istio series the adapter reads: those the
// server-side sidecar reports.
const destination = adapter.LabelReporter + `="` + adapter.ReporterDestination + `"`

// PromQLData is what the query templates may use.
type PromQLData struct {
	// Window is RateWindow as a PromQL duration, e.g. "1m".
	Window string
	// NamespaceMatcher selects the namespace asked about, e.g.
	// namespace="default", or namespace!="" for all namespaces.
	NamespaceMatcher string
	// The label names of Options.
	NamespaceLabel, PodLabel, NodeLabel, GPULabel string
	// DCGMMatcher is Options.DCGMMatcher, e.g. job=~".*dcgm-exporter.*".
	DCGMMatcher string
}

// parseQuery parses a query template; a field PromQLData lacks is an error.
func parseQuery(name, tmpl string) (*template.Template, error) {
	return template.New(name).Option("missingkey=error").Parse(tmpl)
}

// render fills a parsed query template for namespace ("" for all
// namespaces).
func (o Options) render(t *template.Template, namespace string) (string, error) {
	matcher := o.NamespaceLabel + `!=""`
	if namespace != "" {
		matcher = o.NamespaceLabel + "=" + strconv.Quote(namespace)
	}
	var b bytes.Buffer
	err := t.Execute(&b, PromQLData{
		Window:           model.Duration(o.RateWindow).String(),
		NamespaceMatcher: matcher,
		NamespaceLabel:   o.NamespaceLabel, PodLabel: o.PodLabel, NodeLabel: o.NodeLabel, GPULabel: o.GPULabel,
		DCGMMatcher: o.DCGMMatcher,
	})
	if err != nil {
		return "", err
	}
	return b.String(), nil
}
