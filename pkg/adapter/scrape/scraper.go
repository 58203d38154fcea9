// Package scrape is the adapter's built-in backend (--backend=scrape): it
// selects the pods annotated prometheus.io/scrape="true" as targets
// (targets.go), scrapes their metrics endpoints every --scrape-interval
// (scraper.go, fetch.go), keeps the Istio and dcgm-exporter series of each
// exposition (parse.go) as short per-pod histories in the samples' own
// clock (ingest.go, rate.go), and answers adapter.Source from them
// (source.go).
package scrape

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/adapter/internal/selfmetrics"
)

// Scraper scrapes Prometheus-format endpoints of pods and keeps, per pod, a
// short history of the series the adapter serves. It implements
// adapter.Source.
//
// For istio_requests_total it keeps a running total per pod: at every
// scrape each series (label set, reporter="destination") contributes its
// increase since the previous scrape, a decrease counting as a counter reset
// (the new value is the increase). The request rate over the window is the
// running total's increase divided by the time between the first and last
// samples in the window. Histogram buckets are handled the same way per le.
// DCGM gauges keep only the latest scrape's values.
type Scraper struct {
	opts Options
	list TargetLister

	mu      sync.RWMutex
	targets map[types.NamespacedName]*targetState
}

var _ adapter.Source = (*Scraper)(nil)

// New returns a Scraper over the targets that list returns; call Run
// (or ScrapeOnce) to scrape.
func New(opts Options, list TargetLister) (*Scraper, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if list == nil {
		return nil, errors.New("scrape: nil TargetLister")
	}
	return &Scraper{
		opts:    opts.withDefaults(),
		list:    list,
		targets: map[types.NamespacedName]*targetState{},
	}, nil
}

// Options returns the options in effect, defaults filled in.
func (s *Scraper) Options() Options { return s.opts }

type bucketKey struct {
	series model.Fingerprint // labels without le
	le     float64
}

type gaugeKey struct {
	series string
	node   string
	gpu    int
}

// uuidKey names a DCGM gauge by its GPU's UUID.
type uuidKey struct {
	series string
	uuid   string
}

type histPoint struct {
	t      time.Time
	counts map[float64]float64 // running total per le
}

// targetState is everything kept for one target; guarded by Scraper.mu.
type targetState struct {
	Target
	scraped bool // at least one scrape finished
	up      bool // the last scrape succeeded
	lastErr string

	reqLast  map[model.Fingerprint]float64
	reqTotal float64
	req      []point

	bucketLast  map[bucketKey]float64
	bucketTotal map[float64]float64
	hist        []histPoint

	gauges map[gaugeKey]point
	// byUUID are the gauges whose series carry a UUID label, by it.
	byUUID map[uuidKey]point
}

func newTargetState(t Target) *targetState {
	return &targetState{
		Target:      t,
		reqLast:     map[model.Fingerprint]float64{},
		bucketLast:  map[bucketKey]float64{},
		bucketTotal: map[float64]float64{},
		gauges:      map[gaugeKey]point{},
		byUUID:      map[uuidKey]point{},
	}
}

// Run scrapes every target each Interval until ctx is done. A round that
// takes longer than Interval delays the next one (ticks are dropped, not
// queued).
func (s *Scraper) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("component", "scraper")
	logger.Info("Starting scrape loop", "interval", s.opts.Interval, "timeout", s.opts.Timeout,
		"rateWindow", s.opts.RateWindow, "workers", s.opts.Workers)
	ctx = klog.NewContext(ctx, logger)
	tick := time.NewTicker(s.opts.Interval)
	defer tick.Stop()
	for {
		s.ScrapeOnce(ctx)
		select {
		case <-ctx.Done():
			logger.Info("Stopped scrape loop")
			return
		case <-tick.C:
		}
	}
}

