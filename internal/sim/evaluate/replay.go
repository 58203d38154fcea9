package evaluate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/hetsev/hetsev/pkg/catalog"

	"github.com/hetsev/hetsev/internal/sim/modelserver"
	"github.com/hetsev/hetsev/internal/sim/replay"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

// serviceType is one GPU type a service can run on: in the cluster and
// profiled for the model.
type serviceType struct {
	prof catalog.Profile
	gpu  catalog.GPUType
	// demand is what one instance's pod declares (policy.demand).
	demand gpuinventory.Demand
	// column names the type's column in the policy's decisions: the GPU
	// type's name, or a light flavor's column of hetsev's (columnPolicy).
	column string
	// ilpUSDPerHour is what the policy's decision counts one instance at,
	// USD/h: the column's flavor times the GPU's price for hetsev
	// (scaler.Column), the GPU's price for the others.
	ilpUSDPerHour float64
	// thresholdRPS is the load the policy counts one instance to carry at
	// the saturation threshold, requests/s; 0 where it does not say
	// (columnOffer).
	thresholdRPS float64
	// light: a light flavor's column (columnOffer.light).
	light bool
	// batchLat is the solo latency of each batch size its servers run,
	// seconds (batchLatencies); nil: every batch takes prof.LatencyMs.
	batchLat []float64
}

// serviceRun is one service's state in one policy's replay.
type serviceRun struct {
	Service
	idx   int
	types []serviceType
	insts []*instance     // oldest first
	run   *replay.Service // its arrivals: the same seed in every policy
	// offered is the requests offered per second, a ring over the rate
	// window or the policy's history (historyPolicy), whichever is longer.
	offered []int64
	queueTO []float64
	tally   serviceTally
	// batches counts the fewest batches its measured arrivals need, for
	// the lower bound (bound.go); off when no type is feasible.
	batches batchCounter
}

// serviceTally accumulates one service's results over the measured seconds.
type serviceTally struct {
	requests, within, unserved int64
	costUSD, memoryCostUSD     float64
	// ilpCostUSD is what the decisions assumed the instances cost: each
	// instance's ilpUSDPerHour over its measured seconds, USD.
	ilpCostUSD             float64
	instanceSecs, busySecs float64
	typeSecs               map[string]float64 // instance-seconds per GPU type
	actions, decisions     int
	decideTime             time.Duration
	unplaced               int
	latency                latencyHist // response times of the measured requests
}

// policyRun is one policy's run over the trace.
type policyRun struct {
	cfg    *Config
	name   string
	pol    policy
	cl     *cluster
	eng    *replay.Engine
	gpus   [][]*replay.GPU // the engine's GPUs by node and index, as cl.nodes
	svcs   []*serviceRun
	window int // rate window, seconds
	every  int // decision interval, seconds (Knobs.Interval, the HPA's sync period, or the policy's: pacedPolicy)
	// history is how many seconds of offered requests a view carries
	// (historyPolicy; 0: none).
	history int
	step    int // series step, seconds

	gpuSecs, gpuBusy map[string]float64 // billed GPU-seconds and busy GPU-seconds per type
	nodeCostUSD      float64            // every node hosting an instance billed whole, USD
	peakGPUs         map[string]int
	series           Series
	costSoFar        float64
	// bill prices each GPU in use (billing); skuSecs counts the GPU-seconds
	// billed as each instance type ("": the catalog price).
	bill    *billing
	skuSecs map[string]float64
	// ownedCostUSD is the whole cluster's cost over the accounted seconds,
	// what an owned fleet (Config.Owned) bills every policy.
	ownedCostUSD float64
	// gpuDeclared sums, per type and billed GPU-second, the GPU's summed
	// declared busy share (Demand.Busy; capped at 1): the share of the bill
	// the placement filled by the shares it packs by. Not the occupancy's
	// gpuinventory.GPU.BusyShare, which leaves out instances that declare
	// none: here they count 1, as they hold their GPU whole.
	gpuDeclared map[string]float64
	// decisions is every decision, when Config.logDecisions asks for them.
	decisions []decisionRecord
	// predicted is the co-location check's ratios (prediction.go), for
	// hetsev's policies (predictsColocation).
	predicted []float64
}

