package simulator

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/hetsev/hetsev/internal/sim/exporters"
	"github.com/hetsev/hetsev/internal/sim/modelserver"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/interference"
)

// World runs the simulated servers and the load.
type World struct {
	cfg    Config
	Clock  *Clock
	client kubernetes.Interface
	pods   corelisters.PodLister
	nodes  corelisters.NodeLister
	synced []cache.InformerSynced
	start  func(<-chan struct{})

	rng    *rand.Rand
	router *modelserver.Router

	mu        sync.Mutex
	instances map[types.UID]*instance
	dcgm      map[types.UID]*dcgmPod
	byService map[string][]*instance
	gpuUtil   map[gpuID]float64
	stats     map[string]*ServiceStats
	gpuSecs   map[string]float64 // GPU type -> billed GPU-seconds
	colocs    int
	overcom   int
	scheduled map[types.UID]bool
}

type gpuID struct {
	node  string
	index int
}

type instance struct {
	uid     types.UID
	name    string
	service *Service
	prof    InstanceProfile
	gpu     gpuID
	server  *modelserver.Server
	istio   *exporters.Istio
	http    *http.Server
	model   string
	memMiB  int64
	util    float64 // busy fraction in the last step
}

type dcgmPod struct {
	node string
	exp  *exporters.DCGM
	http *http.Server
}

// New builds a World watching pods and nodes through client.
func New(client kubernetes.Interface, cfg Config) (*World, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	f := informers.NewSharedInformerFactory(client, 0)
	w := &World{
		cfg: cfg, Clock: NewClock(cfg.Factor), client: client,
		pods: f.Core().V1().Pods().Lister(), nodes: f.Core().V1().Nodes().Lister(),
		synced:    []cache.InformerSynced{f.Core().V1().Pods().Informer().HasSynced, f.Core().V1().Nodes().Informer().HasSynced},
		start:     f.Start,
		rng:       rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		router:    modelserver.NewRouter(cfg.Seed + 1),
		instances: map[types.UID]*instance{}, dcgm: map[types.UID]*dcgmPod{},
		byService: map[string][]*instance{}, gpuUtil: map[gpuID]float64{},
		stats: map[string]*ServiceStats{}, gpuSecs: map[string]float64{}, scheduled: map[types.UID]bool{},
	}
	for i := range cfg.Services {
		s := &cfg.Services[i]
		w.stats[s.Name] = &ServiceStats{Service: s.Name, RTMaxMs: s.RTMaxMs}
	}
	return w, nil
}

// Start starts the informers and waits for them.
func (w *World) Start(ctx context.Context) error {
	w.start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), w.synced...) {
		return errors.New("simulator: caches did not sync")
	}
	return nil
}

// SyncPods brings the simulated servers in line with the cluster's pods; the
// demo calls it before the replay so the first instances are up.
func (w *World) SyncPods() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.syncPodsLocked(w.Clock.Processed())
}

// Instances counts the simulated instances of a service (launching or
// serving).
func (w *World) Instances(service string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.byService[service])
}

// Run replays the trace in compressed time until it ends or ctx is done.
// Trace second 0 starts when Run is called.
func (w *World) Run(ctx context.Context) error {
	w.Clock.restart() // exporters hold this clock: reset it, don't replace it
	end := float64(len(w.cfg.Rates))
	tick := time.NewTicker(w.cfg.Tick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		t1 := math.Min(w.Clock.Elapsed(), end)
		w.step(t1)
		if t1 >= end {
			return nil
		}
	}
}

// Close stops every simulated server's HTTP endpoint.
func (w *World) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, in := range w.instances {
		_ = in.http.Close()
	}
	for _, d := range w.dcgm {
		_ = d.http.Close()
	}
}

// step advances the simulation to trace time t1.
func (w *World) step(t1 float64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t0 := w.Clock.Processed()
	if t1 <= t0 {
		return
	}
	w.syncPodsLocked(t0)
	w.applyInterference()
	for i := range w.cfg.Services {
		w.offer(&w.cfg.Services[i], t0, t1)
	}
	busy := map[gpuID]float64{}
	for _, in := range w.instances {
		w.record(in, in.server.Advance(t1))
		b := in.server.BusyTime(t0, t1)
		in.util = b / (t1 - t0)
		busy[in.gpu] += b
	}
	w.account(busy, t0, t1)
	w.Clock.setProcessed(t1)
}

