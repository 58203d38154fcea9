// Package e2emodelserver is the model server of `make e2e`'s real pods
// (hack/e2e/modelserver) as a library, so that tests can run it in
// process: a stand-in for an inference server on one GPU that serves in
// wall-clock time. Requests queue for one worker (one GPU executes one
// request at a time) that holds each for the service time, so its
// throughput is 1/service time and a burst of b requests on an idle
// server finishes after b service times.
//
// It speaks two protocols: plain HTTP (any method on /infer) and the
// KServe v2 / Triton inference protocol (/v2/health/ready,
// /v2/models/{model}/ready, POST /v2/models/{model}/infer), and serves
// the request metrics an Istio sidecar would report for the pod on
// /stats/prometheus.
package e2emodelserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/hetsev/hetsev/internal/sim/exporters"
)

// Config is a Server's.
type Config struct {
	// Service is the time one request holds the GPU (> 0).
	Service time.Duration
	// Queue bounds the requests waiting for the GPU (> 0); more wait for
	// a place in the queue.
	Queue int
	// Model is the model's name on the KServe v2 paths ("" : "model").
	Model string
	// Pod, Node, GPUIndex and VisibleDevices are what /gpu reports.
	Pod, Node, GPUIndex, VisibleDevices string
	// Istio labels the request metrics of /stats/prometheus.
	Istio exporters.IstioLabels
}

// Server is the model server. Its zero value is not usable; call New.
type Server struct {
	cfg    Config
	queue  chan chan struct{}
	ready  atomic.Bool
	served atomic.Int64
	istio  *exporters.Istio
	stop   chan struct{}
}

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

// New returns a Server that is not ready yet (SetReady) and whose worker
// runs until Close. It returns an error for a Service or Queue <= 0.
func New(cfg Config) (*Server, error) {
	if cfg.Service <= 0 || cfg.Queue <= 0 {
		return nil, fmt.Errorf("service time %v and queue %d: want both > 0", cfg.Service, cfg.Queue)
	}
	if cfg.Model == "" {
		cfg.Model = "model"
	}
	s := &Server{cfg: cfg, queue: make(chan chan struct{}, cfg.Queue), stop: make(chan struct{}),
		istio: exporters.NewIstio(cfg.Istio, nil)}
	go s.work()
	return s, nil
}

// SetReady sets what the readiness endpoints answer.
func (s *Server) SetReady(ready bool) { s.ready.Store(ready) }

// Served counts the requests answered so far.
func (s *Server) Served() int64 { return s.served.Load() }

// Close stops the worker; requests still queued never finish.
func (s *Server) Close() { close(s.stop) }

// work serves the queue in order. Each request finishes one service time
// after the later of its start and the previous finish, and the worker
// sleeps until that deadline: a late wake-up (a busy machine) delays a
// request but does not lower the throughput, which stays 1/service time.
func (s *Server) work() {
	var free time.Time
	for {
		var done chan struct{}
		select {
		case done = <-s.queue:
		case <-s.stop:
			return
		}
		now := time.Now()
		if free.Before(now) {
			free = now
		}
		free = free.Add(s.cfg.Service)
		time.Sleep(time.Until(free))
		close(done)
	}
}

// serve queues one request and waits for it; false when the client left.
func (s *Server) serve(r *http.Request) (time.Duration, bool) {
	start := time.Now()
	done := make(chan struct{})
	select {
	case s.queue <- done:
	case <-r.Context().Done():
		return 0, false
	}
	<-done
	s.served.Add(1)
	d := time.Since(start)
	s.istio.Observe(float64(d.Microseconds())/1000, http.StatusOK)
	return d, true
}

// Handler serves every endpoint.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/infer", s.infer)
	mux.HandleFunc("/gpu", s.gpu)
	mux.HandleFunc("/healthz/ready", s.readyz)
	mux.HandleFunc("/healthz/live", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.Handle("/stats/prometheus", exporters.Handler(s.istio))
	mux.HandleFunc("GET /v2/health/ready", s.readyz)
	mux.HandleFunc("GET /v2/health/live", func(w http.ResponseWriter, _ *http.Request) {})
	mux.HandleFunc("GET /v2/models/{model}/ready", s.v2Ready)
	mux.HandleFunc("POST /v2/models/{model}/infer", s.v2Infer)
	return mux
}

func (s *Server) infer(w http.ResponseWriter, r *http.Request) {
	d, ok := s.serve(r)
	if !ok {
		return
	}
	writeJSON(w, Inference{Pod: s.cfg.Pod, LatencyMs: float64(d.Microseconds()) / 1000})
}

func (s *Server) gpu(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, GPU{Pod: s.cfg.Pod, Node: s.cfg.Node, GPUIndex: s.cfg.GPUIndex,
		VisibleDevices: s.cfg.VisibleDevices, Served: s.served.Load()})
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	if !s.ready.Load() {
		http.Error(w, "not ready", http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ok"))
}

func (s *Server) v2Ready(w http.ResponseWriter, r *http.Request) {
	if r.PathValue("model") != s.cfg.Model {
		http.Error(w, fmt.Sprintf("unknown model %q", r.PathValue("model")), http.StatusNotFound)
		return
	}
	s.readyz(w, r)
}

// v2Tensor is a KServe v2 tensor, as much of it as the answer needs.
type v2Tensor struct {
	Name     string    `json:"name"`
	Shape    []int     `json:"shape"`
	Datatype string    `json:"datatype"`
	Data     []float64 `json:"data"`
}

// v2Request and v2Response are the KServe v2 infer bodies.
type v2Request struct {
	ID     string            `json:"id,omitempty"`
	Inputs []json.RawMessage `json:"inputs"`
}

type v2Response struct {
	ModelName string     `json:"model_name"`
	ID        string     `json:"id,omitempty"`
	Outputs   []v2Tensor `json:"outputs"`
}

// v2Infer checks the body is a KServe v2 request with inputs, serves it
// like /infer and answers one output tensor holding the latency, ms.
func (s *Server) v2Infer(w http.ResponseWriter, r *http.Request) {
	if r.PathValue("model") != s.cfg.Model {
		http.Error(w, fmt.Sprintf(`{"error":"unknown model %q"}`, r.PathValue("model")), http.StatusNotFound)
		return
	}
	var req v2Request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Inputs) == 0 {
		if err == nil {
			err = errors.New("no inputs")
		}
		http.Error(w, fmt.Sprintf(`{"error":%q}`, err.Error()), http.StatusBadRequest)
		return
	}
	d, ok := s.serve(r)
	if !ok {
		return
	}
	writeJSON(w, v2Response{ModelName: s.cfg.Model, ID: req.ID, Outputs: []v2Tensor{{
		Name: "latency_ms", Shape: []int{1}, Datatype: "FP64", Data: []float64{float64(d.Microseconds()) / 1000}}}})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// StartLocal runs a ready Server of cfg on a free port of 127.0.0.1, for
// tests, and returns its base URL and the function that stops it.
func StartLocal(cfg Config) (url string, stop func(), err error) {
	s, err := New(cfg)
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.Close()
		return "", nil, err
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	s.SetReady(true)
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close(); s.Close() }, nil
}
