package replay

import (
	"math"

	"github.com/hetsev/hetsev/internal/sim/modelserver"
	"github.com/hetsev/hetsev/pkg/interference"
)

// Engine replays services' load on their simulated servers. It is not safe
// for concurrent use.
type Engine struct {
	rates      []float64
	colocation interference.Colocation
	mode       interference.SharingMode
	services   []*Service
	step       uint64 // Step count, to visit each GPU once per step
	// excessScale scales every co-location slowdown's excess over 1
	// (SetExcessScale); 0 and 1 replay the model as it is.
	excessScale float64

	// scratch, reused every second
	ready   []*modelserver.Server
	members []interference.Instance
	factors []float64
}

// New returns an engine without services for a trace of rates (total
// requests/s per trace second, which services without rates of their own
// share: Service.Share and Service.Rates) whose co-located instances slow each other
// down by the co-location model m on GPUs shared in mode ("" is
// time-slicing).
func New(rates []float64, m interference.Colocation, mode interference.SharingMode) *Engine {
	if mode == "" {
		mode = interference.SharingTimeSlicing
	}
	return &Engine{rates: rates, colocation: m, mode: mode}
}

// SetExcessScale makes the replayed slowdown of a co-located instance
// 1 + k (f - 1) where the co-location model predicts f: a ground truth
// that differs from the model the decisions read (k > 1: interference
// worse than predicted). k must be > 0; 1 is the model itself.
func (e *Engine) SetExcessScale(k float64) { e.excessScale = k }

// truth is factor f as replayed (SetExcessScale).
func (e *Engine) truth(f float64) float64 {
	if e.excessScale <= 0 || e.excessScale == 1 || f <= 1 {
		return f
	}
	return 1 + e.excessScale*(f-1)
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

// interfere sets the latency factor of every instance on a shared GPU to
// its inflation by the co-location model, from the busy shares of the
// GPU's instances (its own included) in the previous step: each is a
// production profile's CUDA-graph server (Colocation.ProfileInstance) whose
// solo batch latency is its server's BatchLatency, the profile's latency on
// the GPU type it runs on. The model's time slice and switch cost are the
// H100's; on T4 and V100 they are applied unmeasured. An instance alone on
// its GPU runs at factor 1.
//
// A server with a solo latency per batch size (Config.BatchLatencies, as
// serving-check gives it from a measurement file, and the evaluator's
// where the profile has smaller measured batches; the demo's have none)
// enters the model with the mean solo latency of the batches it ran in
// the previous step (its full batch's as the occupancy's reference,
// Instance.FullBatchLatency), and gets one factor per batch size
// (Server.SetBatchFactors): its own batch of that size beside its
// neighbours as they ran. A mean over its batch sizes
// would feed back through its own batches (a larger factor, larger
// batches, a smaller factor in the next step) and make the factor swing
// from step to step.
func (e *Engine) interfere() {
	e.step++
	for _, s := range e.services {
		for _, in := range s.insts {
			g := in.gpu
			if g.seen == e.step {
				continue
			}
			g.seen = e.step
			if len(g.insts) == 1 {
				in.Server.SetFactor(1)
				continue
			}
			ms := e.members[:0]
			for _, o := range g.insts {
				m := e.colocation.ProfileInstance(e.mode, o.Server.Model(), o.util, o.solo)
				if lat := o.Server.Config().BatchLatencies; len(lat) > 0 {
					m.FullBatchLatency = lat[len(lat)-1]
				}
				ms = append(ms, m)
			}
			e.members = ms
			f, err := e.colocation.Sharing.Inflations(e.mode, ms)
			for i, o := range g.insts {
				if err != nil { // servers validate BatchLatency > 0: cannot happen
					o.Server.SetFactor(1)
					continue
				}
				if lat := o.Server.Config().BatchLatencies; len(lat) > 0 {
					if o.Server.SetBatchFactors(e.batchFactors(ms, i, lat)) == nil {
						continue
					} // one factor per size by construction: cannot happen
				}
				o.Server.SetFactor(e.truth(f[i]))
			}
		}
	}
}

// batchFactors returns member i's inflation for each of its batch sizes:
// the co-location model with i's solo latency that of a batch of that size
// (lat, by size), its neighbours as they ran in the last step.
func (e *Engine) batchFactors(ms []interference.Instance, i int, lat []float64) []float64 {
	e.factors = e.factors[:0]
	mean := ms[i].BatchLatency
	for k, l := range lat {
		if k > 0 && l == lat[k-1] { // sizes charged one measured latency
			e.factors = append(e.factors, e.factors[k-1])
			continue
		}
		ms[i].BatchLatency = l
		f, err := e.colocation.Sharing.Inflations(e.mode, ms)
		if err != nil { // servers validate BatchLatencies > 0: cannot happen
			e.factors = append(e.factors, 1)
			continue
		}
		e.factors = append(e.factors, e.truth(f[i]))
	}
	ms[i].BatchLatency = mean
	return e.factors
}

// offer routes s's arrivals in [t0, t1), second by second, each like
// Envoy's LEAST_REQUEST balancer among the instances ready at its arrival;
// one that finds none is unserved. A second's arrivals are drawn once, for
// the whole second, at the first step that reaches it (Service.second), and
// each step takes those in its part: the arrivals do not depend on how
// steps cut the seconds. (Drawn per part, a part's count was its share of
// the second's mean rounded, so short steps made arrivals more regular
// than the trace's seconds and shortened the tails of servers near
// capacity.)
func (e *Engine) offer(s *Service, t0, t1 float64) {
	for sec := math.Floor(t0); sec < t1; sec++ {
		lo, hi := math.Max(sec, t0), math.Min(sec+1, t1)
		rate, ok := s.rate(e.rates, int(sec))
		if hi <= lo || sec < 0 || !ok {
			continue
		}
		at := s.second(int(sec), rate, lo, hi)
		if s.Offered != nil {
			s.Offered(int(sec), at)
		}
		// The router skips servers not ready at each arrival; leaving out
		// those not ready within the second only saves it the work.
		e.ready = e.ready[:0]
		for _, in := range s.insts {
			if in.Server.Config().ReadyAt < hi {
				e.ready = append(e.ready, in.Server)
			}
		}
		for _, a := range at {
			srv := s.Router.Pick(a, e.ready)
			if srv == nil {
				if s.Unserved != nil {
					s.Unserved(a)
				}
				continue
			}
			srv.Submit(a)
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
			in.finish(in.Server.AdvanceBorrow(t1)) // done reads them before the next step
			in.busy = in.Server.BusyTime(t0, t1)
			in.util = in.busy / dt
			in.recordSolo()
			in.Server.ForgetBusyBefore(t0) // the next step asks from t1 on
		}
	}
}
