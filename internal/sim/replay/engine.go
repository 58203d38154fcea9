package replay

import (
	"math"

	"github.com/hetsev/hetsev/internal/sim/modelserver"
	"github.com/hetsev/hetsev/pkg/interference"
)

// Engine replays services' load on their simulated servers. It is not safe
// for concurrent use.
type Engine struct {
	rates        []float64
	interference interference.Model
	services     []*Service

	// scratch, reused every second
	times      []float64
	ready      []*modelserver.Server
	neighbours []interference.Neighbour
}

// New returns an engine without services for a trace of rates (total
// requests/s per trace second) whose co-located instances slow each other
// down by m.
func New(rates []float64, m interference.Model) *Engine {
	return &Engine{rates: rates, interference: m}
}

// Services are the services in the order they were added. The slice is the
// engine's: do not modify it.
func (e *Engine) Services() []*Service { return e.services }

// Step replays trace time [t0, t1): interference from the previous step,
// the arrivals, the servers advanced to t1 and their busy time. Steps must
// follow each other (the next t0 is this t1); a Step with t1 <= t0 does
// nothing.
func (e *Engine) Step(t0, t1 float64) {
	if !(t1 > t0) {
		return
	}
	e.interfere()
	for _, s := range e.services {
		e.offer(s, t0, t1)
	}
	e.advance(t0, t1)
}

// interfere sets each instance's latency factor from its GPU neighbours'
// busy share in the previous step; an instance alone on its GPU runs at
// factor 1.
func (e *Engine) interfere() {
	for _, s := range e.services {
		for _, in := range s.insts {
			nb := e.neighbours[:0]
			for _, o := range in.gpu.insts {
				if o != in {
					nb = append(nb, interference.Neighbour{Model: o.Server.Model(), Utilization: o.util})
				}
			}
			in.Server.SetFactor(e.interference.Factor(in.Server.Model(), nb))
			e.neighbours = nb
		}
	}
}

// offer draws s's arrivals in [t0, t1), second by second, and routes each
// like Envoy's LEAST_REQUEST balancer among the instances ready at its
// arrival; one that finds none is unserved.
func (e *Engine) offer(s *Service, t0, t1 float64) {
	for sec := math.Floor(t0); sec < t1; sec++ {
		lo, hi := math.Max(sec, t0), math.Min(sec+1, t1)
		if hi <= lo || sec < 0 || int(sec) >= len(e.rates) {
			continue
		}
		mean := e.rates[int(sec)] * s.Share * (hi - lo)
		n := int(mean)
		if s.Arrivals.Float64() < mean-float64(n) {
			n++
		}
		e.times = modelserver.AppendPoissonArrivals(e.times[:0], s.Arrivals, n, lo, hi)
		if s.Offered != nil {
			s.Offered(int(sec), e.times)
		}
		// The router skips servers not ready at each arrival; leaving out
		// those not ready within the second only saves it the work.
		e.ready = e.ready[:0]
		for _, in := range s.insts {
			if in.Server.Config().ReadyAt < hi {
				e.ready = append(e.ready, in.Server)
			}
		}
		for _, at := range e.times {
			srv := s.Router.Pick(at, e.ready)
			if srv == nil {
				if s.Unserved != nil {
					s.Unserved(at)
				}
				continue
			}
			srv.Submit(at)
		}
	}
	clear(e.ready) // do not retain servers between steps
}

// advance runs every server to t1, hands over its completions and records
// its busy time in [t0, t1).
func (e *Engine) advance(t0, t1 float64) {
	dt := t1 - t0
	for _, s := range e.services {
		for _, in := range s.insts {
			in.finish(in.Server.Advance(t1))
			in.busy = in.Server.BusyTime(t0, t1)
			in.util = in.busy / dt
			in.Server.ForgetBusyBefore(t0) // the next step asks from t1 on
		}
	}
}
