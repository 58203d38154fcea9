package simulator

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/stat"
)

// ServiceStats are the ground-truth outcomes of one service's requests.
type ServiceStats struct {
	Service       string
	RTMaxMs       float64
	Offered       int64 // requests sent
	Completed     int64 // requests answered 200
	WithinSLO     int64 // answered within RT_max
	Failed        int64 // no endpoint (503)
	PodsStarted   int
	window        []float64 // latencies since the last Snapshot, ms
	offeredWindow int64
}

func (s *ServiceStats) observe(ms float64) {
	if math.IsInf(ms, 1) {
		s.Failed++
		s.window = append(s.window, ms)
		return
	}
	s.Completed++
	if ms <= s.RTMaxMs {
		s.WithinSLO++
	}
	s.window = append(s.window, ms)
}

// Attainment is the share of finished requests within RT_max (failures
// count as misses); 1 before any request finished.
func (s *ServiceStats) Attainment() float64 {
	n := s.Completed + s.Failed
	if n == 0 {
		return 1
	}
	return float64(s.WithinSLO) / float64(n)
}

// Snapshot is one service's state at a report interval.
type Snapshot struct {
	Service      string
	TraceSeconds float64
	Offered      int64   // requests offered since the last snapshot
	P98Ms        float64 // p98 latency of requests finished since the last snapshot
	Attainment   float64 // SLO attainment so far
	Ready        int     // instances accepting requests
}

// Snapshots returns per-service snapshots and resets the interval windows.
func (w *World) Snapshots() []Snapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.Clock.Processed()
	var out []Snapshot
	for i := range w.cfg.Services {
		s := w.stats[w.cfg.Services[i].Name]
		ready := 0
		for _, in := range w.svcs[s.Service].Instances() {
			if in.Server.Ready(now) {
				ready++
			}
		}
		out = append(out, Snapshot{Service: s.Service, TraceSeconds: now, Offered: s.offeredWindow,
			P98Ms: percentile(s.window, 0.98), Attainment: s.Attainment(), Ready: ready})
		s.window = s.window[:0]
		s.offeredWindow = 0
	}
	return out
}

// percentile is the q-quantile (q in [0, 1]) of v by nearest rank (the
// smallest value with at least the share q of v at or below it); 0 for
// none.
func percentile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return stat.Quantile(q, stat.Empirical, s, nil)
}

// Totals are the run's outcomes.
type Totals struct {
	Services                  map[string]ServiceStats
	GPUSeconds                map[string]float64 // GPU type -> trace seconds of GPUs hosting >= 1 instance
	IdenticalModelColocations int                // GPU-steps that saw two instances of one model identity (namespace/model, or cluster-wide)
	GPUMemoryOvercommits      int                // GPU-steps whose instances' GPU memory exceeded the GPU's
}

// Totals returns the run's outcomes so far.
func (w *World) Totals() Totals {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := Totals{Services: map[string]ServiceStats{}, GPUSeconds: map[string]float64{},
		IdenticalModelColocations: w.colocs, GPUMemoryOvercommits: w.overcom}
	for k, v := range w.stats {
		c := *v
		c.window = nil
		t.Services[k] = c
	}
	for k, v := range w.gpuSecs {
		t.GPUSeconds[k] = v
	}
	return t
}
