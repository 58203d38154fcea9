package replay

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hetsev/hetsev/internal/sim/modelserver"
	"github.com/hetsev/hetsev/pkg/interference"
)

func server(t *testing.T, name string, readyAt float64) *modelserver.Server {
	t.Helper()
	s, err := modelserver.NewServer(modelserver.Config{Name: name, Model: "resnet50", BatchSize: 8,
		BatchLatency: 0.02, MaxBatchDelay: 0.005, ReadyAt: readyAt})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func service(seed uint64) *Service {
	return &Service{Share: 1, Arrivals: rand.New(rand.NewPCG(seed, 1)), Router: modelserver.NewRouter(seed)}
}

func constant(n int, rate float64) []float64 {
	r := make([]float64, n)
	for i := range r {
		r[i] = rate
	}
	return r
}

// TestStepServesOfferedLoad: 100 requests/s for 10 s to one instance that
// can serve 400/s: every arrival is offered once, in its second, and
// completes; the GPU's busy time is its instance's.
func TestStepServesOfferedLoad(t *testing.T) {
	e := New(constant(10, 100), interference.FittedColocation(), "")
	s := e.AddService(service(1))
	offered, done := 0, 0
	s.Offered = func(sec int, at []float64) {
		for _, a := range at {
			if a < float64(sec) || a >= float64(sec+1) {
				t.Errorf("arrival %v outside second %d", a, sec)
			}
		}
		offered += len(at)
	}
	s.Unserved = func(float64) { t.Error("unserved request with a ready instance") }
	var g GPU
	in := e.Add(s, &g, server(t, "a", 0), func(c []modelserver.Completion) { done += len(c) })
	for sec := range 10 {
		e.Step(float64(sec), float64(sec+1))
		if g.Busy() != in.Busy() || in.Util() != in.Busy() {
			t.Fatalf("second %d: GPU busy %v, instance busy %v, util %v", sec, g.Busy(), in.Busy(), in.Util())
		}
	}
	e.Drain()
	if offered != 1000 || done != 1000 {
		t.Errorf("offered %d, completed %d; want 1000 each", offered, done)
	}
}

// TestPartialSteps: steps of half a second offer each second's arrivals
// in two parts.
func TestPartialSteps(t *testing.T) {
	e := New(constant(4, 10), interference.FittedColocation(), "")
	s := e.AddService(service(2))
	var secs []int
	n := 0
	s.Offered = func(sec int, at []float64) { secs = append(secs, sec); n += len(at) }
	for k := range 8 {
		e.Step(float64(k)/2, float64(k+1)/2)
	}
	e.Step(4, 5) // past the trace: nothing
	if n != 40 || len(secs) != 8 || secs[0] != 0 || secs[1] != 0 || secs[7] != 3 {
		t.Errorf("%d arrivals in seconds %v; want 40, two parts of each of 0..3", n, secs)
	}
}

// TestArrivalsDoNotDependOnSteps: the same seed gives the same arrival
// times whether the engine steps whole seconds (the evaluator) or parts of
// them (the demo, its tick times its time compression), including a rate
// whose mean is not a whole count.
func TestArrivalsDoNotDependOnSteps(t *testing.T) {
	arrivals := func(step float64) []float64 {
		e := New([]float64{10.5, 7.25, 30, 0.4}, interference.FittedColocation(), "")
		s := e.AddService(service(8))
		var out []float64
		s.Offered = func(sec int, at []float64) { out = append(out, at...) }
		for k := 0; float64(k)*step < 4; k++ {
			e.Step(float64(k)*step, math.Min(float64(k+1)*step, 4))
		}
		return out
	}
	whole := arrivals(1)
	for _, step := range []float64{0.3, 0.25, 0.05} {
		got := arrivals(step)
		if len(got) != len(whole) {
			t.Errorf("steps of %g s: %d arrivals, steps of 1 s: %d", step, len(got), len(whole))
			continue
		}
		for i := range got {
			if got[i] != whole[i] {
				t.Errorf("steps of %g s: arrival %d at %v, steps of 1 s: at %v", step, i, got[i], whole[i])
				break
			}
		}
	}
}

// TestUnservedBeforeReady: requests before the only instance is ready are
// unserved; later ones are routed to it.
func TestUnservedBeforeReady(t *testing.T) {
	e := New(constant(2, 50), interference.FittedColocation(), "")
	s := e.AddService(service(3))
	unserved := 0
	s.Unserved = func(at float64) {
		if at >= 1 {
			t.Errorf("unserved at %v, after the instance is ready", at)
		}
		unserved++
	}
	var g GPU
	e.Add(s, &g, server(t, "a", 1), nil)
	e.Step(0, 1)
	e.Step(1, 2)
	if unserved != 50 {
		t.Errorf("%d unserved; want the first second's 50", unserved)
	}
}

// TestInterference: two busy instances on one GPU slow each other down in
// the next step by the fitted co-location model's inflation
// (interference.FittedSharing, time-slicing, from both busy shares of the
// step before); one alone on a GPU does not.
func TestInterference(t *testing.T) {
	m := interference.FittedColocation()
	e := New(constant(3, 300), m, "")
	s := e.AddService(service(4))
	var shared, alone GPU
	a := e.Add(s, &shared, server(t, "a", 0), nil)
	b := e.Add(s, &shared, server(t, "b", 0), nil)
	c := e.Add(s, &alone, server(t, "c", 0), nil)
	e.Step(0, 1)
	if a.Util() == 0 || b.Util() == 0 || c.Util() == 0 {
		t.Fatalf("utilisation %v %v %v; want all busy", a.Util(), b.Util(), c.Util())
	}
	if got := shared.Busy(); got != a.Busy()+b.Busy() {
		t.Errorf("shared GPU busy %v, want %v", got, a.Busy()+b.Busy())
	}
	l := a.Server.Config().BatchLatency
	f, err := interference.FittedSharing().Inflations(interference.SharingTimeSlicing, []interference.Instance{
		{BusyShare: a.Util(), BatchLatency: l, Occupancy: 1}, {BusyShare: b.Util(), BatchLatency: l, Occupancy: 1}})
	if err != nil {
		t.Fatal(err)
	}
	want := f[0]
	e.Step(1, 2)
	if a.Server.Factor() != want || want <= 1 || c.Server.Factor() != 1 {
		t.Errorf("factors %v (shared, want %v > 1), %v (alone, want 1)", a.Server.Factor(), want, c.Server.Factor())
	}
}

// TestExcessScale: with SetExcessScale(1.5) the same two busy instances
// run at 1 + 1.5 (f - 1), f the model's inflation; one alone stays at 1.
func TestExcessScale(t *testing.T) {
	run := func(k float64) (shared, alone float64) {
		e := New(constant(3, 300), interference.FittedColocation(), "")
		e.SetExcessScale(k)
		s := e.AddService(service(4))
		var g, own GPU
		a := e.Add(s, &g, server(t, "a", 0), nil)
		e.Add(s, &g, server(t, "b", 0), nil)
		c := e.Add(s, &own, server(t, "c", 0), nil)
		e.Step(0, 1)
		e.Step(1, 2)
		return a.Server.Factor(), c.Server.Factor()
	}
	f, _ := run(1)
	g, alone := run(1.5)
	if want := 1 + 1.5*(f-1); f <= 1 || math.Abs(g-want) > 1e-12 || alone != 1 {
		t.Errorf("factor %v with k 1.5, want %v (model %v); alone %v, want 1", g, want, f, alone)
	}
}

// TestRemoveDrains: a removed instance's queued requests complete through
// its callback and it leaves its service and GPU, keeping the others'
// order.
func TestRemoveDrains(t *testing.T) {
	e := New(constant(1, 1000), interference.FittedColocation(), "")
	s := e.AddService(service(5))
	var g GPU
	done := 0
	a := e.Add(s, &g, server(t, "a", 0), nil)
	b := e.Add(s, &g, server(t, "b", 0), func(c []modelserver.Completion) { done += len(c) })
	c := e.Add(s, &g, server(t, "c", 0), nil)
	e.Step(0, 0.5)
	before := done
	e.Remove(b)
	if done == before || uint64(done) != b.Server.Submitted() {
		t.Errorf("completed %d of %d submitted after Remove", done, b.Server.Submitted())
	}
	for _, list := range [][]*Instance{s.Instances(), g.Instances()} {
		if len(list) != 2 || list[0] != a || list[1] != c {
			t.Errorf("instances after Remove: %v", list)
		}
	}
}

// TestInterferenceByBatchSize: a server with a solo latency per batch
// size (as serving-check gives one from a measurement file) is slowed
// down, batch by batch, by the co-location model with its own solo latency
// that of the batch's size; its neighbour sees it at the mean solo latency
// of the batches it ran in the step before. Under both sharing modes.
func TestInterferenceByBatchSize(t *testing.T) {
	lat := []float64{0.0010, 0.0011, 0.0012, 0.0013, 0.0014, 0.0015, 0.0016, 0.0018}
	for _, mode := range []interference.SharingMode{interference.SharingTimeSlicing, interference.SharingMPS} {
		m := interference.FittedColocation()
		e := New([]float64{2000, 0, 0}, m, mode) // load in second 0 only
		var g GPU
		// a: per-size latencies; b: one latency for every batch, as the
		// demo's servers.
		sa, err := modelserver.NewServer(modelserver.Config{Name: "a", Model: "resnet50", BatchSize: 8, BatchLatency: lat[7], BatchLatencies: lat, MaxBatchDelay: 0.0005})
		if err != nil {
			t.Fatal(err)
		}
		sb, err := modelserver.NewServer(modelserver.Config{Name: "b", Model: "resnet50", BatchSize: 8, BatchLatency: 0.002})
		if err != nil {
			t.Fatal(err)
		}
		var doneA, doneB []modelserver.Completion
		sva, svb := service(6), service(7)
		sva.Share, svb.Share = 0.5, 0.5
		a := e.Add(e.AddService(sva), &g, sa, func(c []modelserver.Completion) { doneA = append(doneA, c...) })
		b := e.Add(e.AddService(svb), &g, sb, func(c []modelserver.Completion) { doneB = append(doneB, c...) })
		e.Step(0, 1)
		ua, ub := a.Util(), b.Util()
		if ua == 0 || ub == 0 {
			t.Fatalf("%s: utilisation %v %v; want both busy", mode, ua, ub)
		}
		// a's batches in second 0 (one completion time per batch), their
		// mean solo latency.
		sizes := map[float64]int{}
		for _, c := range doneA {
			sizes[c.Done]++
		}
		solo := 0.0
		for _, n := range sizes {
			solo += lat[n-1] / float64(len(sizes))
		}
		// Second 1 has no arrivals of its own: once the step has set the
		// factors (Offered), probe a with a batch of 8 at 1.5 s and one of
		// 1 at 1.7 s, b with one request at 1.5 s.
		doneA, doneB = nil, nil
		sva.Offered = func(int, []float64) {
			for range 8 {
				sa.Submit(1.5)
			}
			sa.Submit(1.7)
			sb.Submit(1.5)
		}
		e.Step(1, 2)
		probes := func(cs []modelserver.Completion) []modelserver.Completion { // not second 0's
			var out []modelserver.Completion
			for _, c := range cs {
				if c.Arrival >= 1.5 {
					out = append(out, c)
				}
			}
			return out
		}
		doneA, doneB = probes(doneA), probes(doneB)
		if len(doneA) != 9 || len(doneB) != 1 {
			t.Fatalf("%s: %d and %d completions in second 1; want the 9 and 1 probes", mode, len(doneA), len(doneB))
		}
		inst := func(busy, l, full float64) interference.Instance {
			in := m.ProfileInstance(mode, "resnet50", busy, l)
			in.FullBatchLatency = full
			return in
		}
		want := func(l float64) float64 { // a's inflation at solo latency l
			f, err := m.Sharing.Inflations(mode, []interference.Instance{inst(ua, l, lat[7]), inst(ub, 0.002, 0)})
			if err != nil {
				t.Fatal(err)
			}
			return f[0]
		}
		fb, err := m.Sharing.Inflations(mode, []interference.Instance{inst(ua, solo, lat[7]), inst(ub, 0.002, 0)})
		if err != nil {
			t.Fatal(err)
		}
		got8, got1, gotB := (doneA[0].Done-1.5)/lat[7], (doneA[8].Done-1.7-0.0005)/lat[0], (doneB[0].Done-1.5)/0.002
		if math.Abs(got8-want(lat[7])) > 1e-9 || math.Abs(got1-want(lat[0])) > 1e-9 || math.Abs(gotB-fb[1]) > 1e-9 {
			t.Errorf("%s: a's batch of 8 inflated %.4f (want %.4f), of 1 %.4f (want %.4f); b %.4f (want %.4f, a at its mean solo latency %.5f s)",
				mode, got8, want(lat[7]), got1, want(lat[0]), gotB, fb[1], solo)
		}
		if !(got1 > 1.01*got8 && got8 > 1) {
			t.Errorf("%s: a's batch of 1 inflated %.4f, of 8 %.4f; want 1 < the 8's < the 1's", mode, got1, got8)
		}
	}
}

// TestServiceOwnRates: a service with rates of its own is offered them,
// second by second, and not its share of the engine's trace; a service
// without them still gets its share; seconds past a service's own rates
// offer nothing. With the Azure Functions trace's 3 per minute (0.05/s in
// each second) the count over a minute is 3 on average.
func TestServiceOwnRates(t *testing.T) {
	e := New(constant(4, 100), interference.FittedColocation(), "")
	own := service(9)
	own.Share = 0
	own.Rates = []float64{0, 7, 2}
	shared := service(10)
	shared.Share = 0.25
	got := map[*Service][]int{}
	for _, s := range []*Service{own, shared} {
		s.Offered = func(sec int, at []float64) { got[s] = append(got[s], len(at)) }
		e.AddService(s)
	}
	for sec := range 4 {
		e.Step(float64(sec), float64(sec+1))
	}
	if g := got[own]; len(g) != 3 || g[0] != 0 || g[1] != 7 || g[2] != 2 {
		t.Errorf("own rates 0, 7, 2 offered %v arrivals per second, want [0 7 2] (nothing past them)", g)
	}
	if g := got[shared]; len(g) != 4 || g[0] != 25 || g[3] != 25 {
		t.Errorf("a quarter of 100/s offered %v per second, want 25 in each of 4", g)
	}

	const minutes = 2000
	rates := make([]float64, 60*minutes)
	for i := range rates {
		rates[i] = 3.0 / 60
	}
	e = New(nil, interference.FittedColocation(), "")
	s := service(11)
	s.Rates = rates
	n := 0
	s.Offered = func(_ int, at []float64) { n += len(at) }
	e.AddService(s)
	e.Step(0, float64(len(rates)))
	if mean := float64(n) / minutes; math.Abs(mean-3) > 0.15 {
		t.Errorf("%.3f arrivals per minute at 3/60 requests/s, want 3", mean)
	}
}
