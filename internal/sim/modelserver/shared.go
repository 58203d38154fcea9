package modelserver

import (
	"fmt"
	"math"
	"sort"

	"github.com/hetsev/hetsev/pkg/interference"
)

// SharedGPU co-simulates, in virtual time, model servers that share one GPU:
// each server batches as Server does with MaxBatchDelay 0 (whenever it has
// no batch on the GPU and requests wait, it submits one batch of all
// waiting requests up to BatchSize), and the GPU runs the servers' batches
// as its sharing mode does, moment by moment, instead of stretching every
// batch by a mean inflation factor:
//
//   - time-slicing (and "none"): one context at a time. A batch of solo
//     length L is cut into k = ceil(L/τ) slices of L/k (τ =
//     Sharing.TimeSlicing.Slice, as in the analytic model of package
//     interference); after each slice, and when a batch ends, the GPU passes
//     to the next server in round-robin order that has a batch, paying s/2
//     whenever it changes context (s = Sharing.TimeSlicing.Switch: the
//     analytic model charges s once per wait for a neighbour, a wait that
//     spans two changes of context, to the neighbour and back). A server
//     whose neighbours are idle runs at solo speed;
//   - MPS: every server with a batch runs at once, each at the speed
//     1/(1 + Σ_j γ (o_j/o_i)^α) over the other servers j with a batch at
//     that moment (Sharing.MPS, o the solo occupancy scaled by the batch's
//     solo latency over the full batch's, as interference.Instance does).
//
// It models CUDA-graph/TensorRT servers (solo occupancy 1 under
// time-slicing), the servers hetsev's profiles describe.
type SharedGPU struct {
	mode    interference.SharingMode
	model   interference.Sharing
	servers []SharedServer
}

// SharedServer is one server on a SharedGPU.
type SharedServer struct {
	// Config gives the server's batching: BatchSize, and the solo batch
	// latency (BatchLatencies per size, else BatchLatency).
	Config Config
	// Occupancy is the solo occupancy under MPS at the full batch, (0,1];
	// 0 means 1. Ignored under time-slicing.
	Occupancy float64
}

// SharedResult is one server's outcome of SharedGPU.Run.
type SharedResult struct {
	// Completions, in completion order.
	Completions []Completion
	// Busy is the time in seconds the server had a batch on the GPU
	// (submitted and not completed), as a server measures around its
	// batches.
	Busy float64
	// Batches is the number of batches run; SoloWork is their summed solo
	// latency in seconds.
	Batches  int
	SoloWork float64
	// End is the completion time of the server's last batch (0 if none).
	End float64
}

// NewSharedGPU validates the servers' configurations and the model and
// returns the co-simulation of servers sharing one GPU in mode.
func NewSharedGPU(mode interference.SharingMode, model interference.Sharing, servers []SharedServer) (*SharedGPU, error) {
	if err := model.Validate(); err != nil {
		return nil, err
	}
	switch mode {
	case interference.SharingNone, interference.SharingTimeSlicing, interference.SharingMPS:
	default:
		return nil, fmt.Errorf("modelserver: sharing mode %q is not one of %s, %s, %s", mode, interference.SharingNone, interference.SharingTimeSlicing, interference.SharingMPS)
	}
	for i, s := range servers {
		if err := s.Config.Validate(); err != nil {
			return nil, fmt.Errorf("modelserver: shared server %d: %w", i, err)
		}
		if math.IsNaN(s.Occupancy) || s.Occupancy < 0 || s.Occupancy > 1 {
			return nil, fmt.Errorf("modelserver: shared server %d (%s): Occupancy %g must be in (0,1] (0 for 1)", i, s.Config.Name, s.Occupancy)
		}
	}
	return &SharedGPU{mode: mode, model: model, servers: servers}, nil
}

// sharedState is one server's state during Run.
type sharedState struct {
	arr       []float64 // sorted arrival times
	next      int       // first arrival not yet queued
	head      int       // first queued arrival not yet in a batch
	inBatch   int       // arrivals [head-inBatch, head) form the batch on the GPU; 0: none
	work      float64   // solo seconds left of the batch on the GPU
	slice     float64   // solo length of one slice of the batch (time-slicing)
	submitted float64   // when the batch was submitted
	occ       float64   // MPS occupancy of the batch on the GPU
	res       SharedResult
}

func (g *SharedGPU) solo(i, n int) float64 {
	c := g.servers[i].Config
	if len(c.BatchLatencies) > 0 {
		return c.BatchLatencies[n-1]
	}
	return c.BatchLatency
}

