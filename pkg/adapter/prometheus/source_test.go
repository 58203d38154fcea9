package prometheus

import (
	"context"
	"fmt"
	"net"
	"strings"
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

// The Prometheus backend reads rates, bucket increases and DCGM gauges from
// instant vectors, joins GPUs to pods through node and hetsev.io/gpu-index
// in the Provider, and renders the configured namespace and window.
func TestPrometheusSourceThroughProvider(t *testing.T) {
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{"namespace": "ml"}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	fp := &fakePrometheus{vectors: map[string]string{
		"istio_requests_total": vector(
			sample(with(map[string]string{"pod": "a"}), "12.5"),
			sample(with(map[string]string{"pod": "b"}), "7.25")),
		"istio_request_duration_milliseconds_bucket": vector(
			// a: 100 requests in the window, all <= 100 ms.
			sample(with(map[string]string{"pod": "a", "le": "100"}), "100"),
			sample(with(map[string]string{"pod": "a", "le": "500"}), "100"),
			sample(with(map[string]string{"pod": "a", "le": "+Inf"}), "100"),
			// b: 100 requests in (100, 500].
			sample(with(map[string]string{"pod": "b", "le": "100"}), "0"),
			sample(with(map[string]string{"pod": "b", "le": "500"}), "100"),
			sample(with(map[string]string{"pod": "b", "le": "+Inf"}), "100")),
		"DCGM_FI_DEV_GPU_UTIL": vector(
			sample(map[string]string{"Hostname": "node-1", "gpu": "0"}, "80"),
			sample(map[string]string{"Hostname": "node-1", "gpu": "1"}, "10"),
			sample(map[string]string{"Hostname": "node-2", "gpu": "1"}, "40")),
		"DCGM_FI_DEV_FB_USED": vector(
			sample(map[string]string{"Hostname": "node-1", "gpu": "0"}, "5120")),
	}}
	src := newPromSource(t, serveLoopback(t, fp), func(o *Options) { o.RateWindow = 30 * time.Second })
	app := map[string]string{"app": "resnet"}
	pods, deps := adaptertest.Listers(t, []*corev1.Pod{
		adaptertest.NewPod("ml", "a").Label("app", "resnet").GPU("node-1", 0).Obj(),
		adaptertest.NewPod("ml", "b").Label("app", "resnet").GPU("node-2", 1).Obj(),
	}, []*appsv1.Deployment{adaptertest.Deployment("ml", "resnet-t4", app)})
	p := provider.New(src, pods, deps)

	if got := adaptertest.GetValue(t, p, adaptertest.PodsInfo(adapter.MetricRequestsPerSecond), adaptertest.NN("ml", "a")); got != 12.5 {
		t.Errorf("pod a requests_per_second = %v, want 12.5", got)
	}
	if got := adaptertest.GetValue(t, p, adaptertest.DepInfo(adapter.MetricRequestsPerSecond), adaptertest.NN("ml", "resnet-t4")); got != 19.75 {
		t.Errorf("deployment requests_per_second = %v, want 19.75", got)
	}
	// Merged: 200 requests, p50 at the 100th, the top of a's bucket; p99 at
	// the 198th, 98 % into b's (100, 500] bucket.
	if got := adaptertest.GetValue(t, p, adaptertest.DepInfo(adapter.MetricLatencyP50), adaptertest.NN("ml", "resnet-t4")); got != 100 {
		t.Errorf("deployment p50 = %v, want 100", got)
	}
	if got := adaptertest.GetValue(t, p, adaptertest.DepInfo(adapter.MetricLatencyP99), adaptertest.NN("ml", "resnet-t4")); !adaptertest.Approx(got, 100+400*0.98, 1e-9) {
		t.Errorf("deployment p99 = %v, want 492", got)
	}
	if got := adaptertest.GetValue(t, p, adaptertest.PodsInfo(adapter.MetricGPUUtilization), adaptertest.NN("ml", "b")); got != 40 {
		t.Errorf("pod b gpu_utilization_percent = %v, want node-2 GPU 1's 40", got)
	}
	if got := adaptertest.GetValue(t, p, adaptertest.PodsInfo(adapter.MetricGPUMemoryUsed), adaptertest.NN("ml", "a")); got != 5120 {
		t.Errorf("pod a gpu_memory_used_mib = %v, want 5120", got)
	}
	mv, err := p.GetMetricByName(context.Background(), adaptertest.NN("ml", "a"), adaptertest.PodsInfo(adapter.MetricRequestsPerSecond), labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if *mv.WindowSeconds != 30 || mv.Timestamp.Unix() != 1000 {
		t.Errorf("window %d s, timestamp %v; want 30 s and the sample's time", *mv.WindowSeconds, mv.Timestamp)
	}
	// Pod b has no FB_USED series: NotFound, not zero.
	if _, err := p.GetMetricByName(context.Background(), adaptertest.NN("ml", "b"), adaptertest.PodsInfo(adapter.MetricGPUMemoryUsed), labels.Everything()); !apierrors.IsNotFound(err) {
		t.Errorf("pod b gpu_memory_used_mib: %v, want NotFound", err)
	}

	var rateQueries []string
	for _, q := range fp.seen() {
		if strings.Contains(q, "istio_requests_total") {
			rateQueries = append(rateQueries, q)
		}
	}
	want := `sum by (namespace, pod) (rate(istio_requests_total{reporter="destination",namespace="ml"}[30s]))`
	if len(rateQueries) != 1 || rateQueries[0] != want {
		t.Errorf("rate queries %q, want once %q (the cache answers the rest)", rateQueries, want)
	}
}

// Series the join cannot use are ignored and counted; the others still
// answer.
func TestPrometheusSourceIgnoresUnexpectedSeries(t *testing.T) {
	fp := &fakePrometheus{vectors: map[string]string{
		"istio_requests_total": vector(
			sample(map[string]string{"namespace": "ml", "pod": "a"}, "3"),
			sample(map[string]string{"namespace": "ml", "pod": "a", "response_code": "500"}, "1"), // summed with the first
			sample(map[string]string{"namespace": "ml"}, "9"),                                     // no pod
			sample(map[string]string{"namespace": "ml", "pod": "z"}, "NaN")),
		"istio_request_duration_milliseconds_bucket": vector(
			sample(map[string]string{"namespace": "ml", "pod": "a", "le": "fast"}, "1")),
		"DCGM_FI_DEV_GPU_UTIL": vector(
			sample(map[string]string{"Hostname": "node-1", "gpu": "first"}, "50"),
			sample(map[string]string{"gpu": "0"}, "50"),
			sample(map[string]string{"Hostname": "node-1", "gpu": "1"}, "70")),
	}}
	// One query per series kind, however slow the machine: each ignored
	// series is counted once.
	src := newPromSource(t, serveLoopback(t, fp), func(o *Options) { o.CacheTTL = time.Hour })
	selfmetrics.Register()
	count := func(series, reason string) float64 {
		return adaptertest.CounterValue(t, "hetsev_metrics_adapter_series_ignored_total", map[string]string{"series": series, "reason": reason})
	}
	before := map[string]float64{
		"nopod": count(adapter.SeriesIstioRequests, selfmetrics.IgnoredNoPod), "nan": count(adapter.SeriesIstioRequests, selfmetrics.IgnoredBadValue),
		"le": count(adapter.SeriesIstioDurationBucket, selfmetrics.IgnoredBadLe), "gpu": count(adapter.SeriesDCGMGPUUtil, selfmetrics.IgnoredBadGPU),
		"node": count(adapter.SeriesDCGMGPUUtil, selfmetrics.IgnoredNoNode),
	}
	if v, err := src.RequestRate(adaptertest.NN("ml", "a")); err != nil || v.Value != 4 {
		t.Errorf("pod a rate = %v, %v; want 3+1", v.Value, err)
	}
	if _, err := src.RequestRate(adaptertest.NN("ml", "z")); !adaptertest.IsNoData(err) {
		t.Errorf("pod z (NaN): %v, want no data", err)
	}
	if _, err := src.RequestDurationHistogram(adaptertest.NN("ml", "a")); !adaptertest.IsNoData(err) {
		t.Errorf("pod a histogram with only a bad le: %v, want no data", err)
	}
	if v, err := src.GPUGauge(adapter.SeriesDCGMGPUUtil, adapter.GPU{Node: "node-1", Index: 1}); err != nil || v.Value != 70 {
		t.Errorf("node-1 GPU 1 = %v, %v; want 70", v.Value, err)
	}
	for key, series := range map[string][2]string{
		"nopod": {adapter.SeriesIstioRequests, selfmetrics.IgnoredNoPod}, "nan": {adapter.SeriesIstioRequests, selfmetrics.IgnoredBadValue},
		"le": {adapter.SeriesIstioDurationBucket, selfmetrics.IgnoredBadLe}, "gpu": {adapter.SeriesDCGMGPUUtil, selfmetrics.IgnoredBadGPU},
		"node": {adapter.SeriesDCGMGPUUtil, selfmetrics.IgnoredNoNode},
	} {
		if got := count(series[0], series[1]) - before[key]; got != 1 {
			t.Errorf("ignored %s/%s counted %v times, want 1", series[0], series[1], got)
		}
	}
}

// The cache answers within its TTL and asks again after it; a negative TTL
// asks every time.
func TestPrometheusSourceCache(t *testing.T) {
	fp := &fakePrometheus{vectors: map[string]string{
		"istio_requests_total": vector(sample(map[string]string{"namespace": "ml", "pod": "a"}, "3")),
	}}
	now := time.Unix(5000, 0)
	src := newPromSource(t, serveLoopback(t, fp), func(o *Options) {
		o.CacheTTL = 5 * time.Second
		o.Now = func() time.Time { return now }
	})
	for i := 0; i < 3; i++ {
		if _, err := src.RequestRate(adaptertest.NN("ml", "a")); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(fp.seen()); n != 1 {
		t.Fatalf("%d queries within the TTL, want 1", n)
	}
	if _, err := src.RequestRate(adaptertest.NN("other", "a")); !adaptertest.IsNoData(err) {
		t.Fatalf("other namespace: %v", err)
	}
	now = now.Add(6 * time.Second)
	if _, err := src.RequestRate(adaptertest.NN("ml", "a")); err != nil {
		t.Fatal(err)
	}
	if n := len(fp.seen()); n != 3 {
		t.Fatalf("%d queries, want 3 (one per namespace, one after the TTL)", n)
	}

	nocache := newPromSource(t, serveLoopback(t, fp), func(o *Options) { o.CacheTTL = -1 })
	_, _ = nocache.RequestRate(adaptertest.NN("ml", "a"))
	_, _ = nocache.RequestRate(adaptertest.NN("ml", "a"))
	if n := len(fp.seen()); n != 5 {
		t.Fatalf("%d queries, want 5 without a cache", n)
	}
	// Without a cache, one API request is still one query however many
	// pods it lists: the Provider reads through ForRequest.
	var pods []*corev1.Pod
	for i := 0; i < 50; i++ {
		pods = append(pods, adaptertest.NewPod("ml", fmt.Sprintf("p%d", i)).Obj())
	}
	pl, dl := adaptertest.Listers(t, pods, nil)
	p := provider.New(nocache, pl, dl)
	if _, err := p.GetMetricBySelector(context.Background(), "ml", labels.Everything(), adaptertest.PodsInfo(adapter.MetricRequestsPerSecond), labels.Everything()); err != nil {
		t.Fatal(err)
	}
	if n := len(fp.seen()); n != 6 {
		t.Fatalf("%d queries, want 6: one for a list of 50 pods", n)
	}
}

// Prometheus down or slow: a 503 naming Prometheus and the cause, in about
// the timeout, never a zero or an empty list that would read as no load.
func TestPrometheusSourceFaults(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String()
	l.Close() // nothing listens there now

	slow := &fakePrometheus{delay: 10 * time.Second, vectors: map[string]string{
		"istio_requests_total": vector(sample(map[string]string{"namespace": "ml", "pod": "a"}, "3")),
	}}
	pods, deps := adaptertest.Listers(t, []*corev1.Pod{adaptertest.NewPod("ml", "a").Obj()}, nil)
	for name, url := range map[string]string{"unreachable": down, "slow": serveLoopback(t, slow)} {
		t.Run(name, func(t *testing.T) {
			src := newPromSource(t, url, func(o *Options) { o.Timeout = 300 * time.Millisecond })
			p := provider.New(src, pods, deps)
			start := time.Now()
			list, err := p.GetMetricBySelector(context.Background(), "ml", labels.Everything(), adaptertest.PodsInfo(adapter.MetricRequestsPerSecond), labels.Everything())
			took := time.Since(start)
			if err == nil {
				t.Fatalf("list = %+v, want an error", list)
			}
			if !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), "Prometheus at "+url) {
				t.Errorf("error %v, want 503 naming Prometheus at %s", err, url)
			}
			if name == "slow" && !strings.Contains(err.Error(), "no answer within 300ms") {
				t.Errorf("error %v, want the timeout named", err)
			}
			// Bounded: the timeout, not the server's 10 s.
			if took > 5*time.Second {
				t.Errorf("answered after %v", took)
			}
			if _, err := p.GetMetricByName(context.Background(), adaptertest.NN("ml", "a"), adaptertest.PodsInfo(adapter.MetricRequestsPerSecond), labels.Everything()); apierrors.IsNotFound(err) || err == nil {
				t.Errorf("by name: %v, want a 503, not NotFound", err)
			}
		})
	}
}

// TestPrometheusSourceJoinsGPUsByUUID: a GPU with a UUID reads the series
// that carries it, whatever index its node lists it under; a GPU whose
// UUID no series carries, or with none, is read by node and index.
func TestPrometheusSourceJoinsGPUsByUUID(t *testing.T) {
	fp := &fakePrometheus{vectors: map[string]string{
		"DCGM_FI_DEV_GPU_UTIL": vector(
			sample(map[string]string{"Hostname": "node-1", "gpu": "0", "UUID": "GPU-aaa"}, "10"),
			sample(map[string]string{"Hostname": "node-1", "gpu": "1", "UUID": "GPU-bbb"}, "70")),
	}}
	src := newPromSource(t, serveLoopback(t, fp), func(o *Options) { o.CacheTTL = time.Hour })
	for _, c := range []struct {
		gpu  adapter.GPU
		want float64
	}{
		{adapter.GPU{Node: "node-1", Index: 0, UUID: "GPU-bbb"}, 70}, // the UUID wins over the index
		{adapter.GPU{Node: "node-1", Index: 0, UUID: "GPU-zzz"}, 10}, // unknown UUID: by index
		{adapter.GPU{Node: "node-1", Index: 1}, 70},
	} {
		if v, err := src.GPUGauge(adapter.SeriesDCGMGPUUtil, c.gpu); err != nil || v.Value != c.want {
			t.Errorf("%s: %v, %v; want %v", c.gpu, v.Value, err, c.want)
		}
	}
}