// ScrapeOnce refreshes the targets from the TargetLister and scrapes each of
// them once, at most Workers at a time; it returns when all are done or ctx
// is done.
func (s *Scraper) ScrapeOnce(ctx context.Context) {
	targets := s.syncTargets(ctx)
	if len(targets) == 0 {
		return
	}
	jobs := make(chan Target)
	var wg sync.WaitGroup
	for i := 0; i < min(s.opts.Workers, len(targets)); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range jobs {
				s.scrapeTarget(ctx, t)
			}
		}()
	}
feed:
	for _, t := range targets {
		select {
		case jobs <- t:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
}

// syncTargets replaces the target set with the lister's, keeping the state
// of targets whose pod UID and URL did not change.
func (s *Scraper) syncTargets(ctx context.Context) []Target {
	logger := klog.FromContext(ctx)
	list, err := s.list()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		logger.Error(err, "Listing scrape targets failed; keeping the previous targets")
	} else {
		next := make(map[types.NamespacedName]*targetState, len(list))
		for _, t := range list {
			if _, dup := next[t.Pod]; dup {
				continue
			}
			if old, ok := s.targets[t.Pod]; ok && old.UID == t.UID && old.URL == t.URL {
				old.Node = t.Node
				next[t.Pod] = old
				continue
			}
			logger.V(2).Info("New scrape target", "pod", t.Pod, "url", t.URL)
			next[t.Pod] = newTargetState(t)
		}
		for pod := range s.targets {
			if _, ok := next[pod]; !ok {
				logger.V(2).Info("Dropped scrape target", "pod", pod)
			}
		}
		s.targets = next
	}
	selfmetrics.ScrapeTargets.Set(float64(len(s.targets)))
	out := make([]Target, 0, len(s.targets))
	for _, st := range s.targets {
		out = append(out, st.Target)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].URL < out[j].URL })
	return out
}

// scrapeTarget scrapes one target and stores the result. A panic while
// handling the body is recovered and counted as a parse error.
func (s *Scraper) scrapeTarget(ctx context.Context, t Target) {
	logger := klog.FromContext(ctx).WithValues("pod", t.Pod, "url", t.URL)
	start := s.opts.Now()
	wallStart := time.Now()
	samples, result, err := s.fetch(ctx, t.URL, start)
	if err != nil && ctx.Err() != nil {
		return // stopping: an interrupted scrape says nothing about the target
	}
	selfmetrics.ScrapeDuration.Observe(time.Since(wallStart).Seconds())
	selfmetrics.ScrapesTotal.WithLabelValues(result).Inc()

	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.targets[t.Pod]
	if !ok || st.UID != t.UID || st.URL != t.URL {
		return // the target changed while it was scraped
	}
	wasUp, first := st.up, !st.scraped
	st.scraped = true
	if err != nil {
		st.up = false
		st.lastErr = fmt.Sprintf("%s: %v", result, err)
		if wasUp || first {
			logger.V(2).Info("Scrape failed", "result", result, "err", err)
		}
		return
	}
	st.up, st.lastErr = true, ""
	if !wasUp && !first {
		logger.V(2).Info("Scrape recovered")
	}
	s.ingest(st, samples, start)
	logger.V(5).Info("Scraped", "samples", len(samples))
}

// TargetStatus describes one scrape target, for logs and tests.
type TargetStatus struct {
	Target
	// Up is true when the last scrape succeeded.
	Up bool
	// LastError is the last scrape's error; empty when Up.
	LastError string
	// RequestSamples and HistogramSamples are the history lengths.
	RequestSamples, HistogramSamples int
}

// Targets returns the status of every current target, sorted by pod.
func (s *Scraper) Targets() []TargetStatus {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]TargetStatus, 0, len(s.targets))
	for _, st := range s.targets {
		out = append(out, TargetStatus{Target: st.Target, Up: st.up, LastError: st.lastErr,
			RequestSamples: len(st.req), HistogramSamples: len(st.hist)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pod.String() < out[j].Pod.String() })
	return out
}
