package scrape

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/adapter/internal/adaptertest"
	"github.com/hetsev/hetsev/pkg/adapter/internal/selfmetrics"
	"github.com/hetsev/hetsev/pkg/adapter/provider"
)

// simIstio is a simulated model server's Istio sidecar: every scrape
// advances its simulated clock by step and exposes, stamped with that
// clock, counters for rate requests per simulated second (90 % code 200,
// 10 % code 503) and a latency histogram with 50 % of requests in
// (50, 100] ms, 40 % in (100, 250] and 10 % in (250, 500]. At resetAt the
// process "restarts": counters start again from zero.
type simIstio struct {
	rate    float64
	step    time.Duration
	resetAt time.Duration

	mu      sync.Mutex
	simT    time.Duration
	origin  time.Duration
	scrapes int
}

func (e *simIstio) now() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.simT
}

func (e *simIstio) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	if e.scrapes > 0 {
		e.simT += e.step
	}
	e.scrapes++
	if e.resetAt > 0 && e.simT > e.resetAt && e.origin < e.resetAt {
		e.origin = e.resetAt
	}
	n := e.rate * (e.simT - e.origin).Seconds()
	ts := adaptertest.SimEpoch.Add(e.simT).UnixMilli()
	e.mu.Unlock()

	var b strings.Builder
	fmt.Fprintf(&b, "# HELP go_goroutines Number of goroutines.\n# TYPE go_goroutines gauge\ngo_goroutines 42\n")
	fmt.Fprintf(&b, "# HELP istio_requests_total Total requests.\n# TYPE istio_requests_total counter\n")
	l := `destination_workload="resnet-t4",destination_workload_namespace="ml",source_workload="loadgen"`
	fmt.Fprintf(&b, "istio_requests_total{reporter=\"destination\",response_code=\"200\",%s} %v %d\n", l, math.Floor(0.9*n), ts)
	fmt.Fprintf(&b, "istio_requests_total{reporter=\"destination\",response_code=\"503\",%s} %v %d\n", l, math.Floor(0.1*n), ts)
	fmt.Fprintf(&b, "istio_requests_total{reporter=\"source\",response_code=\"200\",%s} %v %d\n", l, math.Floor(7*n), ts)
	fmt.Fprintf(&b, "# TYPE istio_request_duration_milliseconds histogram\n")
	for _, ub := range []float64{0.5, 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000, 600000, 1800000, 3600000, math.Inf(1)} {
		frac := 1.0
		switch {
		case ub < 100:
			frac = 0
		case ub < 250:
			frac = 0.5
		case ub < 500:
			frac = 0.9
		}
		le := strconv.FormatFloat(ub, 'g', -1, 64)
		if math.IsInf(ub, 1) {
			le = "+Inf"
		}
		fmt.Fprintf(&b, "istio_request_duration_milliseconds_bucket{reporter=\"destination\",response_code=\"200\",%s,le=%q} %v %d\n", l, le, math.Floor(frac*n), ts)
	}
	fmt.Fprintf(&b, "istio_request_duration_milliseconds_sum{reporter=\"destination\",response_code=\"200\",%s} %v %d\n", l, 120*n, ts)
	fmt.Fprintf(&b, "istio_request_duration_milliseconds_count{reporter=\"destination\",response_code=\"200\",%s} %v %d\n", l, math.Floor(n), ts)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
}

// serve starts an HTTP server on 127.0.0.1 and returns its port.
func serve(t *testing.T, h http.Handler) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	_ = srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return ln.Addr().(*net.TCPAddr).Port
}

const dcgmNode1 = `# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-0",device="nvidia0",modelName="Tesla T4",Hostname="node-1"} 71
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-1",device="nvidia1",modelName="Tesla T4",Hostname="node-1"} 13
# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-0",device="nvidia0",modelName="Tesla T4",Hostname="node-1"} 5120
DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-1",device="nvidia1",modelName="Tesla T4",Hostname="node-1"} 2048
`

