package scrape

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
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

type httpFixture struct {
	a, b     *simIstio
	scraper  *Scraper
	provider *provider.Provider
}

// newHTTPFixture starts two simulated model servers (a: 37.5 req/s with a
// restart at 70 s; b: 12.25 req/s) of Deployment resnet-t4 and a
// dcgm-exporter, all on 127.0.0.1, discovered from annotated pods.
func newHTTPFixture(t *testing.T, opts Options) *httpFixture {
	t.Helper()
	f := &httpFixture{
		a: &simIstio{rate: 37.5, step: time.Second, resetAt: 70 * time.Second},
		b: &simIstio{rate: 12.25, step: time.Second},
	}
	portA, portB := serve(t, f.a), serve(t, f.b)
	portD := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(dcgmNode1))
	}))
	app := map[string]string{"app": "resnet", "gpu": "t4"}
	pods, deps := adaptertest.Listers(t, []*corev1.Pod{
		adaptertest.NewPod("ml", "resnet-t4-a").Label("app", "resnet").Label("gpu", "t4").IP("127.0.0.1").Scrape(portA).GPU("node-1", 0).Obj(),
		adaptertest.NewPod("ml", "resnet-t4-b").Label("app", "resnet").Label("gpu", "t4").IP("127.0.0.1").Scrape(portB).GPU("node-1", 1).Obj(),
		adaptertest.NewPod("gpu-operator", "dcgm-exporter-node-1").IP("127.0.0.1").Scrape(portD).Node("node-1").Obj(),
	}, []*appsv1.Deployment{adaptertest.Deployment("ml", "resnet-t4", app)})
	s, err := New(opts, PodTargetLister(pods))
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

// Run scrapes periodically until its context ends.
func TestScraperRun(t *testing.T) {
	f := newHTTPFixture(t, Options{Interval: 2 * time.Millisecond, Timeout: 2 * time.Second, RateWindow: 20 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.scraper.Run(ctx)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for f.b.now() < 25*time.Second {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("only %v simulated after 30 s", f.b.now())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	got := adaptertest.GetValue(t, f.provider, adaptertest.PodsInfo(adapter.MetricRequestsPerSecond), adaptertest.NN("ml", "resnet-t4-b"))
	if !adaptertest.Approx(got, 12.25, 0.01) {
		t.Errorf("pod b requests_per_second = %v, want 12.25 within 1%%", got)
	}
	// Nothing scrapes after Run returns: no goroutine is left in the
	// scraper's code (Run waits for its round's workers), so no scrape can
	// start or finish later. Checked on the goroutines themselves rather
	// than by waiting a while for a scrape that should not come.
	if stacks := scraperGoroutines(); len(stacks) > 0 {
		t.Errorf("%d goroutine(s) still in the scraper after Run returned:\n%s", len(stacks), strings.Join(stacks, "\n\n"))
	}
}

// scraperGoroutines returns the stacks of the goroutines running a
// (*Scraper) method.
func scraperGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "scrape.(*Scraper).") {
			out = append(out, g)
		}
	}
	return out
}

// Failing targets are counted by result and have no data (NotFound), and a
// recovering target gets data again.
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
			case "slow":
				select {
				case <-r.Context().Done():
				case <-time.After(5 * time.Second):
				}
			case "huge":
				_, _ = w.Write([]byte(strings.Repeat("# padding\n", 4000)))
			default:
				good.ServeHTTP(w, r)
			}
		})
	}
	names := []string{"http500", "garbage", "slow", "huge", "refused"}
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
	s, err := New(Options{Timeout: 100 * time.Millisecond, MaxBodyBytes: 20000}, PodTargetLister(pods))
	if err != nil {
		t.Fatal(err)
	}
	p := provider.New(s, pods, deps)
	ctx := context.Background()

	// Two good rounds: everyone but "refused" has data (huge is small then).
	for i := 0; i < 2; i++ {
		s.ScrapeOnce(ctx)
	}
	for _, n := range names[:4] {
		if _, err := p.GetMetricByName(ctx, adaptertest.NN("ml", n), adaptertest.PodsInfo(adapter.MetricRequestsPerSecond), labels.Everything()); err != nil {
			t.Fatalf("%s before failures: %v\n%+v", n, err, s.Targets())
		}
	}
	results := map[string]string{"http500": selfmetrics.ScrapeHTTPError, "garbage": selfmetrics.ScrapeParseError, "slow": selfmetrics.ScrapeTimeout, "huge": selfmetrics.ScrapeTooLarge, "refused": selfmetrics.ScrapeError}
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
