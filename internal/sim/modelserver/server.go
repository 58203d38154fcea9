// Package modelserver simulates a TF-Serving-style model server with dynamic
// batching, and an Istio/Envoy LEAST_REQUEST router in front of a set of
// such servers, entirely in simulated time.
//
// Time is a float64 in seconds of simulated time. Nothing reads the wall
// clock and all randomness comes from explicitly seeded math/rand/v2
// generators, so a simulation is deterministic.
//
// Batching follows TF-Serving's batching scheduler: once the first request
// of a batch is queued the server waits at most MaxBatchDelay
// (batch_timeout_micros) for the batch to fill up to BatchSize
// (max_batch_size); a full batch starts as soon as the GPU is free. With
// MaxBatchDelay 0 this is Triton's dynamic batching without queue delay:
// whenever the server is idle and requests wait, it runs one batch of all
// waiting requests up to BatchSize. A batch runs for its solo latency
// (BatchLatencies by batch size when given, else BatchLatency for any size)
// multiplied by the current interference factor (see package interference):
// one for every batch (SetFactor), or one per batch size (SetBatchFactors).
//
// The server is evaluated lazily: Submit only queues, and Advance,
// Outstanding and Submit process every batch whose start time is at or
// before the time they are given. Each request is touched O(1) times
// (amortised), so simulations scale to millions of requests.
package modelserver

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// Config describes one simulated model-server instance (one pod).
type Config struct {
	// Name identifies the instance, e.g. "default/resnet50-t4-abc"
	// (pod namespace/name). Required.
	Name string
	// Model is the served model's name, e.g. "resnet50". Required.
	Model string
	// BatchSize is the maximum batch size b (>= 1), TF-Serving
	// max_batch_size.
	BatchSize int
	// BatchLatency is the time in seconds to run one batch solo (the
	// profile's latency_ms/1000). A partial batch takes the same time
	// (conservative) unless BatchLatencies is set. Must be > 0 and finite.
	BatchLatency float64
	// BatchLatencies, when not empty, is the solo latency in seconds of a
	// batch of 1, 2, ..., BatchSize requests (one entry per size, each > 0
	// and finite), as a server profiled per batch size (for example
	// data/measurements/gpu-serving-h100 batch_latency_ms): a partial batch
	// then runs for its own size's latency, so that a lightly loaded server
	// keeps its GPU as busy as a real one does. Empty: every batch takes
	// BatchLatency.
	BatchLatencies []float64
	// MaxBatchDelay is the time in seconds the server waits for a batch to
	// fill once its first request is queued (TF-Serving
	// batch_timeout_micros/1e6), e.g. 0.005. Must be >= 0 and finite.
	MaxBatchDelay float64
	// ReadyAt is the simulated time in seconds from which the server
	// accepts requests (pod start plus model launch latency). Must be
	// finite.
	ReadyAt float64
	// QueueTimeout is how long, in seconds, a request may wait in the
	// queue before the server rejects it (Triton's dynamic-batching queue
	// policy, default_timeout_microseconds with timeout_action REJECT).
	// 0 means wait forever.
	QueueTimeout float64
	// ComputeShare caps the share of its GPU's time the server's batches
	// take, in (0, 1]; 0 is no cap. HAMi-core enforces a container's
	// nvidia.com/gpucores this way, by holding back its kernel launches
	// while it runs above its share (Project-HAMi/HAMi-core's utilization
	// watcher). Here the hold is per batch: a batch that runs d seconds
	// lets the next start no earlier than d/ComputeShare after it began,
	// so a lone batch runs at full speed and a saturated server at
	// ComputeShare of it.
	ComputeShare float64
}

// Validate checks the configuration; errors name the offending field.
func (c Config) Validate() error {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case c.Name == "":
		return errors.New("modelserver: Config.Name is empty")
	case c.Model == "":
		return fmt.Errorf("modelserver: %s: Config.Model is empty", c.Name)
	case c.BatchSize < 1:
		return fmt.Errorf("modelserver: %s: Config.BatchSize %d < 1", c.Name, c.BatchSize)
	case !finite(c.BatchLatency) || c.BatchLatency <= 0:
		return fmt.Errorf("modelserver: %s: Config.BatchLatency %g s must be finite and > 0", c.Name, c.BatchLatency)
	case !finite(c.MaxBatchDelay) || c.MaxBatchDelay < 0:
		return fmt.Errorf("modelserver: %s: Config.MaxBatchDelay %g s must be finite and >= 0", c.Name, c.MaxBatchDelay)
	case !finite(c.ReadyAt):
		return fmt.Errorf("modelserver: %s: Config.ReadyAt %g s must be finite", c.Name, c.ReadyAt)
	case !finite(c.QueueTimeout) || c.QueueTimeout < 0:
		return fmt.Errorf("modelserver: %s: Config.QueueTimeout %g s must be finite and >= 0", c.Name, c.QueueTimeout)
	case !finite(c.ComputeShare) || c.ComputeShare < 0 || c.ComputeShare > 1:
		return fmt.Errorf("modelserver: %s: Config.ComputeShare %g must be in [0, 1]", c.Name, c.ComputeShare)
	case len(c.BatchLatencies) > 0 && len(c.BatchLatencies) != c.BatchSize:
		return fmt.Errorf("modelserver: %s: Config.BatchLatencies has %d entries, want one per batch size 1..%d", c.Name, len(c.BatchLatencies), c.BatchSize)
	}
	for i, l := range c.BatchLatencies {
		if !finite(l) || l <= 0 {
			return fmt.Errorf("modelserver: %s: Config.BatchLatencies[%d] (batch of %d) %g s must be finite and > 0", c.Name, i, i+1, l)
		}
	}
	return nil
}