// requestCounter counts the requests its wrapped handlers started and
// finished serving. A handler finishes before the client can read the end
// of its response, so a scrape the scraper has recorded is always counted
// as finished here.
type requestCounter struct {
	started, finished atomic.Int64
}

func (c *requestCounter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.started.Add(1)
		defer c.finished.Add(1)
		h.ServeHTTP(w, r)
	})
}

type httpFixture struct {
	a, b     *simIstio
	served   *requestCounter // requests to all three targets
	scraper  *Scraper
	provider *provider.Provider
}

// newHTTPFixture starts two simulated model servers (a: 37.5 req/s with a
// restart at 70 s; b: 12.25 req/s) of Deployment resnet-t4 and a
// dcgm-exporter, all on 127.0.0.1, discovered from annotated pods. Every
// request to them is counted in served.
func newHTTPFixture(t *testing.T, opts Options) *httpFixture {
	t.Helper()
	f := &httpFixture{
		a:      &simIstio{rate: 37.5, step: time.Second, resetAt: 70 * time.Second},
		b:      &simIstio{rate: 12.25, step: time.Second},
		served: &requestCounter{},
	}
	portA, portB := serve(t, f.served.wrap(f.a)), serve(t, f.served.wrap(f.b))
	portD := serve(t, f.served.wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(dcgmNode1))
	})))
	app := map[string]string{"app": "resnet", "gpu": "t4"}
	pods, deps := adaptertest.Listers(t, []*corev1.Pod{
		adaptertest.NewPod("ml", "resnet-t4-a").Label("app", "resnet").Label("gpu", "t4").IP("127.0.0.1").Scrape(portA).GPU("node-1", 0).Obj(),
		adaptertest.NewPod("ml", "resnet-t4-b").Label("app", "resnet").Label("gpu", "t4").IP("127.0.0.1").Scrape(portB).GPU("node-1", 1).Obj(),
		adaptertest.NewPod("gpu-operator", "dcgm-exporter-node-1").Label("app", "nvidia-dcgm-exporter").IP("127.0.0.1").Scrape(portD).Node("node-1").Obj(),
	}, []*appsv1.Deployment{adaptertest.Deployment("ml", "resnet-t4", app)})
	dcgm, err := DefaultOptions().DCGMExporters()
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(opts, PodTargetLister(pods, dcgm))
	if err != nil {
		t.Fatal(err)
	}
	f.scraper = s
	f.provider = provider.New(s, pods, deps)
	return f
}

