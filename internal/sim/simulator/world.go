package simulator

import (
	"context"
	"errors"
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

	"github.com/hetsev/hetsev/internal/sim/dradriver"
	"github.com/hetsev/hetsev/internal/sim/exporters"
	"github.com/hetsev/hetsev/internal/sim/modelserver"
	"github.com/hetsev/hetsev/internal/sim/replay"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
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

	mu        sync.Mutex
	eng       *replay.Engine
	svcs      map[string]*replay.Service // by Service.Name
	gpus      map[gpuID]*replay.GPU      // GPUs hosting instances
	instances map[types.UID]*instance
	dcgm      map[types.UID]*dcgmPod
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
	run     *replay.Instance // its server in the replay
	istio   *exporters.Istio
	http    *http.Server
	model   string
	// identity is the anti-affinity identity of the pod's model
	// (gpuinventory.Demand.Identity), what the co-location audit counts.
	identity string
	memMiB   int64
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
		synced: []cache.InformerSynced{f.Core().V1().Pods().Informer().HasSynced, f.Core().V1().Nodes().Informer().HasSynced},
		start:  f.Start,
		eng:    replay.New(cfg.Rates, cfg.Colocation, cfg.GPUSharing),
		svcs:   map[string]*replay.Service{}, gpus: map[gpuID]*replay.GPU{},
		instances: map[types.UID]*instance{}, dcgm: map[types.UID]*dcgmPod{},
		gpuUtil: map[gpuID]float64{},
		stats:   map[string]*ServiceStats{}, gpuSecs: map[string]float64{}, scheduled: map[types.UID]bool{},
	}
	// One generator and one router for all services, which draw from them
	// in the order of cfg.Services.
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	router := modelserver.NewRouter(cfg.Seed + 1)
	for i := range cfg.Services {
		s := &cfg.Services[i]
		st := &ServiceStats{Service: s.Name, RTMaxMs: s.RTMaxMs}
		w.stats[s.Name] = st
		w.svcs[s.Name] = w.eng.AddService(&replay.Service{
			Share: s.Share, Arrivals: rng, Router: router,
			Offered:  func(_ int, at []float64) { w.offered(st, at) },
			Unserved: func(at float64) { w.unserved(st, at) },
		})
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
	if s := w.svcs[service]; s != nil {
		return len(s.Instances())
	}
	return 0
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

// StopExporter closes the Istio metrics endpoint of pod namespace/name's
// simulated server, as a sidecar that stopped exporting would, while the
// server goes on serving its share of the requests. It reports whether the
// pod has a simulated server.
func (w *World) StopExporter(namespace, name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, in := range w.instances {
		if in.service.Namespace == namespace && in.name == name {
			_ = in.http.Close()
			return true
		}
	}
	return false
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

// step advances the simulation to trace time t1: the pods' servers
// replayed from the last step (internal/sim/replay), then the accounting.
func (w *World) step(t1 float64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t0 := w.Clock.Processed()
	if t1 <= t0 {
		return
	}
	w.syncPodsLocked(t0)
	w.eng.Step(t0, t1)
	w.account(t0, t1)
	w.Clock.setProcessed(t1)
}

// offered counts a service's arrivals in the measured part of the trace.
func (w *World) offered(st *ServiceStats, at []float64) {
	for _, a := range at {
		if a >= w.cfg.MeasureFrom {
			st.Offered++
			st.offeredWindow++
		}
	}
}

// unserved records a request that found no ready instance: the sidecar
// answers 503 at once.
func (w *World) unserved(st *ServiceStats, at float64) {
	if at >= w.cfg.MeasureFrom {
		st.observe(math.Inf(1))
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

// account updates DCGM gauges, billed GPU time and placement checks.
func (w *World) account(t0, t1 float64) {
	dt := t1 - t0
	type gpuUse struct {
		mem    int64
		models map[string]int // instances per model identity
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
		u.models[in.identity]++
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
	for id, g := range w.gpus {
		w.gpuUtil[id] = math.Min(100, 100*g.Busy()/dt)
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
				Index: i, UUID: dradriver.UUID(d.node, i), ModelName: inv.Product,
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
			w.eng.Remove(in.run) // its queued requests are served and recorded
			_ = in.http.Close()
			delete(w.instances, uid)
			if len(w.gpus[in.gpu].Instances()) == 0 {
				delete(w.gpus, in.gpu)
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
	batch, latencyMs := maxBatch(p, s, prof)
	srv, err := modelserver.NewServer(modelserver.Config{
		Name: p.Namespace + "/" + p.Name, Model: s.Model, BatchSize: batch,
		BatchLatency: latencyMs / 1000, MaxBatchDelay: w.cfg.MaxBatchDelay,
		ReadyAt: now + prof.LaunchSeconds, QueueTimeout: w.queueTimeout(s, latencyMs),
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
		istio: istio, model: s.Model, identity: identityOf(p, s.Model), memMiB: d.MemoryMiB}
	in.http = listen(p.Status.PodIP, IstioPort, IstioPath, exporters.Handler(istio))
	g := w.gpus[in.gpu]
	if g == nil {
		g = new(replay.GPU)
		w.gpus[in.gpu] = g
	}
	in.run = w.eng.Add(w.svcs[s.Name], g, srv, func(done []modelserver.Completion) { w.record(in, done) })
	w.instances[p.UID] = in
	if !w.scheduled[p.UID] {
		w.scheduled[p.UID] = true
		w.stats[s.Name].PodsStarted++
	}
}

// queueTimeout is the instance's queue-policy timeout, seconds
// (modelserver.DeadlineQueueTimeout with the batch latency inflated by one
// busy neighbour of the same kind, Colocation.PairInflation, or solo when
// that leaves no room), 0 unless the
// service is deadline-aware.
func (w *World) queueTimeout(s *Service, latencyMs float64) float64 {
	if !s.DeadlineAware {
		return 0
	}
	infl := w.cfg.Colocation.PairInflation(w.cfg.GPUSharing, s.Model, 1, latencyMs/1000)
	return modelserver.DeadlineQueueTimeout(s.RTMaxMs, latencyMs, infl, w.cfg.NetworkMs)
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

// identityOf is the anti-affinity identity of p's model as the scheduler
// reads it (gpuinventory.ModelOf); a pod without hetsev.io/model counts
// as its service's model, in its scope.
func identityOf(p *v1.Pod, model string) string {
	d := gpuinventory.ModelOf(p)
	if d.Model == "" {
		d = gpuinventory.Demand{Model: model, Scope: gpuinventory.ModelScope(p)}
	}
	return d.Identity()
}

// maxBatch is the batch size and solo batch latency (ms) p's server runs
// at: the service's, or a smaller measured batch p's
// AnnotationMaxBatchSize caps it at, as a real server reads
// EnvMaxBatchSize. An annotation without a measured batch is ignored.
func maxBatch(p *v1.Pod, s *Service, prof InstanceProfile) (int, float64) {
	b, err := strconv.Atoi(p.Annotations[v1alpha1.AnnotationMaxBatchSize])
	if err != nil || b < 1 || b >= s.BatchSize {
		return s.BatchSize, prof.LatencyMs
	}
	if ms, ok := prof.SmallBatchMs[b]; ok {
		return b, ms
	}
	return s.BatchSize, prof.LatencyMs
}
