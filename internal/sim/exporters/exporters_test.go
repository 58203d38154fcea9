package exporters

import (
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/hetsev/hetsev/pkg/adapter"
)

// simClock is a settable simulated clock.
type simClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *simClock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *simClock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// scrape fetches h over HTTP (httptest, 127.0.0.1) and returns the raw text.
func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("Content-Type %q, want text format", ct)
	}
	return string(body)
}

func labels[L interface {
	GetName() string
	GetValue() string
}](ls []L) map[string]string {
	m := map[string]string{}
	for _, l := range ls {
		m[l.GetName()] = l.GetValue()
	}
	return m
}

func TestIstioExposition(t *testing.T) {
	clk := &simClock{t: time.Unix(1_700_000_000, 250*int64(time.Millisecond))}
	e := NewIstio(IstioLabels{
		SourceWorkload:               "loadgen",
		SourceWorkloadNamespace:      "default",
		DestinationWorkload:          "resnet50-t4",
		DestinationWorkloadNamespace: "default",
		DestinationServiceName:       "resnet50",
		DestinationServiceNamespace:  "default",
		DestinationApp:               "resnet50",
		DestinationVersion:           "t4",
	}, clk.Now)
	for _, ms := range []float64{0.3, 7, 7, 120, 45000} {
		e.Observe(ms, 200)
	}
	e.Observe(3, 503)
	e.Observe(math.NaN(), 200) // ignored
	e.Observe(-1, 200)         // counts as 0 ms

	if n, sum := e.Totals(); n != 7 || math.Abs(sum-(0.3+7+7+120+45000+3)) > 1e-9 {
		t.Fatalf("Totals = %d, %v", n, sum)
	}

	text := scrape(t, Handler(e))
	for _, s := range []string{"istio_request_duration_milliseconds_bucket", "istio_request_duration_milliseconds_sum", "istio_request_duration_milliseconds_count", "# TYPE istio_requests_total counter", "# TYPE istio_request_duration_milliseconds histogram"} {
		if !strings.Contains(text, s) {
			t.Fatalf("exposition lacks %q:\n%s", s, text)
		}
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	wantTs := clk.Now().UnixMilli()

	req := mfs[adapter.SeriesIstioRequests]
	if req == nil || len(req.GetMetric()) != 2 {
		t.Fatalf("istio_requests_total: %v", req)
	}
	counts := map[string]float64{}
	for _, m := range req.GetMetric() {
		l := labels(m.GetLabel())
		counts[l["response_code"]] = m.GetCounter().GetValue()
		if m.GetTimestampMs() != wantTs {
			t.Errorf("counter timestamp %d, want %d", m.GetTimestampMs(), wantTs)
		}
		want := map[string]string{
			"reporter": "destination", "source_workload": "loadgen", "source_workload_namespace": "default",
			"destination_workload": "resnet50-t4", "destination_workload_namespace": "default",
			"destination_service": "resnet50.default.svc.cluster.local", "destination_service_name": "resnet50",
			"destination_service_namespace": "default", "destination_app": "resnet50", "destination_version": "t4",
			"request_protocol": "http", "response_flags": "-", "connection_security_policy": "mutual_tls",
		}
		for k, v := range want {
			if l[k] != v {
				t.Errorf("label %s = %q, want %q", k, l[k], v)
			}
		}
		if len(l) != len(want)+1 {
			t.Errorf("labels %v", l)
		}
	}
	if counts["200"] != 6 || counts["503"] != 1 {
		t.Fatalf("counts = %v", counts)
	}

	dur := mfs[adapter.SeriesIstioDuration]
	if dur == nil || len(dur.GetMetric()) != 2 {
		t.Fatalf("duration: %v", dur)
	}
	for _, m := range dur.GetMetric() {
		if m.GetTimestampMs() != wantTs {
			t.Errorf("histogram timestamp %d, want %d", m.GetTimestampMs(), wantTs)
		}
		if labels(m.GetLabel())["response_code"] != "200" {
			continue
		}
		h := m.GetHistogram()
		if h.GetSampleCount() != 6 || math.Abs(h.GetSampleSum()-45134.3) > 1e-6 {
			t.Fatalf("count %d sum %v", h.GetSampleCount(), h.GetSampleSum())
		}
		// Observations (ms): 0, 0.3, 7, 7, 120, 45000 -> cumulative buckets.
		want := map[float64]uint64{0.5: 2, 1: 2, 5: 2, 10: 4, 25: 4, 50: 4, 100: 4, 250: 5, 500: 5, 1000: 5, 2500: 5, 5000: 5, 10000: 5, 30000: 5, 60000: 6, 300000: 6, 600000: 6, 1800000: 6, 3600000: 6}
		got := map[float64]uint64{}
		for _, b := range h.GetBucket() {
			got[b.GetUpperBound()] = b.GetCumulativeCount()
		}
		want[math.Inf(1)] = 6
		if len(got) != len(IstioDurationBucketsMs)+1 { // text format adds le="+Inf"
			t.Fatalf("buckets %v", got)
		}
		for ub, c := range want {
			if got[ub] != c {
				t.Errorf("bucket le=%v: %d, want %d", ub, got[ub], c)
			}
		}
	}
	// Scrapes carry the simulated time, not the wall clock.
	clk.Set(time.Unix(1_700_000_600, 0))
	mfs, err = p.TextToMetricFamilies(strings.NewReader(scrape(t, Handler(e))))
	if err != nil {
		t.Fatal(err)
	}
	if ts := mfs[adapter.SeriesIstioRequests].GetMetric()[0].GetTimestampMs(); ts != 1_700_000_600_000 {
		t.Fatalf("timestamp after clock move = %d", ts)
	}
}

func TestIstioDefaultsAndBadInput(t *testing.T) {
	e := NewIstio(IstioLabels{DestinationWorkload: "bad\xffname"}, nil)
	e.Observe(1, 200)
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(scrape(t, Handler(e))))
	if err != nil {
		t.Fatal(err)
	}
	l := labels(mfs[adapter.SeriesIstioRequests].GetMetric()[0].GetLabel())
	if l["source_workload"] != "unknown" || l["destination_service"] != "unknown" || l["destination_workload"] != "bad\uFFFDname" {
		t.Fatalf("labels %v", l)
	}
	// Empty exporter exposes nothing but must not fail.
	if txt := scrape(t, Handler(NewIstio(IstioLabels{}, nil))); strings.Contains(txt, "istio_") {
		t.Fatalf("empty exporter exposed %q", txt)
	}
}

