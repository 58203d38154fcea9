// Package prometheus is the adapter's Prometheus backend
// (--backend=prometheus): Source answers adapter.Source with PromQL instant
// queries (query.go) rendered from configurable templates (templates.go),
// one per namespace and series for Istio and one for all GPUs for DCGM,
// shared per API request and cached for Options.CacheTTL (cache.go).
package prometheus

import (
	"fmt"
	"sync"
	"text/template"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"golang.org/x/sync/singleflight"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/hetsev/hetsev/pkg/adapter"
)

// Source is an adapter.Source that queries a Prometheus server instead of
// scraping pods: PromQL over istio_requests_total and
// istio_request_duration_milliseconds_bucket per (namespace, pod), and over
// DCGM_FI_DEV_GPU_UTIL and DCGM_FI_DEV_FB_USED per (node, gpu); the
// provider joins GPUs to pods through spec.nodeName and hetsev.io/gpu-index.
//
// One query answers a whole namespace (or all GPUs): within one API request
// (ForRequest) each query runs at most once, and across requests an answer
// is reused for CacheTTL; concurrent requests for the same answer share one
// query. A query that fails or takes longer than Timeout yields a 503
// ServiceUnavailable API error naming Prometheus and the cause, never
// adapter.ErrNoData and never a zero. Result series without the labels the
// join needs, with an unparsable le or gpu, or with a non-finite or negative
// value are ignored and counted in
// hetsev_metrics_adapter_series_ignored_total.
type Source struct {
	opts  Options
	api   promv1.API
	tmpls map[string]*template.Template

	flight singleflight.Group
	mu     sync.Mutex
	cache  map[string]cachedResult
}

var (
	_ adapter.Source        = (*Source)(nil)
	_ adapter.RequestScoped = (*Source)(nil)
)

// New validates opts (see Options.Validate) and returns a source querying
// opts.URL. It does not contact Prometheus.
func New(opts Options) (*Source, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	// Dials are bounded by Timeout, and each query's context ends the
	// whole exchange after it, so a Prometheus that accepts but never
	// answers still ends in Timeout.
	rt, err := opts.roundTripper(opts.Timeout)
	if err != nil {
		return nil, err
	}
	client, err := promapi.NewClient(promapi.Config{Address: opts.URL, RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("--prometheus-url %q: %w", opts.URL, err)
	}
	s := &Source{opts: opts, api: promv1.NewAPI(client), tmpls: map[string]*template.Template{}, cache: map[string]cachedResult{}}
	for name, q := range map[string]string{
		queryRequestRate: opts.RequestRateQuery, queryDuration: opts.DurationQuery,
		queryGPUUtil: opts.GPUUtilQuery, queryGPUMemory: opts.GPUMemoryQuery,
	} {
		t, err := parseQuery(name, q)
		if err != nil {
			return nil, err // Validate parsed it already
		}
		s.tmpls[name] = t
	}
	return s, nil
}

// RequestRate implements adapter.Source: the request-rate query's value for pod,
// requests/s over RateWindow.
func (s *Source) RequestRate(pod types.NamespacedName) (adapter.Value, error) {
	return (&view{s: s}).RequestRate(pod)
}

// RequestDurationHistogram implements adapter.Source: the duration query's bucket
// counts for pod (increases over RateWindow with the default query), ms
// upper bounds.
func (s *Source) RequestDurationHistogram(pod types.NamespacedName) (adapter.Histogram, error) {
	return (&view{s: s}).RequestDurationHistogram(pod)
}

// GPUGauge implements adapter.Source: the GPU utilisation (percent) or memory
// (MiB) query's value for gpu, by its UUID when it has one and a series
// carries it, else by its node and index.
func (s *Source) GPUGauge(series string, gpu adapter.GPU) (adapter.Value, error) {
	return (&view{s: s}).GPUGauge(series, gpu)
}

// ForRequest implements adapter.RequestScoped: a view that runs each query at most
// once for one API request, whatever CacheTTL is, so a list of 1,000 pods
// is one query and all its values come from one evaluation.
func (s *Source) ForRequest() adapter.Source {
	return &view{s: s, memo: map[string]*queryResult{}}
}

// view answers adapter.Source calls from s, remembering answers in memo when
// it is set (one API request; not shared between goroutines).
type view struct {
	s    *Source
	memo map[string]*queryResult
}

func (v *view) result(query, namespace string) (*queryResult, error) {
	key := query + "/" + namespace
	if r, ok := v.memo[key]; ok {
		return r, nil
	}
	r, err := v.s.result(key, query, namespace)
	if err == nil && v.memo != nil {
		v.memo[key] = r
	}
	return r, err
}

func (v *view) RequestRate(pod types.NamespacedName) (adapter.Value, error) {
	r, err := v.result(queryRequestRate, pod.Namespace)
	if err != nil {
		return adapter.Value{}, err
	}
	x, ok := r.pods[pod]
	if !ok {
		return adapter.Value{}, fmt.Errorf("pod %s: no %s series in Prometheus: %w", pod, adapter.SeriesIstioRequests, adapter.ErrNoData)
	}
	return adapter.Value{Value: x, Time: r.at, Window: v.s.opts.RateWindow}, nil
}

func (v *view) RequestDurationHistogram(pod types.NamespacedName) (adapter.Histogram, error) {
	r, err := v.result(queryDuration, pod.Namespace)
	if err != nil {
		return adapter.Histogram{}, err
	}
	bs, ok := r.hists[pod]
	if !ok {
		return adapter.Histogram{}, fmt.Errorf("pod %s: no %s series in Prometheus: %w", pod, adapter.SeriesIstioDurationBucket, adapter.ErrNoData)
	}
	return adapter.Histogram{Buckets: bs, Time: r.at, Window: v.s.opts.RateWindow}, nil
}

func (v *view) GPUGauge(series string, gpu adapter.GPU) (adapter.Value, error) {
	q := queryGPUUtil
	if series == adapter.SeriesDCGMFBUsed {
		q = queryGPUMemory
	}
	r, err := v.result(q, "")
	if err != nil {
		return adapter.Value{}, err
	}
	if gpu.UUID != "" {
		if x, ok := r.uuids[gpu.UUID]; ok {
			return adapter.Value{Value: x, Time: r.at}, nil
		}
		klog.V(3).InfoS("No DCGM series in Prometheus carries the GPU's UUID; joining by its index", "series", series, "gpu", gpu.String())
	}
	x, ok := r.gpus[gpuKey{node: gpu.Node, gpu: gpu.Index}]
	if !ok {
		return adapter.Value{}, fmt.Errorf("no %s for %s in Prometheus: %w", series, gpu, adapter.ErrNoData)
	}
	return adapter.Value{Value: x, Time: r.at}, nil
}
