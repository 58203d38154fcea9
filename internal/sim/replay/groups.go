package replay

import (
	"math/rand/v2"

	"github.com/hetsev/hetsev/internal/sim/modelserver"
)

// Service is one service's load and its instances.
type Service struct {
	// Share is the service's fraction of the trace's rate (the rates the
	// engine was made with), when Rates is nil.
	Share float64
	// Rates, when not nil, is the service's own arrival rate per trace
	// second, requests/s, in place of Share of the trace's rate: each
	// service of a multi-tenant trace has its own. Seconds past its end
	// offer nothing.
	Rates []float64
	// Arrivals draws each second's number of arrivals and their times;
	// Router picks the instance of each. Services may share them (the
	// demo's world does): the engine draws service by service, in the
	// order they were added.
	Arrivals *rand.Rand
	Router   *modelserver.Router
	// Offered, if set, is given the arrival times of trace second sec (of
	// the part of it in the step), sorted, before they are routed; it is
	// called for seconds without arrivals too. The slice is reused once
	// Offered returns.
	Offered func(sec int, at []float64)
	// Unserved, if set, is called for each request that finds no ready
	// instance: the sidecar answers 503 at once.
	Unserved func(at float64)

	insts []*Instance
	// The arrivals of trace second sec, sorted; next is the first not yet
	// offered. drawn is false before the first second is drawn.
	drawn bool
	sec   int
	times []float64
	next  int
}

// rate is s's arrival rate in trace second sec, requests/s, given the
// trace's total rates: its own (Rates) or its Share of the trace's; ok is
// false past the end of the series it reads.
func (s *Service) rate(total []float64, sec int) (r float64, ok bool) {
	if s.Rates != nil {
		if sec < 0 || sec >= len(s.Rates) {
			return 0, false
		}
		return s.Rates[sec], true
	}
	if sec < 0 || sec >= len(total) {
		return 0, false
	}
	return total[sec] * s.Share, true
}

// second returns s's arrivals in [lo, hi), a part of trace second sec in
// which its arrival rate is mean (requests/s), sorted; the slice is reused
// by the next call. The second's arrivals are drawn at its first call: mean
// rounded at random to a count, at Poisson times within the second. Parts
// must follow each other; arrivals before lo (in a part no step offered)
// are dropped.
func (s *Service) second(sec int, mean, lo, hi float64) []float64 {
	if !s.drawn || s.sec != sec {
		n := int(mean)
		if s.Arrivals.Float64() < mean-float64(n) {
			n++
		}
		s.times = modelserver.AppendPoissonArrivals(s.times[:0], s.Arrivals, n, float64(sec), float64(sec+1))
		s.drawn, s.sec, s.next = true, sec, 0
	}
	for s.next < len(s.times) && s.times[s.next] < lo {
		s.next++
	}
	end := s.next
	for end < len(s.times) && s.times[end] < hi {
		end++
	}
	out := s.times[s.next:end]
	s.next = end
	return out
}

// Instances are the service's instances, oldest first. The slice is the
// engine's: do not modify it.
func (s *Service) Instances() []*Instance { return s.insts }

// GPU is the instances placed on one GPU, in the order they were added.
// The zero value is a GPU without instances.
type GPU struct {
	insts []*Instance
	seen  uint64 // the engine's step in which interference was last set
}

// Instances are the GPU's instances, oldest first. The slice is the
// engine's: do not modify it.
func (g *GPU) Instances() []*Instance { return g.insts }

// Busy is the GPU's busy time in the last step, seconds: the sum of its
// instances' (Instance.Busy), in the order they were added. Co-located
// instances' batches may overlap, so it can exceed the step's length.
func (g *GPU) Busy() float64 {
	b := 0.0
	for _, in := range g.insts {
		b += in.busy
	}
	return b
}

// Instance is one simulated model server of a service, placed on a GPU.
type Instance struct {
	Server *modelserver.Server

	svc  *Service
	gpu  *GPU
	done func([]modelserver.Completion)
	busy float64 // busy seconds in the last step
	util float64 // busy share of the last step
	// solo is the solo latency, seconds, of the batches the server ran:
	// its BatchLatency, or, for a server with a latency per batch size
	// (BatchLatencies), the mean solo latency of its batches in the last
	// step that had any (the full batch's before the first).
	solo float64
	// batches and work are the server's Batches and SoloWork at the end
	// of the last step.
	batches uint64
	work    float64
}

// recordSolo updates solo from the batches the server started since the
// last step.
func (in *Instance) recordSolo() {
	cfg := in.Server.Config()
	b, w := in.Server.Batches(), in.Server.SoloWork()
	if len(cfg.BatchLatencies) > 0 && b > in.batches {
		in.solo = (w - in.work) / float64(b-in.batches)
	}
	in.batches, in.work = b, w
}

// Service is the instance's service.
func (in *Instance) Service() *Service { return in.svc }

// GPU is the GPU the instance runs on.
func (in *Instance) GPU() *GPU { return in.gpu }

// Busy is the time, seconds, the instance's batches ran in the last step.
func (in *Instance) Busy() float64 { return in.busy }

// Util is the instance's busy share of the last step, in [0, 1]; 0 before
// its first step. Its GPU neighbours' latency in the next step depends on
// it.
func (in *Instance) Util() float64 { return in.util }

// AddService adds a service; Step offers arrivals to services in the order
// they were added. It returns s.
func (e *Engine) AddService(s *Service) *Service {
	e.services = append(e.services, s)
	return s
}

// Add adds server srv as an instance of s on gpu. done, if not nil, is
// given the server's completions as Step and Remove collect them; the
// slice Step passes is valid only during the call (the server reuses it).
func (e *Engine) Add(s *Service, gpu *GPU, srv *modelserver.Server, done func([]modelserver.Completion)) *Instance {
	in := &Instance{Server: srv, svc: s, gpu: gpu, done: done, solo: srv.Config().BatchLatency,
		batches: srv.Batches(), work: srv.SoloWork()}
	if lat := srv.Config().BatchLatencies; len(lat) > 0 {
		in.solo = lat[len(lat)-1]
	}
	s.insts = append(s.insts, in)
	gpu.insts = append(gpu.insts, in)
	return in
}

// Remove takes in out of its service and GPU once its queued requests are
// served (graceful termination): their completions go to its callback.
func (e *Engine) Remove(in *Instance) {
	in.finish(in.Server.Drain())
	in.svc.insts = without(in.svc.insts, in)
	in.gpu.insts = without(in.gpu.insts, in)
}

// Drain serves every instance's queued requests, as at the end of a
// replay, and hands their completions to the instances' callbacks; the
// instances stay.
func (e *Engine) Drain() {
	for _, s := range e.services {
		for _, in := range s.insts {
			in.finish(in.Server.Drain())
		}
	}
}

func (in *Instance) finish(done []modelserver.Completion) {
	if in.done != nil && len(done) > 0 {
		in.done(done)
	}
}

// without removes in from list, keeping the order, without reusing list's
// array (a caller may be iterating it).
func without(list []*Instance, in *Instance) []*Instance {
	for i, x := range list {
		if x == in {
			return append(list[:i:i], list[i+1:]...)
		}
	}
	return list
}