// Completion is one served request. Done-Arrival is the request's latency
// in seconds of simulated time (queueing + batching delay + batch run time).
type Completion struct {
	Arrival, Done float64 // seconds of simulated time
	// Rejected is set for a request that waited longer than QueueTimeout;
	// Done is then when it was rejected.
	Rejected bool
}

// Server is a simulated model server. It is not safe for concurrent use.
//
// All time-taking methods (Submit, Advance, Outstanding) must be called with
// non-decreasing times; a time earlier than one already seen (or NaN) is
// treated as the latest time seen.
type Server struct {
	cfg    Config
	factor float64
	// bySize, when not empty, is the interference factor per batch size
	// (SetBatchFactors); it overrides factor.
	bySize []float64

	now float64 // latest time seen by Submit/Advance/Outstanding

	// FIFO of queued arrival times: q[head:] are queued.
	q    []float64
	head int

	freeAt float64 // time the GPU finishes the last started batch
	// paceAt is the earliest start of the next batch under ComputeShare.
	paceAt    float64
	lastStart float64 // start of the last started batch
	lastN     int     // size of the last started batch

	pending []Completion // completions not yet returned by Advance/Drain

	// Busy intervals [starts[i], ends[i]) of started batches, sorted and
	// non-overlapping; cum[i] is the total busy time of intervals < i.
	starts, ends, cum []float64

	submitted, served, rejected, batches uint64
	soloWork                             float64 // summed solo latency of started batches, seconds
}

// NewServer validates cfg and returns an idle server with interference
// factor 1.
func NewServer(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Server{
		cfg:       cfg,
		factor:    1,
		now:       math.Inf(-1),
		freeAt:    cfg.ReadyAt,
		lastStart: math.Inf(-1),
		cum:       []float64{0},
	}, nil
}

// Config returns the server's configuration.
func (s *Server) Config() Config { return s.cfg }

// Name returns Config.Name.
func (s *Server) Name() string { return s.cfg.Name }

// Model returns Config.Model.
func (s *Server) Model() string { return s.cfg.Model }

// Factor returns the current interference factor (>= 1): the one
// SetFactor set or, after SetBatchFactors, a full batch's.
func (s *Server) Factor() float64 {
	if len(s.bySize) > 0 {
		return s.bySize[len(s.bySize)-1]
	}
	return s.factor
}

// BatchFactor returns the interference factor (>= 1) applied to a batch
// of n requests (1 <= n <= BatchSize).
func (s *Server) BatchFactor(n int) float64 {
	if len(s.bySize) > 0 && n >= 1 && n <= len(s.bySize) {
		return s.bySize[n-1]
	}
	return s.factor
}

// SetFactor sets the multiplicative interference factor (>= 1, see
// interference.Sharing.Inflations) applied to batches that start after the latest
// time given to Submit, Advance or Outstanding; batches already started keep
// their duration. Values that are NaN, infinite or below 1 are treated as 1.
func (s *Server) SetFactor(f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 1 {
		f = 1
	}
	s.factor = f
	s.bySize = s.bySize[:0]
}

// SetBatchFactors sets one interference factor per batch size, fs[n-1]
// for a batch of n requests, for a server whose solo latency depends on
// the batch size (Config.BatchLatencies): beside the same neighbours a
// short batch is inflated more than a long one, since it waits about as
// long for them (see interference.Sharing.Inflations). Like SetFactor it
// applies to batches that start after the latest time given to Submit,
// Advance or Outstanding, and a value that is NaN, infinite or below 1
// counts as 1. fs must have one entry per batch size 1..BatchSize;
// otherwise the factors are left as they were and the error says so. The
// server keeps its own copy; SetFactor replaces it.
func (s *Server) SetBatchFactors(fs []float64) error {
	if len(fs) != s.cfg.BatchSize {
		return fmt.Errorf("modelserver: %s: SetBatchFactors got %d factors, want one per batch size 1..%d", s.cfg.Name, len(fs), s.cfg.BatchSize)
	}
	s.bySize = s.bySize[:0]
	for _, f := range fs {
		if math.IsNaN(f) || math.IsInf(f, 0) || f < 1 {
			f = 1
		}
		s.bySize = append(s.bySize, f)
	}
	return nil
}