// decisionRecord is one decision of a policy: the change of instances per
// GPU type of service svc at trace second t.
type decisionRecord struct {
	t, svc int
	delta  []int
}

func newPolicyRun(cfg *Config, name string) (*policyRun, error) {
	pol, err := newPolicy(cfg, name)
	if err != nil {
		return nil, err
	}
	r := &policyRun{
		cfg: cfg, name: name, pol: pol, cl: newCluster(cfg, pol.placer()), eng: replay.New(cfg.Rates, cfg.Colocation, cfg.GPUSharing),
		window: int(cfg.Knobs.RateWindow / time.Second), every: int(cfg.Knobs.Interval / time.Second),
		step:    cfg.SeriesStep,
		gpuSecs: map[string]float64{}, gpuBusy: map[string]float64{}, gpuDeclared: map[string]float64{}, peakGPUs: map[string]int{},
		series: Series{Instances: map[string][]float64{}},
		bill:   newBilling(cfg.SKUs), skuSecs: map[string]float64{},
	}
	if r.step == 0 {
		r.step = max(1, len(cfg.Rates)/2000)
	}
	r.eng.SetExcessScale(cfg.InterferenceTruth)
	if rule, ok := pol.(gpuRule); ok {
		r.cl.rule = rule
	}
	if p, ok := pol.(pacedPolicy); ok {
		r.every = max(1, p.decisionInterval())
	}
	if p, ok := pol.(historyPolicy); ok {
		r.history = max(0, p.history())
	}
	for _, nd := range r.cl.nodes {
		gs := make([]*replay.GPU, len(nd.onGPU))
		for g := range gs {
			gs[g] = new(replay.GPU)
		}
		r.gpus = append(r.gpus, gs)
	}
	for i, s := range cfg.Services {
		sr := &serviceRun{
			Service: s, idx: i,
			offered: make([]int64, max(r.window, r.history)),
			tally:   serviceTally{typeSecs: map[string]float64{}},
		}
		if w, b, ok := batchLimits(cfg, s); ok {
			sr.batches = newBatchCounter(w, b, float64(cfg.MeasureFrom))
		}
		sr.run = r.eng.AddService(&replay.Service{
			Share:    s.Share,
			Rates:    s.Rates,
			Arrivals: rand.New(rand.NewPCG(cfg.Seed, uint64(i)+1)),
			Router:   modelserver.NewRouter(cfg.Seed + 100 + uint64(i)),
			Offered: func(sec int, at []float64) {
				sr.offered[sec%len(sr.offered)] = int64(len(at))
				sr.batches.add(at)
			},
			Unserved: func(at float64) { r.unserved(sr, at) },
		})
		for _, g := range cfg.Cluster {
			gt, _ := cfg.Catalog.ByName(g.GPUType)
			prof, ok := cfg.Profiles.Get(s.Model, gt.Name)
			if !ok || typeIndex(sr.types, gt.Name) >= 0 {
				continue
			}
			cols := []columnOffer{{name: gt.Name, priceUSDPerHour: gt.PriceUSDPerHour}}
			if cp, ok := pol.(columnPolicy); ok {
				cols = cp.columns(i, gt.Name)
			}
			for _, c := range cols {
				prof := prof
				if pt, ok := prof.SmallBatch(c.batchSize); ok {
					// The column's pods carry hetsev.io/max-batch-size:
					// their servers batch at most pt.BatchSize.
					prof.BatchSize, prof.ThroughputRPS, prof.LatencyMs = pt.BatchSize, pt.ThroughputRPS, pt.LatencyMs
				}
				sr.types = append(sr.types, serviceType{prof: prof, gpu: gt, column: c.name, ilpUSDPerHour: c.priceUSDPerHour, thresholdRPS: c.thresholdRPS, light: c.light,
					batchLat: batchLatencies(prof),
					demand:   pol.demand(i, c.name, gpuinventory.Demand{Model: s.identity(), MemoryMiB: prof.GPUMemoryMiB})})
				sr.queueTO = append(sr.queueTO, modelserver.DeadlineQueueTimeout(s.RTMaxMs, prof.LatencyMs, cfg.Colocation.PairInflation(cfg.GPUSharing, s.Model, 1, prof.LatencyMs/1000), cfg.NetworkMs))
			}
		}
		if len(sr.types) == 0 {
			return nil, fmt.Errorf("evaluate: service %s: no GPU type of the cluster has a profile for %s", s.Name, s.Model)
		}
		r.svcs = append(r.svcs, sr)
	}
	return r, nil
}

