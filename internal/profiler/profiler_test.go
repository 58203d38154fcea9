package profiler

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hetsev/hetsev/internal/sim/e2emodelserver"
	"github.com/hetsev/hetsev/internal/sim/exporters"
)

// startModelServer runs the e2e model server on 127.0.0.1, ready, holding
// each request for service.
func startModelServer(t *testing.T, service time.Duration) string {
	t.Helper()
	url, stop, err := e2emodelserver.StartLocal(e2emodelserver.Config{Service: service, Queue: 4096, Model: "resnet50"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return url
}

// The e2e model server serves one request at a time for its service
// time: a burst of b takes b service times, and its capacity is
// 1/service whatever the batch. The bounds are wide (a shared 2-core
// machine under -race), but a profiler that measured closed-loop
// throughput, missed the saturation or timed one request of a burst
// would fall outside them.
func TestMeasureE2EModelServer(t *testing.T) {
	const service = 10 * time.Millisecond // 100 requests/s
	for _, tc := range []struct {
		name   string
		target Target
		sizes  []int
	}{
		{"http", Target{Protocol: ProtocolHTTP, Path: "/infer", ReadyPath: "/healthz/ready"}, []int{1, 4}},
		{"kserve-v2", Target{Protocol: ProtocolKServeV2, Model: "resnet50",
			Body: []byte(`{"inputs":[{"name":"input","shape":[1,3],"datatype":"FP32","data":[1,2,3]}]}`)}, []int{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.target.URL = startModelServer(t, service)
			var steps []Step
			points, err := Measure(context.Background(), tc.target, Options{
				BatchSizes: tc.sizes, LatencyBursts: 5, StepDuration: 2 * time.Second, Seed: 1,
				Progress: func(s Step) { steps = append(steps, s) }})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range steps {
				t.Logf("b=%d offered %.1f arrived %.1f achieved %.1f p50 %.1f p98 %.1f sent %d errors %d",
					s.BatchSize, s.OfferedRPS, s.ArrivedRPS, s.AchievedRPS, s.P50Ms, s.P98Ms, s.Sent, s.Errors)
			}
			if len(points) != len(tc.sizes) {
				t.Fatalf("points %+v: want batch sizes %v", points, tc.sizes)
			}
			for _, p := range points {
				wantMs := float64(p.BatchSize) * 10
				if p.LatencyMs < wantMs || p.LatencyMs > 2.5*wantMs+10 {
					t.Errorf("batch %d: latency %.1f ms, want about %.0f ms", p.BatchSize, p.LatencyMs, wantMs)
				}
				if !p.Saturated || p.ThroughputRPS < 70 || p.ThroughputRPS > 110 {
					t.Errorf("batch %d: throughput %.1f requests/s (saturated %v), want about 100", p.BatchSize, p.ThroughputRPS, p.Saturated)
				}
				last := p.Steps[len(p.Steps)-1]
				if !last.Saturated() || last.Errors != 0 {
					t.Errorf("batch %d: last step %+v: want saturated without errors", p.BatchSize, last)
				}
			}
		})
	}
}

func TestMeasureRefusesBadTargets(t *testing.T) {
	url := startModelServer(t, time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for _, tc := range []struct {
		target Target
		want   string
	}{
		{Target{URL: "127.0.0.1:8000", Protocol: ProtocolHTTP, Path: "/infer"}, "want http://HOST:PORT"},
		{Target{URL: url, Protocol: "grpc", Path: "/infer"}, `protocol "grpc"`},
		{Target{URL: url, Protocol: ProtocolHTTP}, "--path"},
		{Target{URL: url, Protocol: ProtocolKServeV2, Model: "resnet50"}, "--request-file"},
		// The server answers 400 to a body without inputs.
		{Target{URL: url, Protocol: ProtocolKServeV2, Model: "resnet50", Body: []byte(`{"inputs":[]}`)}, "400 Bad Request"},
		// An unknown model never gets ready.
		{Target{URL: url, Protocol: ProtocolKServeV2, Model: "ssd", Body: []byte(`{"inputs":[{}]}`)}, "not ready"},
	} {
		_, err := Measure(ctx, tc.target, Options{BatchSizes: []int{1}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", tc.target, err, tc.want)
		}
	}
	if _, err := Measure(ctx, Target{URL: url, Protocol: ProtocolHTTP, Path: "/infer"}, Options{BatchSizes: []int{4, 2}}); err == nil {
		t.Error("descending batch sizes: no error")
	}
}

func TestFBUsedMiBSelectsOneGPU(t *testing.T) {
	d := exporters.NewDCGM("node-a", nil)
	d.SetGPU(exporters.GPUSample{Index: 0, UUID: "GPU-aaa", ModelName: "Tesla T4", FBUsedMiB: 1200})
	d.SetGPU(exporters.GPUSample{Index: 1, UUID: "GPU-bbb", ModelName: "Tesla T4", FBUsedMiB: 3400})
	srv := httptest.NewServer(exporters.Handler(d))
	defer srv.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		sel     GPUSelector
		want    float64
		wantErr string
	}{
		{GPUSelector{Node: "node-a", Index: "1"}, 3400, ""},
		{GPUSelector{UUID: "GPU-aaa"}, 1200, ""},
		{GPUSelector{}, 0, "2 GPUs match"},
		{GPUSelector{Node: "node-b", Index: "0"}, 0, "no DCGM_FI_DEV_FB_USED series of Hostname=node-b,gpu=0"},
	} {
		got, err := FBUsedMiB(ctx, srv.Client(), srv.URL, tc.sel)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: error %v, want %q", tc.sel, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%v: %v MiB, %v; want %v MiB", tc.sel, got, err, tc.want)
		}
	}
	// The sampler keeps the peak.
	s, err := SampleDCGM(ctx, srv.Client(), srv.URL, GPUSelector{UUID: "GPU-aaa"}, 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	d.SetGPU(exporters.GPUSample{Index: 0, UUID: "GPU-aaa", ModelName: "Tesla T4", FBUsedMiB: 2500})
	deadline := time.Now().Add(5 * time.Second)
	for {
		if v, _ := FBUsedMiB(ctx, srv.Client(), srv.URL, GPUSelector{UUID: "GPU-aaa"}); v == 2500 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("exporter never showed the new sample")
		}
	}
	time.Sleep(30 * time.Millisecond) // a few sampler periods
	d.SetGPU(exporters.GPUSample{Index: 0, UUID: "GPU-aaa", ModelName: "Tesla T4", FBUsedMiB: 900})
	peak, n, err := s.Stop()
	if err != nil || peak != 2500 || n < 2 {
		t.Errorf("peak %v MiB over %d scrapes, %v: want 2500 MiB", peak, n, err)
	}
}
