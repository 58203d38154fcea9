package scrape

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/adapter/internal/adaptertest"
	"github.com/hetsev/hetsev/pkg/adapter/internal/selfmetrics"
)

func podTarget(ns, name string) Target {
	return Target{Pod: adaptertest.NN(ns, name), UID: types.UID("uid-" + name), Node: "node-1", URL: "http://127.0.0.1:1/" + name}
}

// Rates use the samples' own timestamps (a simulated clock in 2001), not the
// wall-clock scrape time, and a counter reset counts the new value as the
// increase, as Prometheus' rate() does.
func TestRequestRateUsesSampleTimestampsAndHandlesReset(t *testing.T) {
	selfmetrics.Register()
	pod := adaptertest.NN("ml", "resnet-0")
	s := newTestScraper(t, Options{RateWindow: time.Minute}, podTarget("ml", "resnet-0"))
	wall := time.Now()

	// Per response code, sampled every 2 simulated seconds, while the test
	// feeds them 1 ms apart in wall time.
	//  t(s):  0    2    4    6 (reset)  8
	//  200:   100  120  140  6          16    increases 20+20+6+10 = 56
	//  503:   10   12   14   1          2     increases 2+2+1+1    = 6
	//  source reporter series are ignored whatever their value.
	vals200 := []float64{100, 120, 140, 6, 16}
	vals503 := []float64{10, 12, 14, 1, 2}
	for i := range vals200 {
		ts := adaptertest.SimEpoch.Add(time.Duration(2*i) * time.Second)
		text := istioRequests(ts, map[string]float64{"200": vals200[i], "503": vals503[i]}) +
			fmt.Sprintf("istio_requests_total{reporter=\"source\",response_code=\"200\"} %d %d\n", 1000000*(i+1), ms(ts))
		feed(t, s, pod, text, wall.Add(time.Duration(i)*time.Millisecond))
	}
	v, err := s.RequestRate(pod)
	if err != nil {
		t.Fatal(err)
	}
	want := (56.0 + 6.0) / 8.0
	if math.Abs(v.Value-want) > 1e-9 {
		t.Errorf("rate = %v, want %v", v.Value, want)
	}
	if !v.Time.Equal(adaptertest.SimEpoch.Add(8*time.Second)) || v.Window != time.Minute {
		t.Errorf("time %v window %v, want %v and 1m", v.Time, v.Window, adaptertest.SimEpoch.Add(8*time.Second))
	}
}

// Without exposition timestamps, the scrape time is the sample time.
func TestRequestRateWithoutTimestampsUsesScrapeTime(t *testing.T) {
	pod := adaptertest.NN("ml", "p")
	s := newTestScraper(t, Options{}, podTarget("ml", "p"))
	wall := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, v := range []float64{0, 50, 100} {
		feed(t, s, pod, istioRequests(time.Time{}, map[string]float64{"200": v}), wall.Add(time.Duration(i)*500*time.Millisecond))
	}
	v, err := s.RequestRate(pod)
	if err != nil || v.Value != 100 {
		t.Fatalf("rate = %v, %v; want 100/s", v.Value, err)
	}
	if !v.Time.Equal(wall.Add(time.Second)) {
		t.Errorf("time = %v", v.Time)
	}
}

// Only samples inside the rate window (in the samples' clock) count.
func TestRequestRateWindow(t *testing.T) {
	pod := adaptertest.NN("ml", "p")
	s := newTestScraper(t, Options{RateWindow: 10 * time.Second}, podTarget("ml", "p"))
	// 100/s for 20 s, then 10/s for 10 s; samples every second.
	total := 0.0
	for sec := 0; sec <= 30; sec++ {
		if sec > 0 && sec <= 20 {
			total += 100
		} else if sec > 20 {
			total += 10
		}
		feed(t, s, pod, istioRequests(adaptertest.SimEpoch.Add(time.Duration(sec)*time.Second), map[string]float64{"200": total}), time.Now())
	}
	v, err := s.RequestRate(pod)
	if err != nil || math.Abs(v.Value-10) > 1e-9 {
		t.Fatalf("rate = %v, %v; want 10/s over the last 10 s", v.Value, err)
	}
	if got := s.Targets()[0].RequestSamples; got != 11 {
		t.Errorf("history holds %d samples, want 11 (window 10 s, 1 s apart)", got)
	}
}

