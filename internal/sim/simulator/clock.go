// Package simulator is hetsev's stand-in for GPUs and clients in `make demo`
// and the integration tests: every Running model-server pod becomes a
// simulated server (internal/sim/modelserver) listening on its own pod IP and
// exporting Istio-format metrics, every GPU node's dcgm-exporter pod exports
// DCGM-format metrics, and a load generator replays a trace against them in
// compressed time. Latency follows each instance's profile, batch size,
// queueing and co-location interference (pkg/interference).
//
// The replay itself (arrivals, routing, servers, interference, busy time)
// is internal/sim/replay's, which the evaluator runs too; this package
// follows the pods on the API server, serves the metrics endpoints and
// compresses wall-clock time.
package simulator

import (
	"sync/atomic"
	"time"
)

// Clock maps wall time to trace time: one wall second is Factor trace
// seconds. Exporters stamp samples with SimTime, the trace time up to which
// the simulation has run, so rates computed from them are in requests per
// trace second.
type Clock struct {
	Factor    float64
	wallStart time.Time
	base      time.Time
	processed atomic.Uint64 // math.Float64bits of trace seconds processed
}

// NewClock starts a clock now.
func NewClock(factor float64) *Clock {
	now := time.Now()
	return &Clock{Factor: factor, wallStart: now, base: now}
}

// restart makes trace time 0 now; call before the replay starts.
func (c *Clock) restart() { c.wallStart = time.Now() }

// Elapsed is the trace time that has passed on the wall, seconds.
func (c *Clock) Elapsed() float64 { return time.Since(c.wallStart).Seconds() * c.Factor }

// Processed is the trace time the simulation has reached, seconds.
func (c *Clock) Processed() float64 { return float64frombits(c.processed.Load()) }

func (c *Clock) setProcessed(t float64) { c.processed.Store(float64bits(t)) }

// SimTime is the simulated wall-clock instant of Processed.
func (c *Clock) SimTime() time.Time {
	return c.base.Add(time.Duration(c.Processed() * float64(time.Second)))
}