// Real HTTP scrapes of timestamped expositions: the computed rates are
// within 1 % of the generated ones (including across a counter reset), and
// the latency percentiles and GPU join come out right.
func TestScrapeHTTPRequestRate(t *testing.T) {
	selfmetrics.Register()
	f := newHTTPFixture(t, Options{Timeout: 2 * time.Second, RateWindow: time.Minute})
	okBefore := adaptertest.CounterValue(t, "hetsev_metrics_adapter_scrapes_total", map[string]string{"result": selfmetrics.ScrapeSuccess})
	ctx := context.Background()
	// 100 scrapes: simulated time 0..99 s; the window [39 s, 99 s] spans
	// a's restart at 70 s.
	for i := 0; i < 100; i++ {
		f.scraper.ScrapeOnce(ctx)
	}
	if got := f.a.now(); got != 99*time.Second {
		t.Fatalf("simulated time %v, want 99s", got)
	}
	if got := adaptertest.CounterValue(t, "hetsev_metrics_adapter_scrapes_total", map[string]string{"result": selfmetrics.ScrapeSuccess}) - okBefore; got != 300 {
		t.Errorf("successful scrapes counted: %v, want 300", got)
	}
	if got := f.served.finished.Load(); got != 300 {
		t.Errorf("the targets served %d requests, want 300", got)
	}
	p := f.provider
	check := func(info string, got, want float64) {
		t.Helper()
		if !adaptertest.Approx(got, want, 0.01) {
			t.Errorf("%s = %v, want %v within 1%%", info, got, want)
		} else {
			t.Logf("%s = %v (generated %v)", info, got, want)
		}
	}
	check("pod a requests_per_second", adaptertest.GetValue(t, p, adaptertest.PodsInfo(adapter.MetricRequestsPerSecond), adaptertest.NN("ml", "resnet-t4-a")), 37.5)
	check("pod b requests_per_second", adaptertest.GetValue(t, p, adaptertest.PodsInfo(adapter.MetricRequestsPerSecond), adaptertest.NN("ml", "resnet-t4-b")), 12.25)
	check("deployment requests_per_second", adaptertest.GetValue(t, p, adaptertest.DepInfo(adapter.MetricRequestsPerSecond), adaptertest.NN("ml", "resnet-t4")), 37.5+12.25)
	// Latency: 50 % <= 100 ms, 90 % <= 250 ms, 100 % <= 500 ms.
	check("pod a p50", adaptertest.GetValue(t, p, adaptertest.PodsInfo(adapter.MetricLatencyP50), adaptertest.NN("ml", "resnet-t4-a")), 100)
	check("pod a p98", adaptertest.GetValue(t, p, adaptertest.PodsInfo(adapter.MetricLatencyP98), adaptertest.NN("ml", "resnet-t4-a")), 450)
	check("deployment p98", adaptertest.GetValue(t, p, adaptertest.DepInfo(adapter.MetricLatencyP98), adaptertest.NN("ml", "resnet-t4")), 450)
	check("deployment p99", adaptertest.GetValue(t, p, adaptertest.DepInfo(adapter.MetricLatencyP99), adaptertest.NN("ml", "resnet-t4")), 475)
	check("pod a gpu util", adaptertest.GetValue(t, p, adaptertest.PodsInfo(adapter.MetricGPUUtilization), adaptertest.NN("ml", "resnet-t4-a")), 71)
	check("pod b gpu memory", adaptertest.GetValue(t, p, adaptertest.PodsInfo(adapter.MetricGPUMemoryUsed), adaptertest.NN("ml", "resnet-t4-b")), 2048)
	check("deployment gpu util", adaptertest.GetValue(t, p, adaptertest.DepInfo(adapter.MetricGPUUtilization), adaptertest.NN("ml", "resnet-t4")), 42)

	mv, err := p.GetMetricByName(ctx, adaptertest.NN("ml", "resnet-t4-a"), adaptertest.PodsInfo(adapter.MetricRequestsPerSecond), labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if !mv.Timestamp.Time.Equal(adaptertest.SimEpoch.Add(99 * time.Second)) {
		t.Errorf("timestamp %v, want the samples' clock %v", mv.Timestamp.Time, adaptertest.SimEpoch.Add(99*time.Second))
	}
	// The dcgm-exporter pod is scraped but has no Istio series.
	if _, err := p.GetMetricByName(ctx, adaptertest.NN("gpu-operator", "dcgm-exporter-node-1"), adaptertest.PodsInfo(adapter.MetricRequestsPerSecond), labels.Everything()); !apierrors.IsNotFound(err) {
		t.Errorf("dcgm-exporter pod: err = %v, want NotFound", err)
	}
}

// Run scrapes one round at a time until its context ends, and every scrape
// of a round is done (its request finished and its result recorded) before
// the next round starts and before Run returns. The test ends Run from the
// TargetLister, which Run calls at the start of each round, so that the
// end interrupts no request; at each round start and after Run returns,
// the targets must have no request in flight and must have served exactly
// the scrapes the scraper recorded.
func TestScraperRun(t *testing.T) {
	selfmetrics.Register()
	// An Interval far below one scrape's duration, so that each round
	// starts as soon as Run is ready for it; a Timeout no scrape reaches.
	f := newHTTPFixture(t, Options{Interval: time.Microsecond, Timeout: time.Minute, RateWindow: 20 * time.Second})
	recordedBefore := scrapesRecorded(t)
	check := func(when string) {
		started, finished := f.served.started.Load(), f.served.finished.Load()
		recorded := scrapesRecorded(t) - recordedBefore
		if started != finished || float64(finished) != recorded {
			t.Errorf("%s: the targets started %d requests and finished %d; the scraper recorded %v scrapes",
				when, started, finished, recorded)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Called only from Run's goroutine.
	rounds := 0
	list := f.scraper.list
	f.scraper.list = func() ([]Target, error) {
		rounds++
		check(fmt.Sprintf("start of round %d", rounds))
		if f.b.now() >= 25*time.Second {
			cancel()
		}
		return list()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.scraper.Run(ctx)
	}()
	<-done
	check("after Run returned")
	// b's clock reaches 25 s at its 26th scrape; round 27 is cancelled
	// before it sends a request, and so is any round Run starts after it
	// (when a tick and the end of ctx are both ready, Run may take the
	// tick).
	if got := f.served.finished.Load(); got != 3*26 {
		t.Errorf("the targets served %d requests, want %d (3 targets, 26 rounds)", got, 3*26)
	}
	got := adaptertest.GetValue(t, f.provider, adaptertest.PodsInfo(adapter.MetricRequestsPerSecond), adaptertest.NN("ml", "resnet-t4-b"))
	if !adaptertest.Approx(got, 12.25, 0.01) {
		t.Errorf("pod b requests_per_second = %v, want 12.25 within 1%%", got)
	}
}

// scrapesRecorded returns hetsev_metrics_adapter_scrapes_total summed over
// its results: the scrapes the scrapers of this process have finished.
func scrapesRecorded(t *testing.T) float64 {
	t.Helper()
	sum := 0.0
	for _, r := range []string{selfmetrics.ScrapeSuccess, selfmetrics.ScrapeTimeout, selfmetrics.ScrapeError,
		selfmetrics.ScrapeHTTPError, selfmetrics.ScrapeTooLarge, selfmetrics.ScrapeParseError} {
		sum += adaptertest.CounterValue(t, "hetsev_metrics_adapter_scrapes_total", map[string]string{"result": r})
	}
	return sum
}

// Failing targets are counted by result and have no data (NotFound), and a
// recovering target gets data again. The Timeout is one no answer of these
// targets reaches, so each result depends on the answer alone, not on how
// fast a loaded machine serves it; TestScrapeTimeout covers timeouts.
func TestScrapeFailures(t *testing.T) {
	selfmetrics.Register()
	var mode sync.Map // pod name -> string
	handler := func(name string) http.Handler {
		good := &simIstio{rate: 10, step: time.Second}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			m, _ := mode.Load(name)
			switch m {
			case "http500":
				http.Error(w, "boom", http.StatusInternalServerError)
			case "garbage":
				_, _ = w.Write([]byte("istio_requests_total{reporter=\"destination\" 12\n{{{\n"))
			case "huge":
				_, _ = w.Write([]byte(strings.Repeat("# padding\n", 4000)))
			default:
				good.ServeHTTP(w, r)
			}
		})
	}
	names := []string{"http500", "garbage", "huge", "refused"}
	var podList []*corev1.Pod
	for _, n := range names {
		port := serve(t, handler(n))
		if n == "refused" {
			// A port with nothing listening: bind, note, close.
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			port = ln.Addr().(*net.TCPAddr).Port
			_ = ln.Close()
		}
		podList = append(podList, adaptertest.NewPod("ml", n).IP("127.0.0.1").Scrape(port).Obj())
	}
	pods, deps := adaptertest.Listers(t, podList, nil)
	s, err := New(Options{Timeout: time.Minute, MaxBodyBytes: 20000}, PodTargetLister(pods, DCGMExporters{}))
	if err != nil {
		t.Fatal(err)
	}
	p := provider.New(s, pods, deps)
	ctx := context.Background()

	// Two good rounds: everyone but "refused" has data (huge is small then).
	for i := 0; i < 2; i++ {
		s.ScrapeOnce(ctx)
	}
	for _, n := range names[:3] {
		if _, err := p.GetMetricByName(ctx, adaptertest.NN("ml", n), adaptertest.PodsInfo(adapter.MetricRequestsPerSecond), labels.Everything()); err != nil {
			t.Fatalf("%s before failures: %v\n%+v", n, err, s.Targets())
		}
	}
	results := map[string]string{"http500": selfmetrics.ScrapeHTTPError, "garbage": selfmetrics.ScrapeParseError, "huge": selfmetrics.ScrapeTooLarge, "refused": selfmetrics.ScrapeError}
	before := map[string]float64{}
	for _, r := range results {
		before[r] = adaptertest.CounterValue(t, "hetsev_metrics_adapter_scrapes_total", map[string]string{"result": r})
	}
	for _, n := range names {
		mode.Store(n, n)
	}
	s.ScrapeOnce(ctx)
	for _, n := range names {
		_, err := p.GetMetricByName(ctx, adaptertest.NN("ml", n), adaptertest.PodsInfo(adapter.MetricRequestsPerSecond), labels.Everything())
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s: err = %v, want NotFound", n, err)
		}
		r := results[n]
		if got := adaptertest.CounterValue(t, "hetsev_metrics_adapter_scrapes_total", map[string]string{"result": r}) - before[r]; got != 1 {
			t.Errorf("%s: scrapes_total{result=%q} grew by %v, want 1", n, r, got)
		}
	}
	for _, st := range s.Targets() {
		if st.Up || st.LastError == "" {
			t.Errorf("%s: up=%v lastError=%q", st.Pod, st.Up, st.LastError)
		}
	}
	// Recovery.
	mode.Store("http500", "")
	s.ScrapeOnce(ctx)
	if v := adaptertest.GetValue(t, p, adaptertest.PodsInfo(adapter.MetricRequestsPerSecond), adaptertest.NN("ml", "http500")); v != 10 {
		t.Errorf("after recovery: %v, want 10", v)
	}
}

