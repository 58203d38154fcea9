package adapter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"text/template"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"golang.org/x/sync/singleflight"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/hetsev/hetsev/pkg/adapter/internal/selfmetrics"
)

// The queries of the Prometheus backend, the values of the query label of
// hetsev_metrics_adapter_prometheus_queries_total.
const (
	queryRequestRate = "request_rate"
	queryDuration    = "request_duration"
	queryGPUUtil     = "gpu_util"
	queryGPUMemory   = "gpu_memory"
)

// PrometheusSource is a Source that queries a Prometheus server instead of
// scraping pods: PromQL over istio_requests_total and
// istio_request_duration_milliseconds_bucket per (namespace, pod), and over
// DCGM_FI_DEV_GPU_UTIL and DCGM_FI_DEV_FB_USED per (node, gpu); the
// Provider joins GPUs to pods through spec.nodeName and hetsev.io/gpu-index.
//
// One query answers a whole namespace (or all GPUs): within one API request
// (ForRequest) each query runs at most once, and across requests an answer
// is reused for CacheTTL; concurrent requests for the same answer share one
// query. A
// query that fails or takes longer than Timeout yields a 503
// ServiceUnavailable API error naming Prometheus and the cause, never
// ErrNoData and never a zero. Result series without the labels the join
// needs, with an unparsable le or gpu, or with a non-finite or negative
// value are ignored and counted in
// hetsev_metrics_adapter_series_ignored_total.
type PrometheusSource struct {
	opts  PrometheusOptions
	api   promv1.API
	tmpls map[string]*template.Template

	flight singleflight.Group
	mu     sync.Mutex
	cache  map[string]cachedResult
}

type cachedResult struct {
	at time.Time
	r  *queryResult
}

// queryResult is one query's answer, indexed for lookups.
type queryResult struct {
	at    time.Time // evaluation time
	pods  map[types.NamespacedName]float64
	hists map[types.NamespacedName][]Bucket
	gpus  map[gpuKey]float64
}

type gpuKey struct {
	node string
	gpu  int
}

var (
	_ Source        = (*PrometheusSource)(nil)
	_ RequestScoped = (*PrometheusSource)(nil)
)