func TestIstioConcurrentObserve(t *testing.T) {
	e := NewIstio(IstioLabels{}, func() time.Time { return time.Unix(1, 0) })
	h := Handler(e)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				e.Observe(float64(i%50), 200+g%2)
			}
		}()
	}
	wg.Add(1)
	go func() { // concurrent scrapes
		defer wg.Done()
		for range 5 {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		}
	}()
	wg.Wait()
	if n, sum := e.Totals(); n != 8000 || sum != 8*(49*50/2)*20 {
		t.Fatalf("Totals = %d, %v", n, sum)
	}
}

func TestDCGMExposition(t *testing.T) {
	clk := &simClock{t: time.Unix(1_700_000_123, 456*int64(time.Millisecond))}
	d := NewDCGM("node-t4-0", clk.Now)
	d.SetGPU(GPUSample{Index: 1, UUID: "GPU-bbbb", ModelName: "Tesla T4", UtilPercent: 37.5, FBUsedMiB: 3000, FBFreeMiB: 12109})
	d.SetGPU(GPUSample{Index: 0, UUID: "GPU-aaaa", ModelName: "Tesla T4", UtilPercent: 150, FBUsedMiB: -5, FBFreeMiB: 15109})
	d.SetGPU(GPUSample{Index: 0, UUID: "GPU-aaaa", ModelName: "Tesla T4", UtilPercent: 80, FBUsedMiB: 1024, FBFreeMiB: 14085}) // replaces
	text := scrape(t, Handler(d))
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]float64{
		adapter.SeriesDCGMGPUUtil: {"0": 80, "1": 37.5},
		adapter.SeriesDCGMFBUsed:  {"0": 1024, "1": 3000},
		DCGMFBFree:                {"0": 14085, "1": 12109},
	}
	uuid := map[string]string{"0": "GPU-aaaa", "1": "GPU-bbbb"}
	for name, vals := range want {
		mf := mfs[name]
		if mf == nil || mf.GetType().String() != "GAUGE" || len(mf.GetMetric()) != 2 {
			t.Fatalf("%s: %v", name, mf)
		}
		for _, m := range mf.GetMetric() {
			l := labels(m.GetLabel())
			gpu := l["gpu"]
			if m.GetGauge().GetValue() != vals[gpu] {
				t.Errorf("%s gpu %s = %v, want %v", name, gpu, m.GetGauge().GetValue(), vals[gpu])
			}
			if l["UUID"] != uuid[gpu] || l["device"] != "nvidia"+gpu || l["modelName"] != "Tesla T4" || l["Hostname"] != "node-t4-0" || len(l) != 5 {
				t.Errorf("%s labels %v", name, l)
			}
			if m.GetTimestampMs() != clk.Now().UnixMilli() {
				t.Errorf("%s timestamp %d, want %d", name, m.GetTimestampMs(), clk.Now().UnixMilli())
			}
		}
	}
	// Clamping of bad input.
	d.SetGPU(GPUSample{Index: 2, UtilPercent: math.NaN(), FBUsedMiB: -1})
	d.SetGPU(GPUSample{Index: 3, UtilPercent: 250})
	mfs, err = p.TextToMetricFamilies(strings.NewReader(scrape(t, Handler(d))))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mfs[adapter.SeriesDCGMGPUUtil].GetMetric() {
		l := labels(m.GetLabel())
		v := m.GetGauge().GetValue()
		if (l["gpu"] == "2" && v != 0) || (l["gpu"] == "3" && v != 100) {
			t.Errorf("gpu %s util %v", l["gpu"], v)
		}
	}
}

func TestHandlerErrors(t *testing.T) {
	rec := httptest.NewRecorder()
	Handler(nil).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusInternalServerError {
		t.Fatalf("nil collector: status %d", rec.Code)
	}
}