// A target that never answers times out: the scrape is counted as a
// timeout and the target, which had data, is down and has none. The target
// answers nothing until the scraper gives up, so the result does not depend
// on how long the Timeout is or how loaded the machine is.
func TestScrapeTimeout(t *testing.T) {
	selfmetrics.Register()
	release := make(chan struct{})
	port := serve(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release) }) // runs before serve's srv.Close
	pods, _ := adaptertest.Listers(t, []*corev1.Pod{adaptertest.NewPod("ml", "silent").IP("127.0.0.1").Scrape(port).Obj()}, nil)
	s, err := New(Options{Timeout: 20 * time.Millisecond}, PodTargetLister(pods, DCGMExporters{}))
	if err != nil {
		t.Fatal(err)
	}
	pod := adaptertest.NN("ml", "silent")
	// Data from two earlier good scrapes, stored directly.
	s.syncTargets(t.Context())
	feed(t, s, pod, istioRequests(adaptertest.SimEpoch, map[string]float64{"200": 0}), time.Now())
	feed(t, s, pod, istioRequests(adaptertest.SimEpoch.Add(time.Second), map[string]float64{"200": 10}), time.Now())
	if v, err := s.RequestRate(pod); err != nil || v.Value != 10 {
		t.Fatalf("before the timeout: rate = %v, %v; want 10/s", v.Value, err)
	}
	before := adaptertest.CounterValue(t, "hetsev_metrics_adapter_scrapes_total", map[string]string{"result": selfmetrics.ScrapeTimeout})
	s.ScrapeOnce(t.Context())
	if got := adaptertest.CounterValue(t, "hetsev_metrics_adapter_scrapes_total", map[string]string{"result": selfmetrics.ScrapeTimeout}) - before; got != 1 {
		t.Errorf("scrapes_total{result=%q} grew by %v, want 1", selfmetrics.ScrapeTimeout, got)
	}
	if _, err := s.RequestRate(pod); !adaptertest.IsNoData(err) {
		t.Errorf("after the timeout: err = %v, want adapter.ErrNoData", err)
	}
	if st := s.Targets(); len(st) != 1 || st[0].Up || !strings.HasPrefix(st[0].LastError, selfmetrics.ScrapeTimeout+":") {
		t.Errorf("targets %+v, want one, down, with a timeout error", st)
	}
}