// batchCounts are each service's greedy batch count and measured
// arrivals (batchcount.go), aligned with cfg.Services; an error when the
// arrivals came out of time order, so that the count is not the greedy's.
func (r *policyRun) batchCounts() ([]batchCount, error) {
	out := make([]batchCount, len(r.svcs))
	for k, s := range r.svcs {
		if s.batches.unsorted {
			return nil, fmt.Errorf("evaluate: %s: service %s: arrivals offered out of time order; the lower bound's batch count needs them sorted", r.name, s.Name)
		}
		out[k] = batchCount{Batches: s.batches.batches, Arrivals: s.batches.arrivals}
	}
	return out, nil
}

// typeIndex is the index of the column named name (a GPU type's own
// column is named for the type) in ts, -1 if absent.
func typeIndex(ts []serviceType, name string) int {
	for i, t := range ts {
		if t.column == name {
			return i
		}
	}
	return -1
}

// run replays the whole trace.
func (r *policyRun) run() PolicyResult {
	// Every service starts with MinReplicas instances, as the scaler
	// creates them before traffic arrives: ready at second 0.
	// A first instance that does not fit is counted as unplaced; the
	// policy's decisions retry.
	for _, s := range r.svcs {
		for range r.cfg.Knobs.MinReplicas {
			if err := r.start(s, r.firstType(s), -1); err != nil {
				s.tally.unplaced++
			}
		}
	}
	for t := range len(r.cfg.Rates) {
		now := float64(t)
		if t%r.every == 0 {
			for _, s := range r.svcs {
				r.decide(s, t)
			}
		}
		r.eng.Step(now, now+1)
		if t >= r.cfg.MeasureFrom {
			r.tallyInstances()
			r.account()
		}
		if t%r.step == 0 {
			r.sample(t)
		}
	}
	r.eng.Drain()
	return r.result()
}

// firstType is the type of the instances every policy starts with: the
// cheapest that meets RT_max (what hetsev's first scale-out picks; for
// default Kubernetes, whose later pods get a random type, it fixes the
// first pod's), or the type a single-type policy runs the service on
// (singleTypePolicy). For a policy with light columns, the cheapest
// column that carries the starting rate.
func (r *policyRun) firstType(s *serviceRun) int {
	if p, ok := r.pol.(singleTypePolicy); ok {
		if i := typeIndex(s.types, p.serviceType(s.idx)); i >= 0 {
			return i
		}
	}
	best := 0
	for i, t := range s.types {
		if t.prof.LatencyMs <= s.RTMaxMs && t.gpu.PriceUSDPerHour < s.types[best].gpu.PriceUSDPerHour {
			best = i
		}
	}
	// A policy with light columns (columnPolicy) starts on a cheaper one
	// when its first instances carry the starting rate at the threshold,
	// as its first scale-out would.
	need := r.cfg.startRate(&s.Service, r.window) / float64(r.cfg.Knobs.MinReplicas)
	for i, t := range s.types {
		if t.thresholdRPS > 0 && t.thresholdRPS >= need && t.prof.LatencyMs <= s.RTMaxMs && t.ilpUSDPerHour < s.types[best].ilpUSDPerHour {
			best = i
		}
	}
	return best
}