func TestRequestRateNoData(t *testing.T) {
	a, b, c := adaptertest.NN("ml", "a"), adaptertest.NN("ml", "b"), adaptertest.NN("ml", "c")
	s := newTestScraper(t, Options{}, podTarget("ml", "a"), podTarget("ml", "b"), podTarget("ml", "c"))

	// Never scraped, and not a target at all.
	if _, err := s.RequestRate(a); !adaptertest.IsNoData(err) {
		t.Errorf("never scraped: err = %v, want adapter.ErrNoData", err)
	}
	if _, err := s.RequestRate(adaptertest.NN("ml", "unknown")); !adaptertest.IsNoData(err) {
		t.Errorf("unknown pod: err = %v, want adapter.ErrNoData", err)
	}
	// One sample only.
	feed(t, s, a, istioRequests(adaptertest.SimEpoch, map[string]float64{"200": 5}), time.Now())
	if _, err := s.RequestRate(a); !adaptertest.IsNoData(err) {
		t.Errorf("one sample: err = %v, want adapter.ErrNoData", err)
	}
	// Two samples at the same timestamp (the exporter's clock did not move).
	feed(t, s, a, istioRequests(adaptertest.SimEpoch, map[string]float64{"200": 5}), time.Now())
	if _, err := s.RequestRate(a); !adaptertest.IsNoData(err) {
		t.Errorf("same timestamp: err = %v, want adapter.ErrNoData", err)
	}
	// Scraped fine but no Istio series (e.g. the dcgm-exporter pod).
	feed(t, s, b, "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"n\"} 5\n", time.Now())
	feed(t, s, b, "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"n\"} 5\n", time.Now().Add(time.Second))
	if _, err := s.RequestRate(b); !adaptertest.IsNoData(err) {
		t.Errorf("no series: err = %v, want adapter.ErrNoData", err)
	}
	// Good data, then the last scrape failed.
	feed(t, s, c, istioRequests(adaptertest.SimEpoch, map[string]float64{"200": 5}), time.Now())
	feed(t, s, c, istioRequests(adaptertest.SimEpoch.Add(time.Second), map[string]float64{"200": 15}), time.Now())
	if v, err := s.RequestRate(c); err != nil || v.Value != 10 {
		t.Fatalf("before failure: %v, %v", v, err)
	}
	failScrape(s, c)
	if _, err := s.RequestRate(c); !adaptertest.IsNoData(err) {
		t.Errorf("failing scrape: err = %v, want adapter.ErrNoData", err)
	}
	if _, err := s.RequestDurationHistogram(c); !adaptertest.IsNoData(err) {
		t.Errorf("failing scrape, histogram: err = %v, want adapter.ErrNoData", err)
	}
}

// A clock that goes back (a restarted simulation) starts a new history
// instead of producing a negative or huge rate.
func TestRequestRateClockGoesBack(t *testing.T) {
	pod := adaptertest.NN("ml", "p")
	s := newTestScraper(t, Options{}, podTarget("ml", "p"))
	feed(t, s, pod, istioRequests(adaptertest.SimEpoch.Add(100*time.Second), map[string]float64{"200": 1000}), time.Now())
	feed(t, s, pod, istioRequests(adaptertest.SimEpoch.Add(101*time.Second), map[string]float64{"200": 1100}), time.Now())
	feed(t, s, pod, istioRequests(adaptertest.SimEpoch, map[string]float64{"200": 0}), time.Now())
	if _, err := s.RequestRate(pod); !adaptertest.IsNoData(err) {
		t.Fatalf("right after the clock went back: err = %v, want adapter.ErrNoData", err)
	}
	feed(t, s, pod, istioRequests(adaptertest.SimEpoch.Add(2*time.Second), map[string]float64{"200": 40}), time.Now())
	if v, err := s.RequestRate(pod); err != nil || v.Value != 20 {
		t.Fatalf("rate = %v, %v; want 20", v.Value, err)
	}
}

// histogramText renders a typed Istio histogram with cumulative bucket
// counts (le -> count) at ts, as client_golang writes it.
// Only the first block of an exposition carries the TYPE line.
func histogramText(ts time.Time, code string, cum [][2]float64) string {
	var b strings.Builder
	if code == "200" {
		b.WriteString("# TYPE istio_request_duration_milliseconds histogram\n")
	}
	for _, c := range cum {
		le := fmt.Sprint(c[0])
		if math.IsInf(c[0], 1) {
			le = "+Inf"
		}
		fmt.Fprintf(&b, "istio_request_duration_milliseconds_bucket{reporter=\"destination\",response_code=%q,le=%q} %v %d\n", code, le, c[1], ms(ts))
	}
	n := cum[len(cum)-1][1]
	fmt.Fprintf(&b, "istio_request_duration_milliseconds_sum{reporter=\"destination\",response_code=%q} %v %d\n", code, n*100, ms(ts))
	fmt.Fprintf(&b, "istio_request_duration_milliseconds_count{reporter=\"destination\",response_code=%q} %v %d\n", code, n, ms(ts))
	return b.String()
}