// offer generates the service's arrivals in [t0, t1) and routes each to an
// instance the way Envoy's LEAST_REQUEST balancer does.
func (w *World) offer(s *Service, t0, t1 float64) {
	st := w.stats[s.Name]
	var ready []*modelserver.Server
	var byServer = map[*modelserver.Server]*instance{}
	for _, in := range w.byService[s.Name] {
		byServer[in.server] = in
	}
	for sec := math.Floor(t0); sec < t1; sec++ {
		lo, hi := math.Max(sec, t0), math.Min(sec+1, t1)
		if hi <= lo || int(sec) >= len(w.cfg.Rates) {
			continue
		}
		mean := w.cfg.Rates[int(sec)] * s.Share * (hi - lo)
		n := int(mean)
		if w.rng.Float64() < mean-float64(n) {
			n++
		}
		for _, at := range modelserver.PoissonArrivals(w.rng, n, lo, hi) {
			measured := at >= w.cfg.MeasureFrom
			if measured {
				st.Offered++
				st.offeredWindow++
			}
			ready = ready[:0]
			for _, in := range w.byService[s.Name] {
				if in.server.Ready(at) {
					ready = append(ready, in.server)
				}
			}
			srv := w.router.Pick(at, ready)
			if srv == nil {
				// No endpoint: the sidecar answers 503 at once.
				if measured {
					st.observe(math.Inf(1))
				}
				continue
			}
			srv.Submit(at)
		}
	}
}

func (w *World) record(in *instance, done []modelserver.Completion) {
	st := w.stats[in.service.Name]
	for _, c := range done {
		ms := (c.Done-c.Arrival)*1000 + w.cfg.NetworkMs
		code := 200
		if c.Rejected {
			code = 503
		}
		in.istio.Observe(ms, code)
		if c.Arrival < w.cfg.MeasureFrom {
			continue
		}
		if c.Rejected {
			st.observe(math.Inf(1))
		} else {
			st.observe(ms)
		}
	}
}

// applyInterference sets each server's latency factor from its GPU
// neighbours' utilisation in the previous step.
func (w *World) applyInterference() {
	byGPU := map[gpuID][]*instance{}
	for _, in := range w.instances {
		byGPU[in.gpu] = append(byGPU[in.gpu], in)
	}
	for _, group := range byGPU {
		for _, in := range group {
			var nb []interference.Neighbour
			for _, o := range group {
				if o != in {
					nb = append(nb, interference.Neighbour{Model: o.model, Utilization: o.util})
				}
			}
			in.server.SetFactor(w.cfg.Interference.Factor(in.model, nb))
		}
	}
}

// account updates DCGM gauges, billed GPU time and placement checks.
func (w *World) account(busy map[gpuID]float64, t0, t1 float64) {
	dt := t1 - t0
	type gpuUse struct {
		mem    int64
		models map[string]int
		typ    string
	}
	use := map[gpuID]*gpuUse{}
	for _, in := range w.instances {
		u := use[in.gpu]
		if u == nil {
			u = &gpuUse{models: map[string]int{}, typ: in.prof.GPUType}
			use[in.gpu] = u
		}
		u.mem += in.memMiB
		u.models[in.model]++
	}
	measured := math.Max(0, t1-math.Max(t0, w.cfg.MeasureFrom))
	for id, u := range use {
		w.gpuSecs[u.typ] += measured
		for _, n := range u.models {
			if n > 1 {
				w.colocs++
			}
		}
		if node, err := w.nodes.Get(id.node); err == nil {
			if inv, err := gpuinventory.NodeGPUsOf(node); err == nil && u.mem > inv.MemoryMiB {
				w.overcom++
			}
		}
	}
	for id := range w.gpuUtil {
		w.gpuUtil[id] = 0
	}
	for id, b := range busy {
		w.gpuUtil[id] = math.Min(100, 100*b/dt)
	}
	for _, d := range w.dcgm {
		node, err := w.nodes.Get(d.node)
		if err != nil {
			continue
		}
		inv, err := gpuinventory.NodeGPUsOf(node)
		if err != nil {
			continue
		}
		for i := 0; i < inv.Count; i++ {
			id := gpuID{d.node, i}
			used := int64(0)
			if u := use[id]; u != nil {
				used = u.mem
			}
			d.exp.SetGPU(exporters.GPUSample{
				Index: i, UUID: fmt.Sprintf("GPU-%s-%d", d.node, i), ModelName: inv.Product,
				UtilPercent: w.gpuUtil[id], FBUsedMiB: used, FBFreeMiB: max(inv.MemoryMiB-used, 0),
			})
		}
	}
}

// syncPodsLocked adds servers for new Running pods and drains removed ones.
func (w *World) syncPodsLocked(now float64) {
	pods, err := w.pods.List(labels.Everything())
	if err != nil {
		return
	}
	seen := map[types.UID]bool{}
	for _, p := range pods {
		live := p.Status.Phase == v1.PodRunning && p.Status.PodIP != "" && p.DeletionTimestamp == nil
		if !live {
			continue
		}
		seen[p.UID] = true
		if p.Labels["app"] == LabelDCGMExporter {
			if _, ok := w.dcgm[p.UID]; !ok {
				w.addDCGM(p)
			}
			continue
		}
		if _, ok := w.instances[p.UID]; !ok {
			w.addInstance(p, now)
		}
	}
	for uid, in := range w.instances {
		if !seen[uid] {
			w.record(in, in.server.Drain())
			_ = in.http.Close()
			delete(w.instances, uid)
			list := w.byService[in.service.Name]
			for i, x := range list {
				if x == in {
					w.byService[in.service.Name] = append(list[:i], list[i+1:]...)
					break
				}
			}
		}
	}
	for uid, d := range w.dcgm {
		if !seen[uid] {
			_ = d.http.Close()
			delete(w.dcgm, uid)
		}
	}
}