// decide runs the policy for s at second t and applies its action.
func (r *policyRun) decide(s *serviceRun, t int) {
	v := view{now: float64(t), types: make([]typeView, len(s.types))}
	// The seconds before t, newest last; the ring holds the last
	// len(s.offered) of them.
	ring := len(s.offered)
	var sum int64
	for k := max(t-r.window, 0); k < t; k++ {
		sum += s.offered[k%ring]
	}
	v.arrival = float64(sum) / float64(min(r.window, max(t, 1)))
	if t == 0 {
		v.arrival = r.cfg.startRate(&s.Service, r.window)
	}
	if r.history > 0 {
		v.offered = make([]int64, 0, min(r.history, t))
		for k := max(t-r.history, 0); k < t; k++ {
			v.offered = append(v.offered, s.offered[k%ring])
		}
	}
	for i, st := range s.types {
		tv := &v.types[i]
		tv.prof, tv.gpu, tv.column = st.prof, st.gpu, st.column
		var ofType []*instance
		for _, in := range s.insts {
			if in.typ == i {
				tv.running++
				if in.readyAt <= float64(t) {
					tv.ready++
				}
				tv.starts = append(tv.starts, in.created)
				ofType = append(ofType, in)
			}
		}
		tv.inflation = r.cl.inflation(ofType)
		if mp, ok := r.pol.(moverPolicy); ok && mp.moves() {
			for _, in := range ofType {
				if in.readyAt <= float64(t) && r.cl.movable(in) {
					tv.movable++
				}
			}
		}
		if r.pol.wholeGPU() {
			tv.slots = r.cl.freeWholeGPUs(st.gpu.Name, st.prof.CPUMilli, st.prof.MemoryMiB)
		} else {
			tv.slots = r.cl.slots(st.gpu.Name, st.demand, st.prof.CPUMilli, st.prof.MemoryMiB)
			// hetsev-scaler offers a light flavor no slots on a type with
			// no GPU in use by another model (pkg/scaler reconcile).
			if st.light && !r.cl.typeInUse(st.gpu.Name, st.demand.Identity()) {
				tv.slots = 0
			}
		}
	}
	t0 := time.Now()
	delta := r.pol.decide(s.idx, v)
	elapsed := time.Since(t0)
	if r.cfg.logDecisions {
		r.decisions = append(r.decisions, decisionRecord{t: t, svc: s.idx, delta: slices.Clone(delta)})
	}
	measured := t >= r.cfg.MeasureFrom
	if measured {
		s.tally.decisions++
		s.tally.decideTime += elapsed
	}
	if measured && r.predictsColocation() {
		r.samplePrediction(s, t)
	}
	if mp, ok := r.pol.(moverPolicy); ok {
		if col, phase, ok := mp.moveStep(s.idx); ok {
			r.unmark(s, col)
			if phase == heterogeneity.ReplacementStarted {
				r.markMoved(s, col, t)
			}
		}
	}
	changed := false
	for i, d := range delta {
		for ; d > 0; d-- {
			if err := r.start(s, i, float64(t)); err != nil {
				if measured {
					s.tally.unplaced++
				}
				break
			}
			changed = true
		}
		for ; d < 0; d++ {
			if !r.stopNewest(s, i, float64(t)) {
				break
			}
			changed = true
		}
	}
	if changed && measured {
		s.tally.actions++
	}
}

