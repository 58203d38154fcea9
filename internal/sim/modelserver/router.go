package modelserver

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Router balances requests over model servers like Istio/Envoy's
// LEAST_REQUEST load balancer (the default "power of two choices"
// variant): it draws two distinct random candidates among the ready
// servers and sends the request to the one with fewer outstanding
// requests. Faster instances drain their queues sooner and therefore
// receive more traffic. A Router is deterministic for a given seed and is
// not safe for concurrent use.
type Router struct {
	rng   *rand.Rand
	ready []*Server
}

// NewRouter returns a router whose random choices are seeded by seed.
func NewRouter(seed uint64) *Router {
	return &Router{rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))}
}

// Pick chooses among the servers ready at simulated time at (seconds):
// two distinct random candidates, and the one with fewer Outstanding(at)
// wins (ties: the first drawn). With one ready server it returns it; with
// none it returns nil. Nil entries are ignored. Pick advances the two
// candidates to at, so at must be non-decreasing per server.
func (r *Router) Pick(at float64, servers []*Server) *Server {
	ready := servers // most calls: every server is ready, none nil
	for k, s := range servers {
		if s == nil || !s.Ready(at) {
			r.ready = append(r.ready[:0], servers[:k]...)
			for _, s := range servers[k+1:] {
				if s != nil && s.Ready(at) {
					r.ready = append(r.ready, s)
				}
			}
			defer clear(r.ready) // do not retain servers between calls
			ready = r.ready
			break
		}
	}
	switch n := len(ready); n {
	case 0:
		return nil
	case 1:
		return ready[0]
	default:
		i := r.rng.IntN(n)
		j := r.rng.IntN(n - 1)
		if j >= i {
			j++
		}
		a, b := ready[i], ready[j]
		if b.Outstanding(at) < a.Outstanding(at) {
			return b
		}
		return a
	}
}

// PoissonArrivals returns count arrival times (seconds of simulated time)
// independently and uniformly distributed in [from, to), sorted ascending:
// a Poisson process on [from, to) conditioned on having count arrivals.
// It returns nil when count <= 0 or the bounds are not finite, and count
// copies of from when to <= from. A nil rng uses a fixed seed.
func PoissonArrivals(rng *rand.Rand, count int, from, to float64) []float64 {
	return AppendPoissonArrivals(nil, rng, count, from, to)
}

// AppendPoissonArrivals is PoissonArrivals appending to dst, so that a
// caller replaying many seconds reuses one buffer. The sorted uniforms come
// from normalised sums of count+1 exponential spacings (Devroye,
// Non-Uniform Random Variate Generation, 1986, V.2), which costs O(count)
// rather than a sort's O(count log count).
func AppendPoissonArrivals(dst []float64, rng *rand.Rand, count int, from, to float64) []float64 {
	if count <= 0 || math.IsNaN(from) || math.IsNaN(to) || math.IsInf(from, 0) || math.IsInf(to, 0) {
		return dst
	}
	base := len(dst)
	dst = slices.Grow(dst, count)[:base+count]
	out := dst[base:]
	if to <= from {
		for i := range out {
			out[i] = from
		}
		return dst
	}
	if rng == nil {
		rng = rand.New(rand.NewPCG(0, 0))
	}
	sum := 0.0
	for i := range out {
		sum += rng.ExpFloat64()
		out[i] = sum
	}
	sum += rng.ExpFloat64()
	width := to - from
	below := math.Nextafter(to, from)
	for i, s := range out {
		t := from + s/sum*width
		if t >= to { // rounding guard
			t = below
		}
		out[i] = t
	}
	return dst
}
