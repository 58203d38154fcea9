// Command e2e-modelserver is the model server of `make e2e`'s real pods
// (internal/sim/e2emodelserver): a stand-in for an inference server on one
// GPU that serves in wall-clock time, over plain HTTP (/infer) and the
// KServe v2 protocol (/v2/models/MODEL/infer). /healthz/ready answers 200
// once the model is "loaded" (--load-ms after start) and until SIGTERM;
// /gpu reports the GPU the container was given: the downward-API env var
// of the hetsev.io/gpu-index annotation (annotation mode) and
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
	"errors"
	"flag"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hetsev/hetsev/internal/sim/e2emodelserver"
	"github.com/hetsev/hetsev/internal/sim/exporters"
)

func main() {
	addr := flag.String("listen", ":8080", "address to serve on")
	serviceMs := flag.Float64("service-ms", 20, "time one request holds the GPU, ms (> 0)")
	loadMs := flag.Float64("load-ms", 2000, "time from start to ready (model load), ms (>= 0)")
	drain := flag.Duration("drain-delay", 3*time.Second, "time between SIGTERM and closing the listener, while endpoints drop the pod")
	queue := flag.Int("queue", 1024, "requests waiting for the GPU at most (> 0)")
	model := flag.String("model", "model", "the model's name on the KServe v2 paths")
	flag.Parse()
	if *serviceMs <= 0 || *loadMs < 0 || *queue <= 0 || *drain < 0 {
		log.Fatalf("--service-ms=%v --load-ms=%v --queue=%d --drain-delay=%v: want service-ms > 0, load-ms >= 0, queue > 0, drain-delay >= 0",
			*serviceMs, *loadMs, *queue, *drain)
	}
	s, err := e2emodelserver.New(e2emodelserver.Config{
		Service: time.Duration(*serviceMs * float64(time.Millisecond)), Queue: *queue, Model: *model,
		Pod: os.Getenv("POD_NAME"), Node: os.Getenv("NODE_NAME"),
		GPUIndex: os.Getenv("HETSEV_GPU_INDEX"), VisibleDevices: os.Getenv("NVIDIA_VISIBLE_DEVICES"),
		Istio: exporters.IstioLabels{
			DestinationWorkload:          os.Getenv("WORKLOAD"),
			DestinationWorkloadNamespace: os.Getenv("POD_NAMESPACE"),
			DestinationServiceName:       os.Getenv("SERVICE"),
			DestinationServiceNamespace:  os.Getenv("POD_NAMESPACE"),
		}})
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Addr: *addr, Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	time.AfterFunc(time.Duration(*loadMs*float64(time.Millisecond)), func() { s.SetReady(true) })

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		s.SetReady(false)
		log.Printf("draining: unready for %v, then finishing requests in flight", *drain)
		time.Sleep(*drain)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	log.Printf("serving on %s, %v per request", *addr, time.Duration(*serviceMs*float64(time.Millisecond)))
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
	log.Printf("stopped after %d requests", s.Served())
}