// NewPrometheusSource validates opts (see PrometheusOptions.Validate) and
// returns a source querying opts.URL. It does not contact Prometheus.
func NewPrometheusSource(opts PrometheusOptions) (*PrometheusSource, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	// Bounded on every layer: dial, TLS and the whole exchange, so that a
	// Prometheus that accepts but never answers still ends in Timeout.
	rt := &http.Transport{
		Proxy:                 nil, // Prometheus is in-cluster; ignore proxy variables
		DialContext:           (&net.Dialer{Timeout: opts.Timeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   opts.Timeout,
		ResponseHeaderTimeout: opts.Timeout,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
	}
	client, err := promapi.NewClient(promapi.Config{Address: opts.URL, RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("--prometheus-url %q: %w", opts.URL, err)
	}
	s := &PrometheusSource{opts: opts, api: promv1.NewAPI(client), tmpls: map[string]*template.Template{}, cache: map[string]cachedResult{}}
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

// RequestRate implements Source: the request-rate query's value for pod,
// requests/s over RateWindow.
func (s *PrometheusSource) RequestRate(pod types.NamespacedName) (Value, error) {
	return (&promView{s: s}).RequestRate(pod)
}

// RequestDurationHistogram implements Source: the duration query's bucket
// counts for pod (increases over RateWindow with the default query), ms
// upper bounds.
func (s *PrometheusSource) RequestDurationHistogram(pod types.NamespacedName) (Histogram, error) {
	return (&promView{s: s}).RequestDurationHistogram(pod)
}

// GPUGauge implements Source: the GPU utilisation (percent) or memory
// (MiB) query's value for GPU gpu of node.
func (s *PrometheusSource) GPUGauge(series, node string, gpu int) (Value, error) {
	return (&promView{s: s}).GPUGauge(series, node, gpu)
}

// ForRequest implements RequestScoped: a view that runs each query at most
// once for one API request, whatever CacheTTL is, so a list of 1,000 pods
// is one query and all its values come from one evaluation.
func (s *PrometheusSource) ForRequest() Source {
	return &promView{s: s, memo: map[string]*queryResult{}}
}

// promView answers Source calls from s, remembering answers in memo when
// it is set (one API request; not shared between goroutines).
type promView struct {
	s    *PrometheusSource
	memo map[string]*queryResult
}

func (v *promView) result(query, namespace string) (*queryResult, error) {
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

func (v *promView) RequestRate(pod types.NamespacedName) (Value, error) {
	r, err := v.result(queryRequestRate, pod.Namespace)
	if err != nil {
		return Value{}, err
	}
	x, ok := r.pods[pod]
	if !ok {
		return Value{}, fmt.Errorf("pod %s: no %s series in Prometheus: %w", pod, SeriesIstioRequests, ErrNoData)
	}
	return Value{Value: x, Time: r.at, Window: v.s.opts.RateWindow}, nil
}

func (v *promView) RequestDurationHistogram(pod types.NamespacedName) (Histogram, error) {
	r, err := v.result(queryDuration, pod.Namespace)
	if err != nil {
		return Histogram{}, err
	}
	bs, ok := r.hists[pod]
	if !ok {
		return Histogram{}, fmt.Errorf("pod %s: no %s series in Prometheus: %w", pod, SeriesIstioDurationBucket, ErrNoData)
	}
	return Histogram{Buckets: bs, Time: r.at, Window: v.s.opts.RateWindow}, nil
}

func (v *promView) GPUGauge(series, node string, gpu int) (Value, error) {
	q := queryGPUUtil
	if series == SeriesDCGMFBUsed {
		q = queryGPUMemory
	}
	r, err := v.result(q, "")
	if err != nil {
		return Value{}, err
	}
	x, ok := r.gpus[gpuKey{node: node, gpu: gpu}]
	if !ok {
		return Value{}, fmt.Errorf("no %s for GPU %d of node %q in Prometheus: %w", series, gpu, node, ErrNoData)
	}
	return Value{Value: x, Time: r.at}, nil
}

// result returns query's answer for namespace (cache key key) from the
// cache, or runs it.
func (s *PrometheusSource) result(key, query, namespace string) (*queryResult, error) {
	now := s.opts.Now()
	s.mu.Lock()
	c, ok := s.cache[key]
	s.mu.Unlock()
	if ok && s.opts.CacheTTL > 0 && now.Sub(c.at) < s.opts.CacheTTL {
		return c.r, nil
	}
	v, err, _ := s.flight.Do(key, func() (any, error) {
		r, err := s.run(query, namespace)
		if err != nil {
			return nil, err
		}
		if s.opts.CacheTTL > 0 {
			s.store(key, r)
		}
		return r, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*queryResult), nil
}

// maxCacheEntries bounds the cache before expired entries are swept: keys
// are per namespace, and any namespace a client names makes one.
const maxCacheEntries = 256

// store caches r under key, first dropping expired entries when the cache
// has grown.
func (s *PrometheusSource) store(key string, r *queryResult) {
	now := s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.cache) >= maxCacheEntries {
		for k, c := range s.cache {
			if now.Sub(c.at) >= s.opts.CacheTTL {
				delete(s.cache, k)
			}
		}
	}
	s.cache[key] = cachedResult{at: now, r: r}
}

// run renders and runs one instant query, bounded by Timeout.
func (s *PrometheusSource) run(query, namespace string) (*queryResult, error) {
	promql, err := s.opts.render(s.tmpls[query], namespace)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("rendering the %s query: %w", query, err))
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout)
	defer cancel()
	start := time.Now()
	// No evaluation time: Prometheus evaluates at its own "now", so a skew
	// between its clock and ours cannot shift the rate window.
	val, warnings, err := s.api.Query(ctx, promql, time.Time{}, promv1.WithTimeout(s.opts.Timeout))
	selfmetrics.PrometheusQueryDuration.WithLabelValues(query).Observe(time.Since(start).Seconds())
	if err != nil {
		result := "error"
		if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			result = "timeout"
			err = fmt.Errorf("no answer within %v (--prometheus-timeout)", s.opts.Timeout)
		}
		selfmetrics.PrometheusQueriesTotal.WithLabelValues(query, result).Inc()
		klog.V(2).InfoS("Prometheus query failed", "query", query, "promql", promql, "err", err)
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("querying Prometheus at %s (%s query %q): %v", s.opts.URL, query, promql, err))
	}
	selfmetrics.PrometheusQueriesTotal.WithLabelValues(query, "success").Inc()
	if len(warnings) > 0 {
		klog.V(2).InfoS("Prometheus query warnings", "query", query, "warnings", warnings)
	}
	vec, ok := val.(model.Vector)
	if !ok {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("Prometheus at %s answered the %s query %q with a %s, want an instant vector", s.opts.URL, query, promql, val.Type()))
	}
	return s.index(query, vec), nil
}

