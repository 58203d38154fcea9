package adapter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/hetsev/hetsev/pkg/adapter/internal/selfmetrics"
)

// Defaults of ScraperOptions.
const (
	DefaultScrapeInterval = time.Second
	DefaultScrapeTimeout  = 500 * time.Millisecond
	DefaultScrapeWorkers  = 16
	DefaultMaxBodyBytes   = 16 << 20
	DefaultMaxSamples     = 4096
)

// acceptHeader asks for the Prometheus text format (0.0.4), as Prometheus
// 2.x does when it does not negotiate protobuf.
const acceptHeader = "text/plain;version=0.0.4;q=1,*/*;q=0.1"

// ScraperOptions configures a Scraper. Zero fields take the defaults.
type ScraperOptions struct {
	// Interval between scrape rounds, wall clock (--scrape-interval).
	Interval time.Duration
	// Timeout of one scrape, wall clock (--scrape-timeout).
	Timeout time.Duration
	// RateWindow is the range, in the samples' clock, over which rates and
	// histogram increases are computed (--rate-window).
	RateWindow time.Duration
	// Workers bounds the number of concurrent scrapes (--scrape-workers).
	Workers int
	// MaxBodyBytes bounds the size of one scrape's body.
	MaxBodyBytes int64
	// MaxSamples bounds each per-pod history, whatever the window holds.
	MaxSamples int
	// Client performs the scrapes. Nil: a client that ignores proxy
	// environment variables and never follows redirects.
	Client *http.Client
	// Now is the wall clock, used as the sample time of samples without a
	// timestamp. Nil: time.Now.
	Now func() time.Time
}

// DefaultScraperOptions returns the defaults: 1s interval, 500ms timeout,
// 60s rate window, 16 workers.
func DefaultScraperOptions() ScraperOptions {
	return ScraperOptions{
		Interval:     DefaultScrapeInterval,
		Timeout:      DefaultScrapeTimeout,
		RateWindow:   DefaultRateWindow,
		Workers:      DefaultScrapeWorkers,
		MaxBodyBytes: DefaultMaxBodyBytes,
		MaxSamples:   DefaultMaxSamples,
	}
}

// Validate reports options that cannot work (negative durations or sizes).
// Zero values are allowed and mean the default.
func (o ScraperOptions) Validate() error {
	var errs []error
	if o.Interval < 0 {
		errs = append(errs, fmt.Errorf("scrape interval %v is negative", o.Interval))
	}
	if o.Timeout < 0 {
		errs = append(errs, fmt.Errorf("scrape timeout %v is negative", o.Timeout))
	}
	if o.RateWindow < 0 {
		errs = append(errs, fmt.Errorf("rate window %v is negative", o.RateWindow))
	}
	if o.Workers < 0 {
		errs = append(errs, fmt.Errorf("scrape workers %d is negative", o.Workers))
	}
	if o.MaxBodyBytes < 0 {
		errs = append(errs, fmt.Errorf("max body bytes %d is negative", o.MaxBodyBytes))
	}
	if o.MaxSamples < 0 {
		errs = append(errs, fmt.Errorf("max samples %d is negative", o.MaxSamples))
	}
	return errors.Join(errs...)
}

