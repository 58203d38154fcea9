package adapter

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// ErrNoData is returned (possibly wrapped) by a Source when it has no data
// for the object asked about: never scraped, last scrape failed, no matching
// series, or fewer than two samples in the window. provider.Provider turns it
// into a NotFound error, never into a zero.
var ErrNoData = errors.New("no data")

// DefaultRateWindow is the default window over which both backends compute
// request rates and latency percentiles (--rate-window).
const DefaultRateWindow = 60 * time.Second

// Value is one computed value of a Source.
type Value struct {
	// Value in the unit of the series or metric asked for.
	Value float64
	// Time is the time of the newest sample used, in the samples' clock.
	Time time.Time
	// Window is the length of the range the value was computed over (the
	// rate window); zero for an instantaneous gauge reading.
	Window time.Duration
}

// Bucket is one bucket of a histogram.
type Bucket struct {
	// UpperBound is the bucket's inclusive upper bound (Prometheus le); the
	// last bucket of a Histogram has +Inf.
	UpperBound float64
	// Count is cumulative: observations <= UpperBound.
	Count float64
}

// Histogram holds the increases of a cumulative histogram's buckets over a
// window.
type Histogram struct {
	// Buckets sorted by UpperBound, cumulative counts.
	Buckets []Bucket
	// Time is the time of the newest sample used, in the samples' clock.
	Time time.Time
	// Window is the length of the range the increases were taken over.
	Window time.Duration
}

// Source is what provider.Provider reads: windowed per-pod Istio data and
// per-GPU DCGM readings. scrape.Scraper implements it by scraping pods
// directly, prometheus.Source by querying Prometheus. All methods are safe
// for concurrent use and return an error wrapping ErrNoData when there is
// nothing to report.
type Source interface {
	// RequestRate returns the pod's rate of istio_requests_total
	// (reporter="destination", summed over label sets) in requests per
	// second over the rate window.
	RequestRate(pod types.NamespacedName) (Value, error)
	// RequestDurationHistogram returns the increases over the rate window of
	// the pod's istio_request_duration_milliseconds buckets (upper bounds in
	// ms), summed over label sets by le.
	RequestDurationHistogram(pod types.NamespacedName) (Histogram, error)
	// GPUGauge returns the latest value of the DCGM gauge series
	// (SeriesDCGMGPUUtil or SeriesDCGMFBUsed) for gpu: by its UUID when it
	// has one and a series carries it, else by its index on its node.
	GPUGauge(series string, gpu GPU) (Value, error)
}

// GPU names one GPU for the DCGM join: its node and index (dcgm-exporter's
// Hostname and gpu labels) and, when known (GPU mode dra, from the
// device's uuid attribute), its UUID (the UUID label), which names it
// whatever order its node lists its GPUs in.
type GPU struct {
	Node  string
	Index int
	UUID  string
}

func (g GPU) String() string {
	if g.UUID != "" {
		return fmt.Sprintf("GPU %d (%s) of node %q", g.Index, g.UUID, g.Node)
	}
	return fmt.Sprintf("GPU %d of node %q", g.Index, g.Node)
}

// RequestScoped is a Source that can bind itself to one API request: the
// provider asks for a view at the start of each request and reads every
// object of the request through it, so that a backend answering a whole
// namespace per query (prometheus.Source) queries once per request.
type RequestScoped interface {
	// ForRequest returns the Source to use for one request; it is used by
	// one goroutine and dropped when the request ends.
	ForRequest() Source
}