// start creates an instance of s on type i at trace second now and places
// it; it serves from now plus the profile's launch time (at once for an
// instant policy).
func (r *policyRun) start(s *serviceRun, i int, now float64) error {
	st := s.types[i]
	in := &instance{svc: s.idx, typ: i, model: s.Model, memMiB: st.prof.GPUMemoryMiB, demand: st.demand,
		cpuMilli: st.prof.CPUMilli, hostMiB: st.prof.MemoryMiB, created: now}
	ready := now + st.prof.LaunchSeconds
	if r.pol.instant() || now < 0 {
		ready = max(now, 0)
		in.created = max(now, 0)
	}
	in.readyAt = ready
	var ok bool
	if r.pol.wholeGPU() {
		in.memMiB = st.gpu.MemoryMiB
		in.demand = gpuinventory.Demand{Model: s.identity(), MemoryMiB: st.gpu.MemoryMiB}
		ok = r.cl.placeWhole(in, st.gpu.Name)
	} else {
		ok = r.cl.place(in, st.gpu.Name)
	}
	if !ok {
		return fmt.Errorf("no room for an instance of %s on %s", s.Name, st.gpu.Name)
	}
	var share float64
	if p, ok := r.pol.(cappedPolicy); ok {
		share = p.computeShare(s.idx)
	}
	srv, err := modelserver.NewServer(modelserver.Config{
		Name: fmt.Sprintf("%s-%d", s.Name, len(s.insts)), Model: s.Model, BatchSize: st.prof.BatchSize,
		BatchLatency: st.prof.LatencyMs / 1000, BatchLatencies: st.batchLat, MaxBatchDelay: r.cfg.MaxBatchDelay,
		ReadyAt: ready, QueueTimeout: s.queueTO[i], ComputeShare: share,
	})
	if err != nil {
		r.cl.remove(in)
		return err
	}
	in.run = r.eng.Add(s.run, r.gpus[in.node][in.gpu], srv, func(done []modelserver.Completion) { r.tallyDone(s, done) })
	s.insts = append(s.insts, in)
	return nil
}

// markMoved marks the instance of s on type i that the consolidation
// move started at second t replaces: the oldest that is movable, where
// hetsev-scaler marks the first movable pod by name (unmark has cleared
// the column's other marks, as it does).
func (r *policyRun) markMoved(s *serviceRun, i, t int) {
	for _, in := range s.insts {
		if in.typ == i && in.readyAt <= float64(t) && r.cl.movable(in) {
			in.moved = true
			return
		}
	}
}

// unmark clears the marks of s's instances on type i: a move that timed
// out keeps its old instance, which a later removal then ranks as any.
func (r *policyRun) unmark(s *serviceRun, i int) {
	for _, in := range s.insts {
		if in.typ == i {
			in.moved = false
		}
	}
}

// stopNewest removes an instance of s on type i, as a ReplicaSet scales
// down: the newest, unless it is ready and an instance a consolidation
// move replaces (instance.moved) runs, which goes first. Its queued
// requests are served first (graceful termination).
func (r *policyRun) stopNewest(s *serviceRun, i int, now float64) bool {
	pick := -1
	for k := len(s.insts) - 1; k >= 0; k-- {
		if s.insts[k].typ == i {
			pick = k
			break
		}
	}
	if pick < 0 {
		return false
	}
	if s.insts[pick].readyAt <= now {
		for k, in := range s.insts {
			if in.typ == i && in.moved {
				pick = k
				break
			}
		}
	}
	in := s.insts[pick]
	r.eng.Remove(in.run) // its completions go to tallyDone
	r.cl.remove(in)
	s.insts = append(s.insts[:pick:pick], s.insts[pick+1:]...)
	return true
}

// tallyInstances counts a measured second of every instance: its time,
// its busy share and its GPU type's time.
func (r *policyRun) tallyInstances() {
	for _, s := range r.svcs {
		for _, in := range s.insts {
			s.tally.instanceSecs++
			s.tally.busySecs += in.run.Util()
			s.tally.typeSecs[s.types[in.typ].gpu.Name]++
			s.tally.ilpCostUSD += s.types[in.typ].ilpUSDPerHour / 3600
		}
	}
}

