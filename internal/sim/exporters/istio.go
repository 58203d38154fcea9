package exporters

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hetsev/hetsev/pkg/adapter"
)

// IstioDurationBucketsMs are Istio's default bucket upper bounds, in
// milliseconds, for istio_request_duration_milliseconds (Istio's stats
// filter defaults). It is informational: the exporter uses its own copy,
// so modifying it has no effect.
var IstioDurationBucketsMs = slices.Clone(istioBuckets)

var istioBuckets = []float64{0.5, 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000, 600000, 1800000, 3600000}

// IstioLabels identifies the source and destination of the requests that
// one Istio exporter reports, as the destination-side (server) sidecar of
// a model-server pod does. Empty fields are exported as "unknown", like
// Istio does for unknown peers.
type IstioLabels struct {
	SourceWorkload          string // source_workload, e.g. "loadgen"
	SourceWorkloadNamespace string // source_workload_namespace

	DestinationWorkload          string // destination_workload (the Deployment), e.g. "resnet50-t4"
	DestinationWorkloadNamespace string // destination_workload_namespace
	// DestinationService is the destination_service FQDN, e.g.
	// "resnet50.default.svc.cluster.local". If empty and both
	// DestinationServiceName and DestinationServiceNamespace are set, it
	// is derived as "<name>.<namespace>.svc.cluster.local".
	DestinationService          string
	DestinationServiceName      string // destination_service_name, e.g. "resnet50"
	DestinationServiceNamespace string // destination_service_namespace
	DestinationApp              string // destination_app (pod label app)
	DestinationVersion          string // destination_version (pod label version)
}

func (l IstioLabels) constLabels() prometheus.Labels {
	svc := l.DestinationService
	if svc == "" && l.DestinationServiceName != "" && l.DestinationServiceNamespace != "" {
		svc = l.DestinationServiceName + "." + l.DestinationServiceNamespace + ".svc.cluster.local"
	}
	const u = "unknown"
	return prometheus.Labels{
		adapter.LabelReporter:            adapter.ReporterDestination,
		"source_workload":                labelValue(l.SourceWorkload, u),
		"source_workload_namespace":      labelValue(l.SourceWorkloadNamespace, u),
		"destination_workload":           labelValue(l.DestinationWorkload, u),
		"destination_workload_namespace": labelValue(l.DestinationWorkloadNamespace, u),
		"destination_service":            labelValue(svc, u),
		"destination_service_name":       labelValue(l.DestinationServiceName, u),
		"destination_service_namespace":  labelValue(l.DestinationServiceNamespace, u),
		"destination_app":                labelValue(l.DestinationApp, u),
		"destination_version":            labelValue(l.DestinationVersion, u),
		"request_protocol":               "http",
		"response_flags":                 "-",
		"connection_security_policy":     "mutual_tls",
	}
}

type istioSeries struct {
	count   uint64
	sumMs   float64
	buckets []uint64 // non-cumulative per bucket of istioBuckets; overflow counted only in count
}

// Istio is a prometheus.Collector producing the Istio standard request
// metrics of one destination workload (one simulated pod):
// istio_requests_total (counter) and istio_request_duration_milliseconds
// (histogram with IstioDurationBucketsMs), one series per response code,
// every sample stamped with the simulated clock. It is safe for concurrent
// use.
type Istio struct {
	now      func() time.Time
	reqDesc  *prometheus.Desc
	durDesc  *prometheus.Desc
	mu       sync.Mutex
	byCode   map[int]*istioSeries
	requests uint64
	sumMs    float64
}

// NewIstio returns an Istio exporter with the given labels whose samples
// are stamped with now() (the simulated clock; nil means time.Now).
func NewIstio(l IstioLabels, now func() time.Time) *Istio {
	cl := l.constLabels()
	return &Istio{
		now: clock(now),
		reqDesc: prometheus.NewDesc(adapter.SeriesIstioRequests,
			"Total number of requests handled by the Istio proxy (simulated).",
			[]string{"response_code"}, cl),
		durDesc: prometheus.NewDesc(adapter.SeriesIstioDuration,
			"Request duration in milliseconds as seen by the Istio proxy (simulated).",
			[]string{"response_code"}, cl),
		byCode: map[int]*istioSeries{},
	}
}

// Observe records one request with latency latencyMs (milliseconds) and
// HTTP status responseCode. Negative latencies count as 0 ms; NaN
// latencies are ignored entirely. It is safe for concurrent use.
func (e *Istio) Observe(latencyMs float64, responseCode int) {
	if math.IsNaN(latencyMs) {
		return
	}
	if latencyMs < 0 {
		latencyMs = 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.byCode[responseCode]
	if s == nil {
		s = &istioSeries{buckets: make([]uint64, len(istioBuckets))}
		e.byCode[responseCode] = s
	}
	s.count++
	s.sumMs += latencyMs
	if i := sort.SearchFloat64s(istioBuckets, latencyMs); i < len(s.buckets) {
		s.buckets[i]++ // first bucket with upper bound >= latency (le is inclusive)
	}
	e.requests++
	e.sumMs += latencyMs
}

// Totals returns the number of observed requests and the sum of their
// latencies in milliseconds, over all response codes.
func (e *Istio) Totals() (requests uint64, latencyMsSum float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.requests, e.sumMs
}

// Describe implements prometheus.Collector.
func (e *Istio) Describe(ch chan<- *prometheus.Desc) {
	ch <- e.reqDesc
	ch <- e.durDesc
}

// Collect implements prometheus.Collector. Every sample carries the
// timestamp now() of the simulated clock.
func (e *Istio) Collect(ch chan<- prometheus.Metric) {
	ts := e.now()
	type snap struct {
		code    int
		count   uint64
		sumMs   float64
		buckets map[float64]uint64
	}
	e.mu.Lock()
	snaps := make([]snap, 0, len(e.byCode))
	for code, s := range e.byCode {
		cum := make(map[float64]uint64, len(istioBuckets))
		var acc uint64
		for i, ub := range istioBuckets {
			acc += s.buckets[i]
			cum[ub] = acc
		}
		snaps = append(snaps, snap{code, s.count, s.sumMs, cum})
	}
	e.mu.Unlock()
	slices.SortFunc(snaps, func(a, b snap) int { return cmp.Compare(a.code, b.code) })
	for _, s := range snaps {
		code := strconv.Itoa(s.code)
		ch <- prometheus.NewMetricWithTimestamp(ts,
			prometheus.MustNewConstMetric(e.reqDesc, prometheus.CounterValue, float64(s.count), code))
		ch <- prometheus.NewMetricWithTimestamp(ts,
			prometheus.MustNewConstHistogram(e.durDesc, s.count, s.sumMs, s.buckets, code))
	}
}

var _ prometheus.Collector = (*Istio)(nil)