// Ready reports whether the server accepts requests at simulated time at
// (seconds): at >= Config.ReadyAt.
func (s *Server) Ready(at float64) bool { return at >= s.cfg.ReadyAt }

// Submitted returns the number of requests submitted so far.
func (s *Server) Submitted() uint64 { return s.submitted }

// Served returns the number of requests whose batch has started (their
// completion time is known).
func (s *Server) Served() uint64 { return s.served }

func (s *Server) clampTime(t float64) float64 {
	if math.IsNaN(t) || t < s.now {
		return s.now
	}
	return t
}

// Submit enqueues one request arriving at simulated time at (seconds).
// Batches starting at or before at are processed first, so a request
// arriving exactly when a batch starts joins the next batch. A request
// submitted before ReadyAt waits until ReadyAt (the router never does
// this; see Router.Pick).
func (s *Server) Submit(at float64) {
	at = s.clampTime(at)
	if math.IsInf(at, 0) {
		return // no meaningful arrival time
	}
	s.process(at)
	s.now = at
	if s.head > 0 && s.head >= len(s.q)/2 {
		// Compact the FIFO: amortised O(1) per request.
		n := copy(s.q, s.q[s.head:])
		s.q = s.q[:n]
		s.head = 0
	}
	s.q = append(s.q, at)
	s.submitted++
}

// Advance processes all batches that start at or before simulated time to
// (seconds), given the requests submitted so far, and returns the
// completions of requests whose batch has started since the previous call
// to Advance or Drain, in order of their batch start (Done may lie after
// to). The returned slice is owned by the caller.
func (s *Server) Advance(to float64) []Completion {
	out := s.AdvanceBorrow(to)
	s.pending = nil // the array is the caller's now
	return out
}

// AdvanceBorrow is Advance, but the returned slice stays the server's: it
// is valid only until the next call on s, which reuses its array, so a
// replay that reads each step's completions at once allocates none.
func (s *Server) AdvanceBorrow(to float64) []Completion {
	to = s.clampTime(to)
	s.process(to)
	if !math.IsInf(to, 0) {
		s.now = to
	}
	out := s.pending
	s.pending = s.pending[:0]
	return out
}

// Outstanding returns the number of requests queued or in service at
// simulated time at (seconds), after processing batches that start at or
// before at. Completions produced here are kept for the next Advance.
func (s *Server) Outstanding(at float64) int {
	at = s.clampTime(at)
	s.process(at)
	if !math.IsInf(at, 0) {
		s.now = at
	}
	n := len(s.q) - s.head
	if at >= s.lastStart && at < s.freeAt {
		n += s.lastN
	}
	return n
}

// Queued returns the number of requests waiting for a batch (not yet in
// service), as of the latest processed time.
func (s *Server) Queued() int { return len(s.q) - s.head }

// Drain finishes everything queued (the server is being removed): the
// remaining requests are batched by the usual rule (a trailing partial
// batch still waits MaxBatchDelay) and all completions not yet returned
// are returned.
func (s *Server) Drain() []Completion {
	s.process(math.Inf(1))
	out := s.pending
	s.pending = nil
	return out
}

// BusyTime returns the seconds of simulated time within [from, to) during
// which the GPU was running this server's batches. Only batches already
// started (processed by Submit/Advance/Outstanding/Drain) are counted, so
// call Advance(to) first; a batch in progress counts up to its end.
func (s *Server) BusyTime(from, to float64) float64 {
	if math.IsNaN(from) || math.IsNaN(to) || !(to > from) || len(s.starts) == 0 {
		return 0
	}
	// i: first interval ending after from; j: first interval starting at or after to.
	i := sort.SearchFloat64s(s.ends, math.Nextafter(from, math.Inf(1)))
	j := sort.SearchFloat64s(s.starts, to)
	if i >= j {
		return 0
	}
	busy := s.cum[j] - s.cum[i]
	if s.starts[i] < from {
		busy -= from - s.starts[i]
	}
	if s.ends[j-1] > to {
		busy -= s.ends[j-1] - to
	}
	if busy < 0 {
		busy = 0
	}
	return busy
}

