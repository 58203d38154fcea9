package prometheus

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/hetsev/hetsev/pkg/adapter"
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

// queryResult is one query's answer, indexed for lookups.
type queryResult struct {
	at    time.Time // evaluation time
	pods  map[types.NamespacedName]float64
	hists map[types.NamespacedName][]adapter.Bucket
	gpus  map[gpuKey]float64
	uuids map[string]float64 // the GPU series that carry a UUID label, by it
}

type gpuKey struct {
	node string
	gpu  int
}

// run renders and runs one instant query, bounded by Timeout.
func (s *Source) run(query, namespace string) (*queryResult, error) {
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
func (s *Source) index(query string, vec model.Vector) *queryResult {
	r := &queryResult{at: s.opts.Now()}
	series := map[string]string{queryRequestRate: adapter.SeriesIstioRequests, queryDuration: adapter.SeriesIstioDurationBucket,
		queryGPUUtil: adapter.SeriesDCGMGPUUtil, queryGPUMemory: adapter.SeriesDCGMFBUsed}[query]
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
			r.hists = make(map[types.NamespacedName][]adapter.Bucket, len(buckets))
			for key, m := range buckets {
				bs := make([]adapter.Bucket, 0, len(m))
				for le, c := range m {
					bs = append(bs, adapter.Bucket{UpperBound: le, Count: c})
				}
				sort.Slice(bs, func(i, j int) bool { return bs[i].UpperBound < bs[j].UpperBound })
				r.hists[key] = bs
			}
		}
	default:
		r.gpus, r.uuids = map[gpuKey]float64{}, map[string]float64{}
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
			if uuid := string(smp.Metric[adapter.LabelDCGMUUID]); uuid != "" {
				if old, ok := r.uuids[uuid]; !ok || v > old {
					r.uuids[uuid] = v
				}
			}
		}
	}
	return r
}