func (o ScraperOptions) withDefaults() ScraperOptions {
	d := DefaultScraperOptions()
	if o.Interval == 0 {
		o.Interval = d.Interval
	}
	if o.Timeout == 0 {
		o.Timeout = d.Timeout
	}
	if o.RateWindow == 0 {
		o.RateWindow = d.RateWindow
	}
	if o.Workers == 0 {
		o.Workers = d.Workers
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = d.MaxBodyBytes
	}
	if o.MaxSamples < 2 {
		o.MaxSamples = d.MaxSamples
	}
	if o.Client == nil {
		o.Client = newHTTPClient(o.Workers)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

func newHTTPClient(workers int) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:               nil, // pod IPs are reached directly, never through a proxy
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        4 * workers,
			MaxIdleConnsPerHost: 2,
			IdleConnTimeout:     90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Scraper scrapes Prometheus-format endpoints of pods and keeps, per pod, a
// short history of the series the adapter serves. It implements Source.
//
// For istio_requests_total it keeps a running total per pod: at every
// scrape each series (label set, reporter="destination") contributes its
// increase since the previous scrape, a decrease counting as a counter reset
// (the new value is the increase). The request rate over the window is the
// running total's increase divided by the time between the first and last
// samples in the window. Histogram buckets are handled the same way per le.
// DCGM gauges keep only the latest scrape's values.
type Scraper struct {
	opts ScraperOptions
	list TargetLister

	mu      sync.RWMutex
	targets map[types.NamespacedName]*targetState
}

var _ Source = (*Scraper)(nil)

// NewScraper returns a Scraper over the targets that list returns; call Run
// (or ScrapeOnce) to scrape.
func NewScraper(opts ScraperOptions, list TargetLister) (*Scraper, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if list == nil {
		return nil, errors.New("adapter: nil TargetLister")
	}
	return &Scraper{
		opts:    opts.withDefaults(),
		list:    list,
		targets: map[types.NamespacedName]*targetState{},
	}, nil
}

// Options returns the options in effect, defaults filled in.
func (s *Scraper) Options() ScraperOptions { return s.opts }

type bucketKey struct {
	series model.Fingerprint // labels without le
	le     float64
}

type gaugeKey struct {
	series string
	node   string
	gpu    int
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
}

func newTargetState(t Target) *targetState {
	return &targetState{
		Target:      t,
		reqLast:     map[model.Fingerprint]float64{},
		bucketLast:  map[bucketKey]float64{},
		bucketTotal: map[float64]float64{},
		gauges:      map[gaugeKey]point{},
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
	s.ingest(st, samples)
	logger.V(5).Info("Scraped", "samples", len(samples))
}

// fetch GETs url and decodes it into samples; samples without a timestamp
// get start. It returns the scrape result label and an error for anything
// but success.
func (s *Scraper) fetch(ctx context.Context, url string, start time.Time) (samples model.Vector, result string, err error) {
	defer func() {
		if r := recover(); r != nil {
			samples, result, err = nil, selfmetrics.ScrapeParseError, fmt.Errorf("panic while parsing: %v", r)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, selfmetrics.ScrapeError, err
	}
	req.Header.Set("Accept", acceptHeader)
	req.Header.Set("User-Agent", "hetsev-metrics-adapter")
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", strconv.FormatFloat(s.opts.Timeout.Seconds(), 'f', -1, 64))
	resp, err := s.opts.Client.Do(req)
	if err != nil {
		return nil, transportResult(ctx, err), err
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		_ = resp.Body.Close()
	}()
	if resp.StatusCode != http.StatusOK {
		return nil, selfmetrics.ScrapeHTTPError, fmt.Errorf("HTTP status %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, s.opts.MaxBodyBytes+1))
	if err != nil {
		return nil, transportResult(ctx, err), err
	}
	if int64(len(body)) > s.opts.MaxBodyBytes {
		return nil, selfmetrics.ScrapeTooLarge, fmt.Errorf("body larger than %d bytes", s.opts.MaxBodyBytes)
	}
	samples, err = decodeSamples(body, expfmt.ResponseFormat(resp.Header), start)
	if err != nil {
		return nil, selfmetrics.ScrapeParseError, err
	}
	return samples, selfmetrics.ScrapeSuccess, nil
}

// decodeSamples parses a Prometheus exposition (text, or delimited protobuf
// when format says so) and returns the samples of the series the adapter
// reads; samples without a timestamp get start.
func decodeSamples(body []byte, format expfmt.Format, start time.Time) (model.Vector, error) {
	dec := &expfmt.SampleDecoder{
		Dec:  expfmt.NewDecoder(bytes.NewReader(body), format),
		Opts: &expfmt.DecodeOptions{Timestamp: model.TimeFromUnixNano(start.UnixNano())},
	}
	var samples model.Vector
	for {
		var v model.Vector
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return samples, nil
		}
		if err != nil {
			return nil, err
		}
		for _, smp := range v {
			if smp != nil && interesting(string(smp.Metric[model.MetricNameLabel])) {
				samples = append(samples, smp)
			}
		}
	}
}

func transportResult(ctx context.Context, err error) string {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil || (errors.As(err, &ne) && ne.Timeout()) {
		return selfmetrics.ScrapeTimeout
	}
	return selfmetrics.ScrapeError
}

func interesting(name string) bool {
	switch name {
	case SeriesIstioRequests, SeriesIstioDurationBucket, SeriesDCGMGPUUtil, SeriesDCGMFBUsed:
		return true
	}
	return false
}

// destinationReported filters Istio series to reporter="destination",
// counting series without a reporter label as ignored.
func destinationReported(m model.Metric, series string) bool {
	r, ok := m[LabelReporter]
	if !ok {
		selfmetrics.Ignore(series, selfmetrics.IgnoredNoReporter)
		return false
	}
	return r == ReporterDestination
}

// ingest stores one successful scrape's samples in st. Caller holds s.mu.
func (s *Scraper) ingest(st *targetState, samples model.Vector) {
	var (
		reqNow   = map[model.Fingerprint]float64{}
		reqInc   float64
		reqT     time.Time
		bktNow   = map[bucketKey]float64{}
		bktInc   = map[float64]float64{}
		bktT     time.Time
		gaugeNow = map[gaugeKey]point{}
	)
	for _, smp := range samples {
		name := string(smp.Metric[model.MetricNameLabel])
		v := float64(smp.Value)
		ts := smp.Timestamp.Time()
		switch name {
		case SeriesIstioRequests:
			if !destinationReported(smp.Metric, name) {
				continue
			}
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				selfmetrics.Ignore(name, selfmetrics.IgnoredBadValue)
				continue
			}
			fp := smp.Metric.Fingerprint()
			if _, dup := reqNow[fp]; dup {
				selfmetrics.Ignore(name, selfmetrics.IgnoredDuplicate)
				continue
			}
			reqNow[fp] = v
			if prev, ok := st.reqLast[fp]; ok {
				reqInc += counterIncrease(prev, v)
			}
			if ts.After(reqT) {
				reqT = ts
			}
		case SeriesIstioDurationBucket:
			if !destinationReported(smp.Metric, name) {
				continue
			}
			le, err := strconv.ParseFloat(string(smp.Metric[model.BucketLabel]), 64)
			if err != nil || math.IsNaN(le) {
				selfmetrics.Ignore(name, selfmetrics.IgnoredBadLe)
				continue
			}
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				selfmetrics.Ignore(name, selfmetrics.IgnoredBadValue)
				continue
			}
			key := bucketKey{series: withoutLe(smp.Metric).Fingerprint(), le: le}
			if _, dup := bktNow[key]; dup {
				selfmetrics.Ignore(name, selfmetrics.IgnoredDuplicate)
				continue
			}
			bktNow[key] = v
			inc := 0.0
			if prev, ok := st.bucketLast[key]; ok {
				inc = counterIncrease(prev, v)
			}
			bktInc[le] += inc
			if ts.After(bktT) {
				bktT = ts
			}
		case SeriesDCGMGPUUtil, SeriesDCGMFBUsed:
			gpu, err := strconv.Atoi(string(smp.Metric[LabelDCGMGPU]))
			if err != nil || gpu < 0 {
				selfmetrics.Ignore(name, selfmetrics.IgnoredBadGPU)
				continue
			}
			node := string(smp.Metric[LabelDCGMHostname])
			if node == "" {
				node = st.Node
			}
			if node == "" {
				selfmetrics.Ignore(name, selfmetrics.IgnoredNoNode)
				continue
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				selfmetrics.Ignore(name, selfmetrics.IgnoredBadValue)
				continue
			}
			key := gaugeKey{series: name, node: node, gpu: gpu}
			if old, dup := gaugeNow[key]; dup && !ts.After(old.t) {
				continue
			}
			gaugeNow[key] = point{t: ts, v: v}
		}
	}

	// Requests: running total, one point per scrape.
	st.reqLast = reqNow
	if len(reqNow) == 0 {
		st.req = nil // series gone (e.g. restarted, idle): no data rather than a stale rate
	} else {
		st.reqTotal += reqInc
		st.req = s.appendPoint(st.req, point{t: reqT, v: st.reqTotal})
	}

	// Histogram: running total per le, one snapshot per scrape.
	st.bucketLast = bktNow
	if len(bktNow) == 0 {
		st.hist = nil
		st.bucketTotal = map[float64]float64{}
	} else {
		for le, inc := range bktInc {
			st.bucketTotal[le] += inc
		}
		snap := make(map[float64]float64, len(st.bucketTotal))
		for le, v := range st.bucketTotal {
			snap[le] = v
		}
		st.hist = s.appendHist(st.hist, histPoint{t: bktT, counts: snap})
	}

	st.gauges = gaugeNow
}

// withoutLe returns m without its le label.
func withoutLe(m model.Metric) model.Metric {
	out := make(model.Metric, len(m))
	for k, v := range m {
		if k != model.BucketLabel {
			out[k] = v
		}
	}
	return out
}

// appendPoint appends p to a time-ordered history and trims it to the rate
// window ending at p (and to MaxSamples). A p at the last point's time
// replaces its value (the exporter's clock did not advance); a p older than
// the last point (the exporter's clock went back, e.g. a restarted
// simulation) restarts the history.
func (s *Scraper) appendPoint(pts []point, p point) []point {
	if n := len(pts); n > 0 {
		last := pts[n-1].t
		switch {
		case p.t.Equal(last):
			pts[n-1].v = p.v // same sample time: keep the newest total
			return pts
		case p.t.Before(last):
			pts = pts[:0]
		}
	}
	pts = append(pts, p)
	cut := p.t.Add(-s.opts.RateWindow)
	i := sort.Search(len(pts), func(i int) bool { return !pts[i].t.Before(cut) })
	if over := len(pts) - s.opts.MaxSamples; over > i {
		i = over
	}
	if i > 0 {
		pts = append(pts[:0], pts[i:]...)
	}
	return pts
}

// appendHist is appendPoint for histogram snapshots.
func (s *Scraper) appendHist(hs []histPoint, h histPoint) []histPoint {
	if n := len(hs); n > 0 {
		last := hs[n-1].t
		switch {
		case h.t.Equal(last):
			hs[n-1].counts = h.counts
			return hs
		case h.t.Before(last):
			hs = hs[:0]
		}
	}
	hs = append(hs, h)
	cut := h.t.Add(-s.opts.RateWindow)
	i := sort.Search(len(hs), func(i int) bool { return !hs[i].t.Before(cut) })
	if over := len(hs) - s.opts.MaxSamples; over > i {
		i = over
	}
	if i > 0 {
		n := copy(hs, hs[i:])
		clear(hs[n:])
		hs = hs[:n]
	}
	return hs
}

// liveTarget returns the state of pod if its last scrape succeeded. Caller
// holds s.mu.
func (s *Scraper) liveTarget(pod types.NamespacedName) (*targetState, error) {
	st, ok := s.targets[pod]
	switch {
	case !ok:
		return nil, fmt.Errorf("pod %s is not a scrape target: %w", pod, ErrNoData)
	case !st.scraped:
		return nil, fmt.Errorf("pod %s not scraped yet: %w", pod, ErrNoData)
	case !st.up:
		return nil, fmt.Errorf("pod %s: last scrape failed (%s): %w", pod, st.lastErr, ErrNoData)
	}
	return st, nil
}

// RequestRate implements Source: the pod's istio_requests_total rate in
// requests per second over the rate window of the samples' clock.
func (s *Scraper) RequestRate(pod types.NamespacedName) (Value, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st, err := s.liveTarget(pod)
	if err != nil {
		return Value{}, err
	}
	r, ok := windowRate(st.req)
	if !ok {
		return Value{}, fmt.Errorf("pod %s: %d samples of %s in the window, need two: %w",
			pod, len(st.req), SeriesIstioRequests, ErrNoData)
	}
	return Value{Value: r, Time: st.req[len(st.req)-1].t, Window: s.opts.RateWindow}, nil
}

// RequestDurationHistogram implements Source: the increases of the pod's
// istio_request_duration_milliseconds buckets (ms) over the rate window.
func (s *Scraper) RequestDurationHistogram(pod types.NamespacedName) (Histogram, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st, err := s.liveTarget(pod)
	if err != nil {
		return Histogram{}, err
	}
	n := len(st.hist)
	if n < 2 || !st.hist[n-1].t.After(st.hist[0].t) {
		return Histogram{}, fmt.Errorf("pod %s: %d samples of %s in the window, need two: %w",
			pod, n, SeriesIstioDurationBucket, ErrNoData)
	}
	first, last := st.hist[0].counts, st.hist[n-1].counts
	bs := make([]Bucket, 0, len(last))
	for le, v := range last {
		inc := v - first[le] // a bucket first seen inside the window started at 0
		if inc < 0 {
			inc = 0
		}
		bs = append(bs, Bucket{UpperBound: le, Count: inc})
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].UpperBound < bs[j].UpperBound })
	return Histogram{Buckets: bs, Time: st.hist[n-1].t, Window: s.opts.RateWindow}, nil
}

// GPUGauge implements Source: the latest value of a DCGM gauge for GPU gpu
// of node, from the most recent successful scrape of any target exposing it
// (normally the node's dcgm-exporter pod). When several targets expose the
// same GPU, the newest sample wins.
func (s *Scraper) GPUGauge(series, node string, gpu int) (Value, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	key := gaugeKey{series: series, node: node, gpu: gpu}
	var (
		best  point
		found bool
	)
	for _, st := range s.targets {
		if !st.up {
			continue
		}
		if p, ok := st.gauges[key]; ok && (!found || p.t.After(best.t)) {
			best, found = p, true
		}
	}
	if !found {
		return Value{}, fmt.Errorf("no %s for GPU %d of node %q from a healthy target: %w", series, gpu, node, ErrNoData)
	}
	return Value{Value: best.v, Time: best.t}, nil
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