// ForgetBusyBefore discards the busy history of batches that ended at or
// before t, seconds, so that a long replay keeps memory bounded; BusyTime
// over [from, to) with from >= t is unchanged. The history is compacted
// only once half of it can go, so each batch is copied O(1) times.
func (s *Server) ForgetBusyBefore(t float64) {
	i := sort.SearchFloat64s(s.ends, math.Nextafter(t, math.Inf(1)))
	if i == 0 || i < len(s.starts)/2 {
		return
	}
	// cum keeps its offset: BusyTime only takes differences of it.
	s.starts = s.starts[:copy(s.starts, s.starts[i:])]
	s.ends = s.ends[:copy(s.ends, s.ends[i:])]
	s.cum = s.cum[:copy(s.cum, s.cum[i:])]
}

// nextStart returns the start time of the next batch given the arrivals
// queued so far; ok is false when the queue is empty.
func (s *Server) nextStart() (start float64, ok bool) {
	n := len(s.q) - s.head
	if n == 0 {
		return 0, false
	}
	b := s.cfg.BatchSize
	trigger := s.q[s.head] + s.cfg.MaxBatchDelay
	if n >= b {
		trigger = min(trigger, s.q[s.head+b-1])
	}
	return max(s.freeAt, s.paceAt, trigger), true // builtins: as math.Max, inlined
}

// rejectExpired rejects queued requests that would wait longer than
// QueueTimeout for a batch starting at start; it reports whether any were.
func (s *Server) rejectExpired(start float64) bool {
	t := s.cfg.QueueTimeout
	if t <= 0 {
		return false
	}
	n := 0
	for s.head < len(s.q) && start-s.q[s.head] > t {
		a := s.q[s.head]
		s.pending = append(s.pending, Completion{Arrival: a, Done: a + t, Rejected: true})
		s.head++
		n++
	}
	if s.head == len(s.q) {
		s.q = s.q[:0]
		s.head = 0
	}
	s.rejected += uint64(n)
	return n > 0
}

// Batches returns the number of batches started so far.
func (s *Server) Batches() uint64 { return s.batches }

// SoloWork returns the summed solo latency, in seconds, of the batches
// started so far: each batch's BatchLatencies entry for its size (or
// BatchLatency), before the interference factor. Over an interval, its
// increase divided by that of Batches is the mean solo latency of the
// batches the server ran.
func (s *Server) SoloWork() float64 { return s.soloWork }

// Rejected returns the number of requests rejected by QueueTimeout.
func (s *Server) Rejected() uint64 { return s.rejected }

// process starts every batch whose start time is <= to.
func (s *Server) process(to float64) {
	for {
		start, ok := s.nextStart()
		if !ok || start > to {
			return
		}
		if s.rejectExpired(start) {
			continue // the queue's head changed: recompute the start
		}
		// Take up to b requests queued at or before start. The first one
		// always qualifies (start >= its arrival).
		limit := s.head + s.cfg.BatchSize
		if limit > len(s.q) {
			limit = len(s.q)
		}
		end := s.head + 1
		for end < limit && s.q[end] <= start {
			end++
		}
		n := end - s.head
		solo := s.cfg.BatchLatency
		if len(s.cfg.BatchLatencies) > 0 {
			solo = s.cfg.BatchLatencies[n-1]
		}
		dur := solo * s.BatchFactor(n)
		done := start + dur
		for _, a := range s.q[s.head:end] {
			s.pending = append(s.pending, Completion{Arrival: a, Done: done})
		}
		s.head = end
		if s.head == len(s.q) {
			s.q = s.q[:0]
			s.head = 0
		}
		s.served += uint64(n)
		s.batches++
		s.soloWork += solo
		s.lastStart, s.lastN, s.freeAt = start, n, done
		if c := s.cfg.ComputeShare; c > 0 && c < 1 {
			s.paceAt = start + dur/c
		}
		s.starts = append(s.starts, start)
		s.ends = append(s.ends, done)
		s.cum = append(s.cum, s.cum[len(s.cum)-1]+dur)
	}
}

// DeadlineQueueTimeout is a queue-policy timeout (Config.QueueTimeout), in
// seconds, for a service whose SLO is rtMaxMs: a request that has waited
// longer could no longer meet RT_max once its batch runs (two batch
// latencies, the running one and its own, plus the network's networkMs).
// The batch latency is soloMs inflated by the co-location the caller
// allows for (inflation >= 1). When that leaves no room the timeout is the
// one of the solo latency: a request that waited longer could not meet
// RT_max even alone, and a server that never rejected would serve every
// request behind a backlog late (an SSD service at RT_max 450 ms on a T4,
// 106 ms solo, about twice that beside a busy neighbour, queued for two
// minutes in make evaluate's Azure Functions replay). Under overload this
// sheds the excess instead of making every queued request late. It is 0
// (wait forever) when RT_max leaves no room even alone.
func DeadlineQueueTimeout(rtMaxMs, soloMs, inflation, networkMs float64) float64 {
	for _, l := range []float64{soloMs * max(inflation, 1), soloMs} {
		if t := (rtMaxMs - 2*l - networkMs) / 1000; t > 0 {
			return t
		}
	}
	return 0
}