func (w *World) serviceOf(p *v1.Pod) *Service {
	for i := range w.cfg.Services {
		s := &w.cfg.Services[i]
		if s.Namespace == p.Namespace && s.Name == p.Labels[v1alpha1.LabelModelService] {
			return s
		}
	}
	return nil
}

func (w *World) addInstance(p *v1.Pod, now float64) {
	s := w.serviceOf(p)
	if s == nil {
		return
	}
	node, err := w.nodes.Get(p.Spec.NodeName)
	if err != nil {
		return
	}
	prof, ok := s.PerProduct[node.Labels[gpuinventory.LabelGPUProduct]]
	if !ok {
		klog.InfoS("simulator: no profile for pod's GPU", "pod", klog.KObj(p), "product", node.Labels[gpuinventory.LabelGPUProduct])
		return
	}
	idx, has, err := gpuinventory.ParseGPUIndex(p.Annotations)
	if !has || err != nil {
		return
	}
	d, _, _ := gpuinventory.DemandOf(p)
	srv, err := modelserver.NewServer(modelserver.Config{
		Name: p.Namespace + "/" + p.Name, Model: s.Model, BatchSize: s.BatchSize,
		BatchLatency: prof.LatencyMs / 1000, MaxBatchDelay: w.cfg.MaxBatchDelay,
		ReadyAt: now + prof.LaunchSeconds, QueueTimeout: w.queueTimeout(s, prof),
	})
	if err != nil {
		klog.ErrorS(err, "simulator: bad server config", "pod", klog.KObj(p))
		return
	}
	istio := exporters.NewIstio(exporters.IstioLabels{
		SourceWorkload: "loadgen", SourceWorkloadNamespace: p.Namespace,
		DestinationWorkload: ownerWorkload(p), DestinationWorkloadNamespace: p.Namespace,
		DestinationServiceName: s.Name, DestinationServiceNamespace: p.Namespace,
		DestinationApp: s.Model, DestinationVersion: prof.GPUType,
	}, w.Clock.SimTime)
	in := &instance{uid: p.UID, name: p.Name, service: s, prof: prof, gpu: gpuID{p.Spec.NodeName, idx},
		server: srv, istio: istio, model: s.Model, memMiB: d.MemoryMiB}
	in.http = listen(p.Status.PodIP, IstioPort, IstioPath, exporters.Handler(istio))
	w.instances[p.UID] = in
	w.byService[s.Name] = append(w.byService[s.Name], in)
	if !w.scheduled[p.UID] {
		w.scheduled[p.UID] = true
		w.stats[s.Name].PodsStarted++
	}
}

// queueTimeout is the instance's queue-policy timeout, seconds
// (modelserver.DeadlineQueueTimeout), 0 unless the service is deadline-aware.
func (w *World) queueTimeout(s *Service, prof InstanceProfile) float64 {
	if !s.DeadlineAware {
		return 0
	}
	return modelserver.DeadlineQueueTimeout(s.RTMaxMs, prof.LatencyMs, w.cfg.NetworkMs)
}

func (w *World) addDCGM(p *v1.Pod) {
	exp := exporters.NewDCGM(p.Spec.NodeName, w.Clock.SimTime)
	w.dcgm[p.UID] = &dcgmPod{node: p.Spec.NodeName, exp: exp, http: listen(p.Status.PodIP, DCGMPort, DCGMPath, exporters.Handler(exp))}
}

// ownerWorkload is Istio's destination_workload: the Deployment's name,
// found by stripping the ReplicaSet and pod hashes.
func ownerWorkload(p *v1.Pod) string {
	for _, o := range p.OwnerReferences {
		if o.Kind == "ReplicaSet" {
			if h := p.Labels["pod-template-hash"]; h != "" && len(o.Name) > len(h)+1 {
				return o.Name[:len(o.Name)-len(h)-1]
			}
			return o.Name
		}
	}
	return p.Name
}

// listen serves h at ip:port/path. A pod IP is in 127.0.0.0/8 (kwok's
// --cidr), so each simulated container has its own loopback address.
func listen(ip string, port int, path string, h http.Handler) *http.Server {
	mux := http.NewServeMux()
	mux.Handle(path, h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	addr := net.JoinHostPort(ip, strconv.Itoa(port))
	if parsed := net.ParseIP(ip); parsed == nil || !parsed.IsLoopback() {
		klog.InfoS("simulator: refusing to listen outside loopback", "addr", addr)
		return srv
	}
	var l net.Listener
	var err error
	for try := 0; try < 20; try++ { // an address freed by a deleted pod may linger briefly
		if l, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if err != nil {
		klog.ErrorS(err, "simulator: listen", "addr", addr)
		return srv
	}
	go func() { _ = srv.Serve(l) }()
	return srv
}