// Bucket increases over the window, summed over label sets, with a counter
// reset in one series, give the hand-worked example's percentiles.
func TestRequestDurationHistogramIncreases(t *testing.T) {
	pod := adaptertest.NN("ml", "p")
	s := newTestScraper(t, Options{}, podTarget("ml", "p"))
	t0, t1 := adaptertest.SimEpoch, adaptertest.SimEpoch.Add(30*time.Second)
	// Code 200 grows by {100:40, 250:70, 500:80, +Inf:80}; code 500 restarts
	// (its counts drop), so its new counts {100:10, 250:20, 500:20, +Inf:20}
	// are the increase. Sum: {100:50, 250:90, 500:100, +Inf:100}.
	feed(t, s, pod, histogramText(t0, "200", [][2]float64{{100, 5}, {250, 10}, {500, 12}, {adaptertest.Inf, 13}})+
		histogramText(t0, "500", [][2]float64{{100, 50}, {250, 60}, {500, 70}, {adaptertest.Inf, 70}}), time.Now())
	feed(t, s, pod, histogramText(t1, "200", [][2]float64{{100, 45}, {250, 80}, {500, 92}, {adaptertest.Inf, 93}})+
		histogramText(t1, "500", [][2]float64{{100, 10}, {250, 20}, {500, 20}, {adaptertest.Inf, 20}}), time.Now())
	h, err := s.RequestDurationHistogram(pod)
	if err != nil {
		t.Fatal(err)
	}
	want := adaptertest.HandWorked
	if len(h.Buckets) != len(want) {
		t.Fatalf("buckets %v, want %v", h.Buckets, want)
	}
	for i := range want {
		if h.Buckets[i] != want[i] {
			t.Fatalf("buckets %v, want %v", h.Buckets, want)
		}
	}
	if p98, _ := adapter.HistogramQuantile(0.98, h.Buckets); p98 != 450 {
		t.Errorf("p98 = %v, want 450", p98)
	}
	if !h.Time.Equal(t1) {
		t.Errorf("time %v, want %v", h.Time, t1)
	}
}

// The untyped form (no TYPE line, plain _bucket series with le) is read too.
func TestRequestDurationHistogramUntyped(t *testing.T) {
	pod := adaptertest.NN("ml", "p")
	s := newTestScraper(t, Options{}, podTarget("ml", "p"))
	for i, cum := range [][4]float64{{0, 0, 0, 0}, {50, 90, 100, 100}} {
		ts := adaptertest.SimEpoch.Add(time.Duration(i) * time.Second)
		text := fmt.Sprintf(`istio_request_duration_milliseconds_bucket{reporter="destination",le="100"} %v %d
istio_request_duration_milliseconds_bucket{reporter="destination",le="250"} %v %d
istio_request_duration_milliseconds_bucket{reporter="destination",le="500"} %v %d
istio_request_duration_milliseconds_bucket{reporter="destination",le="+Inf"} %v %d
`, cum[0], ms(ts), cum[1], ms(ts), cum[2], ms(ts), cum[3], ms(ts))
		feed(t, s, pod, text, time.Now())
	}
	h, err := s.RequestDurationHistogram(pod)
	if err != nil {
		t.Fatal(err)
	}
	if p98, ok := adapter.HistogramQuantile(0.98, h.Buckets); !ok || p98 != 450 {
		t.Errorf("p98 = %v (ok=%v), want 450", p98, ok)
	}
}

func TestIgnoredSeriesAreCounted(t *testing.T) {
	selfmetrics.Register()
	pod := adaptertest.NN("ml", "p")
	exporter := podTarget("ml", "p")
	exporter.DCGM = true
	s := newTestScraper(t, Options{}, exporter)
	before := adaptertest.CounterValue(t, "hetsev_metrics_adapter_series_ignored_total",
		map[string]string{"series": adapter.SeriesDCGMGPUUtil, "reason": selfmetrics.IgnoredBadGPU})
	beforeRep := adaptertest.CounterValue(t, "hetsev_metrics_adapter_series_ignored_total",
		map[string]string{"series": adapter.SeriesIstioRequests, "reason": selfmetrics.IgnoredNoReporter})
	feed(t, s, pod, `DCGM_FI_DEV_GPU_UTIL{Hostname="node-1"} 5
DCGM_FI_DEV_GPU_UTIL{gpu="x",Hostname="node-1"} 5
istio_requests_total{response_code="200"} 7
`, time.Now())
	if got := adaptertest.CounterValue(t, "hetsev_metrics_adapter_series_ignored_total",
		map[string]string{"series": adapter.SeriesDCGMGPUUtil, "reason": selfmetrics.IgnoredBadGPU}); got-before != 2 {
		t.Errorf("bad_gpu counted %v times, want 2", got-before)
	}
	if got := adaptertest.CounterValue(t, "hetsev_metrics_adapter_series_ignored_total",
		map[string]string{"series": adapter.SeriesIstioRequests, "reason": selfmetrics.IgnoredNoReporter}); got-beforeRep != 1 {
		t.Errorf("missing_reporter counted %v times, want 1", got-beforeRep)
	}
}
