package simulator

import (
	"fmt"
	"time"

	"github.com/hetsev/hetsev/internal/sim/trace"
	"github.com/hetsev/hetsev/pkg/interference"
)

// Ports the simulated containers listen on, as the real ones do: the Istio
// sidecar's merged Prometheus endpoint and dcgm-exporter's.
const (
	IstioPort = 15020
	IstioPath = "/stats/prometheus"
	DCGMPort  = 9400
	DCGMPath  = "/metrics"
	// LabelDCGMExporter selects dcgm-exporter pods (app=nvidia-dcgm-exporter).
	LabelDCGMExporter = "nvidia-dcgm-exporter"
)

// Service is one ModelService the load generator sends requests to.
type Service struct {
	Namespace string
	Name      string  // ModelService name (pods carry hetsev.io/modelservice=Name)
	Model     string  // hetsev.io/model
	Share     float64 // fraction of the trace's requests, e.g. 0.6
	RTMaxMs   float64 // SLO response-time threshold, ms
	BatchSize int
	// DeadlineAware gives each instance a queue-policy timeout (Triton's
	// dynamic batcher default_timeout_microseconds with REJECT) so that a
	// request it serves still finishes within RT_max; a request that cannot
	// is rejected with 503. Without it an overload makes every queued
	// request late, not just the excess.
	DeadlineAware bool
	// PerProduct maps a GFD product label to the instance's profile there.
	PerProduct map[string]InstanceProfile
}

// InstanceProfile is what the simulation needs of a profile.
type InstanceProfile struct {
	GPUType       string
	LatencyMs     float64 // one batch solo, ms
	LaunchSeconds float64 // from Running to serving, trace seconds
	GPUMemoryMiB  int64
	PriceUSDPerH  float64
	// SmallBatchMs is the solo latency of a batch of b below the
	// service's BatchSize, ms (spec.profiles[].smallBatches): a pod
	// annotated AnnotationMaxBatchSize b runs batches of at most b at it.
	SmallBatchMs map[int]float64
}

// Config configures a World.
type Config struct {
	Services []Service
	// Rates is the total arrival rate per trace second, requests/s.
	Rates trace.Rates
	// Factor is the time compression: trace seconds per wall second.
	Factor float64
	// Tick is the wall time between simulation steps (default 50 ms).
	Tick time.Duration
	// MaxBatchDelay is the servers' batch timeout, trace seconds (default 5 ms).
	MaxBatchDelay float64
	// NetworkMs is added to every request's latency (client-server round
	// trip inside the cluster; default 1 ms, an estimate).
	NetworkMs float64
	// Colocation is the co-location model that slows instances sharing a
	// GPU (zero value: interference.FittedColocation).
	Colocation interference.Colocation
	// GPUSharing is the GPUs' sharing mode ("" is time-slicing, CUDA's
	// default and the device plugin's time-slicing; or mps).
	GPUSharing interference.SharingMode
	Seed       uint64
	// MeasureFrom is the trace time from which requests and GPU time count
	// in the results; earlier seconds warm the system up.
	MeasureFrom float64
}

func (c *Config) defaults() error {
	if len(c.Services) == 0 {
		return fmt.Errorf("simulator: no services")
	}
	// The simulated load, stats and Totals are kept per ModelService name,
	// so two services of one name (in two namespaces) would share them.
	seen := map[string]string{}
	for _, s := range c.Services {
		if ns, dup := seen[s.Name]; dup {
			return fmt.Errorf("simulator: services %s/%s and %s/%s share the name %q: the simulator keeps each service's load and outcomes by name", ns, s.Name, s.Namespace, s.Name, s.Name)
		}
		seen[s.Name] = s.Namespace
	}
	if len(c.Rates) == 0 {
		return fmt.Errorf("simulator: empty trace")
	}
	if !(c.Factor > 0) {
		return fmt.Errorf("simulator: Factor must be > 0")
	}
	if c.Tick <= 0 {
		c.Tick = 50 * time.Millisecond
	}
	if c.MaxBatchDelay <= 0 {
		c.MaxBatchDelay = 0.005
	}
	if c.NetworkMs <= 0 {
		c.NetworkMs = 1
	}
	if c.Colocation.Source == "" && c.Colocation.Occupancy == nil {
		c.Colocation = interference.FittedColocation()
	}
	if c.GPUSharing == "" {
		c.GPUSharing = interference.SharingTimeSlicing
	}
	if _, err := interference.ParseSharingMode(string(c.GPUSharing)); err != nil {
		return fmt.Errorf("simulator: GPUSharing: %w", err)
	}
	if err := c.Colocation.Validate(); err != nil {
		return fmt.Errorf("simulator: Colocation: %w", err)
	}
	return nil
}