// index turns an instant vector into lookups, ignoring (and counting)
// series the join cannot use. Series with the same key are summed (a query
// that does not aggregate over response codes still gives the pod's total),
// except GPU gauges, where the highest wins.
func (s *PrometheusSource) index(query string, vec model.Vector) *queryResult {
	r := &queryResult{at: s.opts.Now()}
	series := map[string]string{queryRequestRate: SeriesIstioRequests, queryDuration: SeriesIstioDurationBucket,
		queryGPUUtil: SeriesDCGMGPUUtil, queryGPUMemory: SeriesDCGMFBUsed}[query]
	ignore := func(reason string) { selfmetrics.Ignore(series, reason) }
	if len(vec) > 0 {
		r.at = vec[0].Timestamp.Time()
	}
	switch query {
	case queryRequestRate, queryDuration:
		r.pods = map[types.NamespacedName]float64{}
		buckets := map[types.NamespacedName]map[float64]float64{}
		for _, smp := range vec {
			ns, pod := string(smp.Metric[model.LabelName(s.opts.NamespaceLabel)]), string(smp.Metric[model.LabelName(s.opts.PodLabel)])
			v := float64(smp.Value)
			switch {
			case ns == "" || pod == "":
				ignore(selfmetrics.IgnoredNoPod)
				continue
			case math.IsNaN(v) || math.IsInf(v, 0) || v < 0:
				ignore(selfmetrics.IgnoredBadValue)
				continue
			}
			key := types.NamespacedName{Namespace: ns, Name: pod}
			if query == queryRequestRate {
				r.pods[key] += v
				continue
			}
			le, err := strconv.ParseFloat(string(smp.Metric[model.BucketLabel]), 64)
			if err != nil || math.IsNaN(le) {
				ignore(selfmetrics.IgnoredBadLe)
				continue
			}
			if buckets[key] == nil {
				buckets[key] = map[float64]float64{}
			}
			buckets[key][le] += v
		}
		if query == queryDuration {
			r.hists = make(map[types.NamespacedName][]Bucket, len(buckets))
			for key, m := range buckets {
				bs := make([]Bucket, 0, len(m))
				for le, c := range m {
					bs = append(bs, Bucket{UpperBound: le, Count: c})
				}
				sort.Slice(bs, func(i, j int) bool { return bs[i].UpperBound < bs[j].UpperBound })
				r.hists[key] = bs
			}
		}
	default:
		r.gpus = map[gpuKey]float64{}
		for _, smp := range vec {
			node := string(smp.Metric[model.LabelName(s.opts.NodeLabel)])
			gpu, err := strconv.Atoi(string(smp.Metric[model.LabelName(s.opts.GPULabel)]))
			v := float64(smp.Value)
			switch {
			case node == "":
				ignore(selfmetrics.IgnoredNoNode)
				continue
			case err != nil || gpu < 0:
				ignore(selfmetrics.IgnoredBadGPU)
				continue
			case math.IsNaN(v) || math.IsInf(v, 0) || v < 0:
				ignore(selfmetrics.IgnoredBadValue)
				continue
			}
			key := gpuKey{node: node, gpu: gpu}
			if old, ok := r.gpus[key]; !ok || v > old {
				r.gpus[key] = v
			}
		}
	}
	return r
}
