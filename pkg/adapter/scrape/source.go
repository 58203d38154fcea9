package scrape

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/hetsev/hetsev/pkg/adapter"
)

// liveTarget returns the state of pod if its last scrape succeeded. Caller
// holds s.mu.
func (s *Scraper) liveTarget(pod types.NamespacedName) (*targetState, error) {
	st, ok := s.targets[pod]
	switch {
	case !ok:
		return nil, fmt.Errorf("pod %s is not a scrape target: %w", pod, adapter.ErrNoData)
	case !st.scraped:
		return nil, fmt.Errorf("pod %s not scraped yet: %w", pod, adapter.ErrNoData)
	case !st.up:
		return nil, fmt.Errorf("pod %s: last scrape failed (%s): %w", pod, st.lastErr, adapter.ErrNoData)
	}
	return st, nil
}

// RequestRate implements adapter.Source: the pod's istio_requests_total rate in
// requests per second over the rate window of the samples' clock.
func (s *Scraper) RequestRate(pod types.NamespacedName) (adapter.Value, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st, err := s.liveTarget(pod)
	if err != nil {
		return adapter.Value{}, err
	}
	r, ok := windowRate(st.req)
	if !ok {
		return adapter.Value{}, fmt.Errorf("pod %s: %d samples of %s in the window, need two: %w",
			pod, len(st.req), adapter.SeriesIstioRequests, adapter.ErrNoData)
	}
	return adapter.Value{Value: r, Time: st.req[len(st.req)-1].t, Window: s.opts.RateWindow}, nil
}

// RequestDurationHistogram implements adapter.Source: the increases of the pod's
// istio_request_duration_milliseconds buckets (ms) over the rate window.
func (s *Scraper) RequestDurationHistogram(pod types.NamespacedName) (adapter.Histogram, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st, err := s.liveTarget(pod)
	if err != nil {
		return adapter.Histogram{}, err
	}
	n := len(st.hist)
	if n < 2 || !st.hist[n-1].t.After(st.hist[0].t) {
		return adapter.Histogram{}, fmt.Errorf("pod %s: %d samples of %s in the window, need two: %w",
			pod, n, adapter.SeriesIstioDurationBucket, adapter.ErrNoData)
	}
	first, last := st.hist[0].counts, st.hist[n-1].counts
	bs := make([]adapter.Bucket, 0, len(last))
	for le, v := range last {
		inc := v - first[le] // a bucket first seen inside the window started at 0
		if inc < 0 {
			inc = 0
		}
		bs = append(bs, adapter.Bucket{UpperBound: le, Count: inc})
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].UpperBound < bs[j].UpperBound })
	return adapter.Histogram{Buckets: bs, Time: st.hist[n-1].t, Window: s.opts.RateWindow}, nil
}

// GPUGauge implements adapter.Source: the latest value of a DCGM gauge for
// gpu, from the most recent successful scrape of any target exposing it
// (normally its node's dcgm-exporter pod): by the series' UUID label when
// gpu has a UUID and a series carries it, else by its node and index.
// When several targets expose the GPU, the newest scrape wins.
func (s *Scraper) GPUGauge(series string, gpu adapter.GPU) (adapter.Value, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var (
		best  point
		found bool
	)
	newest := func(p point, ok bool) {
		if ok && (!found || p.t.After(best.t)) {
			best, found = p, true
		}
	}
	if gpu.UUID != "" {
		for _, st := range s.targets {
			if st.up {
				p, ok := st.byUUID[uuidKey{series: series, uuid: gpu.UUID}]
				newest(p, ok)
			}
		}
		if found {
			return adapter.Value{Value: best.v, Time: best.t}, nil
		}
		klog.V(3).InfoS("No DCGM series carries the GPU's UUID; joining by its index", "series", series, "gpu", gpu.String())
	}
	key := gaugeKey{series: series, node: gpu.Node, gpu: gpu.Index}
	for _, st := range s.targets {
		if st.up {
			p, ok := st.gauges[key]
			newest(p, ok)
		}
	}
	if !found {
		return adapter.Value{}, fmt.Errorf("no %s for %s from a healthy target: %w", series, gpu, adapter.ErrNoData)
	}
	return adapter.Value{Value: best.v, Time: best.t}, nil
}