// unserved counts a request of s that found no ready instance: it fails
// at once, a violation when measured.
func (r *policyRun) unserved(s *serviceRun, at float64) {
	if at >= float64(r.cfg.MeasureFrom) {
		s.tally.requests++
		s.tally.unserved++
		s.tally.latency.add(math.Inf(1))
	}
}

// tallyDone counts completed requests that arrived in the measured part of
// the trace: within RT_max when served (not rejected) in time, network
// included.
func (r *policyRun) tallyDone(s *serviceRun, done []modelserver.Completion) {
	from := float64(r.cfg.MeasureFrom)
	for _, c := range done {
		if c.Arrival < from {
			continue
		}
		s.tally.requests++
		if c.Rejected {
			s.tally.unserved++
			s.tally.latency.add(math.Inf(1))
			continue
		}
		ms := (c.Done-c.Arrival)*1000 + r.cfg.NetworkMs
		s.tally.latency.add(ms)
		if ms <= s.RTMaxMs {
			s.tally.within++
		}
	}
}

// account bills one second: every GPU that hosts an instance costs, for
// the second, the price billing gives it from its pods' CPU and memory
// requests, split over its instances in proportion to their GPU memory;
// the memory-proportional cost charges each instance its GPU memory's
// share of the GPU's catalog price (HetSev 6.3). An owned fleet's whole
// cost is counted too (ownedCostUSD).
func (r *policyRun) account() {
	inUse := map[string]int{}
	for n, nd := range r.cl.nodes {
		catalogPrice := nd.gpuType.PriceUSDPerHour / 3600
		r.ownedCostUSD += catalogPrice * float64(len(nd.onGPU))
		nodeUsed := false
		for g, on := range nd.onGPU {
			if len(on) == 0 {
				continue
			}
			nodeUsed = true
			inUse[nd.gpuType.Name]++
			var mem, cpu, host int64
			var declared float64
			for _, in := range on {
				mem += in.memMiB
				cpu += in.cpuMilli
				host += in.hostMiB
				declared += in.demand.Busy()
			}
			b := r.bill.gpu(nd.gpuType, cpu, host)
			price := b.usdPerHour / 3600
			r.skuSecs[b.sku]++
			r.gpuDeclared[nd.gpuType.Name] += math.Min(1, declared)
			r.gpuSecs[nd.gpuType.Name]++
			r.gpuBusy[nd.gpuType.Name] += math.Min(1, r.gpus[n][g].Busy()) // a second: busy time is busy share
			r.costSoFar += price
			for _, in := range on {
				t := &r.svcs[in.svc].tally
				t.costUSD += price * float64(in.memMiB) / float64(mem)
				t.memoryCostUSD += catalogPrice * float64(in.memMiB) / float64(nd.inv.MemoryMiB)
			}
		}
		if nodeUsed {
			r.nodeCostUSD += catalogPrice * float64(len(nd.onGPU))
		}
	}
	for k, n := range inUse {
		r.peakGPUs[k] = max(r.peakGPUs[k], n)
	}
}

// sample appends one point of the time series.
func (r *policyRun) sample(t int) {
	r.series.Hours = append(r.series.Hours, float64(t)/3600)
	r.series.LoadRPS = append(r.series.LoadRPS, r.cfg.Rates[t])
	r.series.CostUSD = append(r.series.CostUSD, r.costSoFar)
	count := map[string]int{}
	instances := 0
	for _, s := range r.svcs {
		for _, in := range s.insts {
			count[s.types[in.typ].gpu.Name]++
			instances++
		}
	}
	gpus := 0
	for _, nd := range r.cl.nodes {
		for _, on := range nd.onGPU {
			if len(on) > 0 {
				gpus++
			}
		}
	}
	r.series.InstancesPerGPU = append(r.series.InstancesPerGPU, ratio(float64(instances), float64(gpus)))
	for _, name := range r.cfg.gpuTypes() {
		r.series.Instances[name] = append(r.series.Instances[name], float64(count[name]))
	}
}
