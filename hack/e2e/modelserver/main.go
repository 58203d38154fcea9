// Command e2e-modelserver is the model server of `make e2e`'s real pods: a
// stand-in for an inference server on one GPU that serves in wall-clock
// time. Requests to /infer queue for one worker (one GPU executes one
// request at a time) that holds each for --service-ms; /healthz/ready
// answers 200 once the model is "loaded" (--load-ms after start) and until
// SIGTERM; /gpu reports the GPU the container was given: the downward-API
// env var of the hetsev.io/gpu-index annotation (annotation mode) and
// NVIDIA_VISIBLE_DEVICES (set by hetsev-scaler's pod template from that
// annotation, or by the DRA driver's CDI spec). /stats/prometheus serves
// the request metrics an Istio sidecar would report for the pod
// (istio_requests_total, istio_request_duration_milliseconds), which
// hetsev-metrics-adapter scrapes. On SIGTERM it turns unready, waits
// --drain-delay for endpoints to drop it, then stops accepting and
// finishes every request in flight before exiting.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"log"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hetsev/hetsev/internal/sim/exporters"
)

// GPU is /gpu's answer.
type GPU struct {
	Pod  string `json:"pod"`
	Node string `json:"node"`
	// GPUIndex is the env var HETSEV_GPU_INDEX (downward API of the
	// hetsev.io/gpu-index annotation), empty when unset.
	GPUIndex string `json:"gpuIndex"`
	// VisibleDevices is NVIDIA_VISIBLE_DEVICES, empty when unset.
	VisibleDevices string `json:"visibleDevices"`
	// Served counts requests answered so far.
	Served int64 `json:"served"`
}

// Inference is /infer's answer.
type Inference struct {
	Pod string `json:"pod"`
	// LatencyMs is the time from arrival to completion, ms.
	LatencyMs float64 `json:"latencyMs"`
}

type server struct {
	service time.Duration
	queue   chan chan struct{}
	ready   atomic.Bool
	served  atomic.Int64
	istio   *exporters.Istio
}

// work serves the queue in order. Each request finishes one service time
// after the later of its start and the previous finish, and the worker
// sleeps until that deadline: a late wake-up (a busy machine) delays a
// request but does not lower the throughput, which stays 1/service-ms.
func (s *server) work() {
	var free time.Time
	for done := range s.queue {
		now := time.Now()
		if free.Before(now) {
			free = now
		}
		free = free.Add(s.service)
		time.Sleep(time.Until(free))
		close(done)
	}
}

func (s *server) infer(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	done := make(chan struct{})
	select {
	case s.queue <- done:
	case <-r.Context().Done():
		return
	}
	<-done
	s.served.Add(1)
	ms := float64(time.Since(start).Microseconds()) / 1000
	s.istio.Observe(ms, http.StatusOK)
	writeJSON(w, Inference{Pod: os.Getenv("POD_NAME"), LatencyMs: ms})
}

func (s *server) gpu(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, GPU{Pod: os.Getenv("POD_NAME"), Node: os.Getenv("NODE_NAME"),
		GPUIndex: os.Getenv("HETSEV_GPU_INDEX"), VisibleDevices: os.Getenv("NVIDIA_VISIBLE_DEVICES"),
		Served: s.served.Load()})
}

func (s *server) readyz(w http.ResponseWriter, _ *http.Request) {
	if !s.ready.Load() {
		http.Error(w, "not ready", http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ok"))
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func main() {
	addr := flag.String("listen", ":8080", "address to serve on")
	serviceMs := flag.Float64("service-ms", 20, "time one request holds the GPU, ms (> 0)")
	loadMs := flag.Float64("load-ms", 2000, "time from start to ready (model load), ms (>= 0)")
	drain := flag.Duration("drain-delay", 3*time.Second, "time between SIGTERM and closing the listener, while endpoints drop the pod")
	queue := flag.Int("queue", 1024, "requests waiting for the GPU at most (> 0)")
	flag.Parse()
	if *serviceMs <= 0 || *loadMs < 0 || *queue <= 0 || *drain < 0 {
		log.Fatalf("--service-ms=%v --load-ms=%v --queue=%d --drain-delay=%v: want service-ms > 0, load-ms >= 0, queue > 0, drain-delay >= 0",
			*serviceMs, *loadMs, *queue, *drain)
	}
	s := &server{service: time.Duration(*serviceMs * float64(time.Millisecond)), queue: make(chan chan struct{}, *queue),
		istio: exporters.NewIstio(exporters.IstioLabels{
			DestinationWorkload:          os.Getenv("WORKLOAD"),
			DestinationWorkloadNamespace: os.Getenv("POD_NAMESPACE"),
			DestinationServiceName:       os.Getenv("SERVICE"),
			DestinationServiceNamespace:  os.Getenv("POD_NAMESPACE"),
		}, nil)}
	go s.work()
	mux := http.NewServeMux()
	mux.HandleFunc("/infer", s.infer)
	mux.HandleFunc("/gpu", s.gpu)
	mux.HandleFunc("/healthz/ready", s.readyz)
	mux.Handle("/stats/prometheus", exporters.Handler(s.istio))
	mux.HandleFunc("/healthz/live", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	time.AfterFunc(time.Duration(*loadMs*float64(time.Millisecond)), func() { s.ready.Store(true) })

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		s.ready.Store(false)
		log.Printf("draining: unready for %v, then finishing requests in flight", *drain)
		time.Sleep(*drain)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	log.Printf("serving on %s, %v per request", *addr, s.service)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
	log.Printf("stopped after %d requests", s.served.Load())
}