// Run serves arrivals[i] (arrival times in seconds, any order) on server i
// until every request is completed, starting with an idle GPU at time 0,
// and returns each server's completions and busy time.
func (g *SharedGPU) Run(arrivals [][]float64) ([]SharedResult, error) {
	if len(arrivals) != len(g.servers) {
		return nil, fmt.Errorf("modelserver: SharedGPU.Run: %d arrival lists for %d servers", len(arrivals), len(g.servers))
	}
	st := make([]*sharedState, len(g.servers))
	for i, a := range arrivals {
		s := &sharedState{arr: append([]float64(nil), a...)}
		sort.Float64s(s.arr)
		st[i] = s
	}
	tau := g.model.TimeSlicing.Slice
	// submit queues server i's arrivals up to t and, when it has no batch on
	// the GPU, submits one of all waiting requests up to BatchSize.
	submit := func(i int, t float64) {
		s := st[i]
		for s.next < len(s.arr) && s.arr[s.next] <= t {
			s.next++
		}
		if s.inBatch > 0 || s.head == s.next {
			return
		}
		n := min(s.next-s.head, g.servers[i].Config.BatchSize)
		s.inBatch = n
		s.head += n
		l := g.solo(i, n)
		s.work = l
		s.slice = l / math.Max(1, math.Ceil(l/tau-1e-9))
		s.submitted = t
		o := g.servers[i].Occupancy
		if o == 0 {
			o = 1
		}
		if full := g.solo(i, g.servers[i].Config.BatchSize); full > l {
			o *= l / full
		}
		s.occ = o
	}
	complete := func(i int, t float64) {
		s := st[i]
		for _, a := range s.arr[s.head-s.inBatch : s.head] {
			s.res.Completions = append(s.res.Completions, Completion{Arrival: a, Done: t})
		}
		s.res.Busy += t - s.submitted
		s.res.Batches++
		s.res.SoloWork += g.solo(i, s.inBatch)
		s.res.End = t
		s.inBatch = 0
		submit(i, t)
	}
	nextArrival := func() (float64, int) {
		best, who := math.Inf(1), -1
		for i, s := range st {
			if s.next < len(s.arr) && s.arr[s.next] < best {
				best, who = s.arr[s.next], i
			}
		}
		return best, who
	}
	if g.mode == interference.SharingMPS {
		g.runMPS(st, submit, complete, nextArrival)
	} else {
		g.runTimeSlicing(st, submit, complete, nextArrival)
	}
	out := make([]SharedResult, len(st))
	for i, s := range st {
		out[i] = s.res
	}
	return out, nil
}

// runTimeSlicing: round robin between servers with a batch, one at a time.
func (g *SharedGPU) runTimeSlicing(st []*sharedState, submit func(int, float64), complete func(int, float64), nextArrival func() (float64, int)) {
	sw := g.model.TimeSlicing.Switch / 2 // per change of context
	t := 0.0
	cur, last := -1, -1          // server running on the GPU; last context that ran
	sliceLeft := 0.0             // solo seconds left of cur's slice
	switchUntil := -1.0          // the GPU is switching to cur until then
	pick := func(from int) int { // next server after from with a batch
		n := len(st)
		for d := 1; d <= n; d++ {
			j := ((from+d)%n + n) % n
			if st[j].inBatch > 0 {
				return j
			}
		}
		return -1
	}
	start := func(j int) {
		cur = j
		sliceLeft = st[j].slice
		if last != j && last != -1 {
			switchUntil = t + sw
		} else {
			switchUntil = t
		}
		last = j
	}
	for {
		if cur == -1 {
			if j := pick(last); j >= 0 {
				start(j)
				continue
			}
			ta, who := nextArrival()
			if who < 0 {
				return
			}
			t = ta
			submit(who, t)
			continue
		}
		// The running slice ends at tEnd unless an arrival comes first.
		runFrom := math.Max(t, switchUntil)
		run := math.Min(sliceLeft, st[cur].work)
		tEnd := runFrom + run
		if ta, who := nextArrival(); who >= 0 && ta < tEnd {
			if ta > runFrom {
				done := ta - runFrom
				st[cur].work -= done
				sliceLeft -= done
			}
			t = math.Max(t, ta)
			submit(who, ta)
			continue
		}
		t = tEnd
		st[cur].work -= run
		sliceLeft -= run
		if st[cur].work <= 1e-12 {
			i := cur
			cur = -1
			complete(i, t)
			// The GPU passes to the next server with a batch (i itself
			// when no other has one, with its next batch if any).
			continue
		}
		if sliceLeft <= 1e-12 {
			if j := pick(cur); j >= 0 && j != cur {
				start(j)
			} else {
				sliceLeft = st[cur].slice
			}
		}
	}
}

// runMPS: every server with a batch runs at once at its MPS speed.
func (g *SharedGPU) runMPS(st []*sharedState, submit func(int, float64), complete func(int, float64), nextArrival func() (float64, int)) {
	gamma, alpha := g.model.MPS.Contention, g.model.MPS.OccupancyExponent
	t := 0.0
	speed := make([]float64, len(st))
	for {
		active := false
		for i, a := range st {
			speed[i] = 0
			if a.inBatch == 0 {
				continue
			}
			active = true
			f := 1.0
			for j, b := range st {
				if j != i && b.inBatch > 0 {
					f += gamma * math.Pow(b.occ/a.occ, alpha)
				}
			}
			speed[i] = 1 / f
		}
		ta, who := nextArrival()
		if !active {
			if who < 0 {
				return
			}
			t = ta
			submit(who, t)
			continue
		}
		first, fi := math.Inf(1), -1
		for i, a := range st {
			if speed[i] > 0 {
				if d := t + a.work/speed[i]; d < first {
					first, fi = d, i
				}
			}
		}
		tn := first
		if who >= 0 && ta < first {
			tn = ta
		}
		for i, a := range st {
			if speed[i] > 0 {
				a.work -= (tn - t) * speed[i]
			}
		}
		t = tn
		if who >= 0 && ta < first {
			submit(who, t)
			continue
		}
		st[fi].work = 0
		complete(fi, t)
	}
}
