package evaluate

import (
	"math"
)

// windowSlack widens every batch window by 1 ns, seconds: arrival times and
// the simulated response times are float64 seconds of a trace up to ~1e6 s
// (an ulp of about 1e-10 s), so two arrivals the replay answers in one
// batch may look up to a few ulps further apart than RT_max allows. A
// wider window can only lower the count, so the bound stays valid.
const windowSlack = 1e-9

// batchCounter counts, online, the fewest batches a service's measured
// arrivals need when a batch holds at most cap requests whose arrivals lie
// within window seconds of each other (bound.go says why those are the
// limits, and proves the count is the fewest). It is fed the arrivals in
// time order (Offered gives each trace second's sorted, and the evaluator
// steps the seconds in order); it keeps O(1) state, so it counts the
// Twitter replay's ~1.4e8 arrivals without storing them. The zero value
// counts nothing (off).
type batchCounter struct {
	window float64 // w: the widest span of one batch's arrivals, s
	cap    int     // b: the most requests in one batch (0: off)
	from   float64 // the first measured second: earlier arrivals do not count, s

	open     float64 // arrival that opened the current batch, s
	members  int     // requests in the current batch (0 before the first)
	batches  int64   // batches opened so far: N_greedy
	arrivals int64   // measured arrivals seen
	last     float64 // the latest arrival seen, s
	// unsorted says an arrival came before one already counted: the
	// count is then not the greedy's and must not be used.
	unsorted bool
}

// newBatchCounter returns a counter of batches of at most cap requests
// whose arrivals lie within window seconds, over arrivals at or after from
// (seconds). cap < 1 or a window below 0 or not finite turns it off.
func newBatchCounter(window float64, cap int, from float64) batchCounter {
	if cap < 1 || !(window >= 0) || math.IsInf(window, 0) {
		return batchCounter{}
	}
	return batchCounter{window: window, cap: cap, from: from}
}

// add counts the arrivals at (seconds, sorted, later than every arrival
// added before): the greedy opens a batch at the earliest arrival not yet
// in one and puts in it every later arrival within window of that one, up
// to cap; the next arrival opens the next batch.
func (c *batchCounter) add(at []float64) {
	if c.cap < 1 {
		return
	}
	for _, a := range at {
		if a < c.from {
			continue
		}
		if c.arrivals > 0 && a < c.last {
			c.unsorted = true
		}
		c.last = a
		c.arrivals++
		if c.members == 0 || c.members >= c.cap || a > c.open+c.window+windowSlack {
			c.batches++
			c.open, c.members = a, 0
		}
		c.members++
	}
}

// batchCount is one service's count from one replay: the fewest batches
// N_greedy its measured arrivals need, and those arrivals.
type batchCount struct {
	Batches, Arrivals int64
}

// batchLimits are the window w (seconds) and cap b of service s's batches
// on cfg's cluster: a batch that answers its requests within RT_max on a
// type i runs at least L_i (the least latency of any batch point its
// servers can run) after its latest member arrives and must end by its
// earliest member's arrival + RT_max - network, so its arrivals span at
// most RT_max - network - L_i (bound.go). It holds at most b_i, the
// largest batch of type i. Over the feasible types (L_i + network <=
// RT_max) w is the widest and b the largest, so a batch on any of them
// keeps within both. ok is false when no type of the cluster is feasible
// for s.
func batchLimits(cfg *Config, s Service) (window float64, cap int, ok bool) {
	window = math.Inf(-1)
	for _, t := range feasibleTypes(cfg, s) {
		window = math.Max(window, (s.RTMaxMs-cfg.NetworkMs)/1000-t.latency)
		cap = max(cap, t.batch)
		ok = true
	}
	return max(window, 0), cap, ok
}
