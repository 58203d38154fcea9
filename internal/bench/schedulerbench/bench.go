// Package schedulerbench measures hetsev-scheduler against the default
// scheduler profile on the real control plane of internal/cluster, in the spirit
// of upstream's scheduler_perf: nodes with GPU Feature Discovery labels,
// thousands of pending pods, scheduling throughput (pods/s) and the
// scheduler's own per-pod latency histograms
// (scheduler_scheduling_algorithm_duration_seconds, and
// scheduler_scheduling_attempt_duration_seconds: algorithm + binding).
// Both profiles run the same binary against the same nodes, one after the
// other, in one run; ratios between them are what to compare across runs.
package schedulerbench

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"

	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// Config sizes a run.
type Config struct {
	Nodes       int // GPU nodes (T4, GFD labels)
	GPUsPerNode int
	Pods        int // pods per profile
	Models      int // hetsev pods cycle through this many models
	GPUMemory   string
	Rounds      int // each profile runs this many times, alternating

	product string // the T4's GFD product label, from the catalog
}

// DefaultConfig is the size: 500 nodes with 4 GPUs, 5,000 pods of
// five models (2 GiB each, so anti-affinity leaves room: 1,000 instances of
// a model on 2,000 GPUs).
func DefaultConfig() Config {
	return Config{Nodes: 500, GPUsPerNode: 4, Pods: 5000, Models: 5, GPUMemory: "2Gi", Rounds: 3}
}

// Profile is one measured run.
type Profile struct {
	Name       string
	Pods       int
	Seconds    float64 // first to last binding seen
	Throughput float64 // pods/s
	// Per-pod latencies from the scheduler's own histograms, ms: the
	// scheduling algorithm (filter, score, reserve: what the plugins cost)
	// and the whole attempt (algorithm + binding, which under a flood of
	// pending pods mostly measures the API server's backlog).
	AlgorithmP50 float64
	AlgorithmP99 float64
	AttemptP50   float64
	AttemptP99   float64
	Unscheduled  int
}

// Report is every run, in order.
type Report struct{ Runs []Profile }

const (
	hetsevProfile  = v1alpha1.SchedulerName
	defaultProfile = "default-scheduler"
)

// Run starts a control plane in dir, creates the nodes and measures each
// profile cfg.Rounds times, alternating, starting with the default profile.
func Run(ctx context.Context, tb *cluster.ProgramTB, dir string, cfg Config, log func(string, ...any)) (Report, error) {
	cp, err := cluster.StartControlPlane(ctx, tb, dir)
	if err != nil {
		return Report{}, fmt.Errorf("control plane: %w", err)
	}
	defer cp.Stop()
	t4, err := cluster.T4Nodes(cfg.Nodes)
	if err != nil {
		return Report{}, err
	}
	t4.GPUsPerNode = cfg.GPUsPerNode
	cfg.product = t4.GPUType.ProductLabel
	start := time.Now()
	if _, err := cluster.CreateNodes(ctx, fastClient(cp), []cluster.NodeGroup{t4}); err != nil {
		return Report{}, err
	}
	log("created %d nodes with %d GPUs each in %s", cfg.Nodes, cfg.GPUsPerNode, time.Since(start).Round(time.Millisecond))

	hetsevCfg, err := cluster.SchedulerConfig(cp.Kubeconfig)
	if err != nil {
		return Report{}, err
	}
	// As scheduler_perf: the client is not the bottleneck.
	hetsevCfg = cluster.WithClientQPS(hetsevCfg, 5000)
	defaultCfg := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
  qps: 5000
  burst: 5000
leaderElection:
  leaderElect: false
profiles:
  - schedulerName: %s
`, cp.Kubeconfig, defaultProfile)

	var rep Report
	for r := 0; r < cfg.Rounds; r++ {
		for _, p := range []struct{ name, cfg string }{{defaultProfile, defaultCfg}, {hetsevProfile, hetsevCfg}} {
			res, err := runProfile(ctx, cp, cfg, p.name, p.cfg, fmt.Sprintf("%s-%d", p.name, r), log)
			if err != nil {
				return rep, err
			}
			rep.Runs = append(rep.Runs, res)
		}
	}
	return rep, nil
}

func fastClient(cp *cluster.ControlPlane) kubernetes.Interface {
	c := rest.CopyConfig(cp.Config)
	c.QPS, c.Burst = 10000, 10000
	return kubernetes.NewForConfigOrDie(c)
}

// runProfile creates cfg.Pods pending pods for the profile in a namespace
// of their own, starts the scheduler, waits for every binding, reads the
// scheduler's metrics and deletes the pods.
func runProfile(ctx context.Context, cp *cluster.ControlPlane, cfg Config, profile, schedCfg, ns string, log func(string, ...any)) (Profile, error) {
	c := fastClient(cp)
	if err := cluster.EnsureNamespace(ctx, c, ns); err != nil {
		return Profile{}, err
	}
	start := time.Now()
	if err := createPods(ctx, c, cfg, profile, ns); err != nil {
		return Profile{}, err
	}
	log("%s: created %d pending pods in %s", ns, cfg.Pods, time.Since(start).Round(time.Millisecond))

	var mu sync.Mutex
	var first, last time.Time
	bound := map[string]bool{}
	all := make(chan struct{})
	record := func(obj interface{}) {
		p, ok := obj.(*v1.Pod)
		if !ok || p.Spec.NodeName == "" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if bound[p.Name] {
			return
		}
		now := time.Now()
		if len(bound) == 0 {
			first = now
		}
		last = now
		bound[p.Name] = true
		if len(bound) == cfg.Pods {
			close(all)
		}
	}
	inf := informers.NewSharedInformerFactoryWithOptions(c, 0, informers.WithNamespace(ns))
	if _, err := inf.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj interface{}) { record(obj) },
	}); err != nil {
		return Profile{}, err
	}
	stop := make(chan struct{})
	defer close(stop)
	inf.Start(stop)
	inf.WaitForCacheSync(stop)

	port, err := cluster.FreePort()
	if err != nil {
		return Profile{}, err
	}
	sched, err := cluster.StartSchedulerWithConfig(ctx, cp, ns, schedCfg, cluster.SchedulerMetricsArgs(port)...)
	if err != nil {
		return Profile{}, err
	}
	defer sched.Stop(5 * time.Second)
	timeout := time.After(10 * time.Minute)
	select {
	case <-all:
	case <-timeout:
		return Profile{}, fmt.Errorf("%s: %d of %d pods bound after 10 minutes; scheduler log:\n%s", ns, len(bound), cfg.Pods, sched.Tail(30))
	case <-ctx.Done():
		return Profile{}, ctx.Err()
	}
	mu.Lock()
	res := Profile{Name: profile, Pods: len(bound), Seconds: last.Sub(first).Seconds()}
	mu.Unlock()
	if res.Seconds > 0 {
		res.Throughput = float64(res.Pods-1) / res.Seconds
	}
	families, err := cluster.ScrapeMetrics(ctx, port)
	if err != nil {
		return res, err
	}
	h, err := histogram(families, "scheduler_scheduling_attempt_duration_seconds", map[string]string{"profile": profile, "result": "scheduled"})
	if err != nil {
		return res, err
	}
	res.AttemptP50, res.AttemptP99 = 1000*quantile(h, 0.5), 1000*quantile(h, 0.99)
	if h, err = histogram(families, "scheduler_scheduling_algorithm_duration_seconds", nil); err != nil {
		return res, err
	}
	res.AlgorithmP50, res.AlgorithmP99 = 1000*quantile(h, 0.5), 1000*quantile(h, 0.99)
	log("%s: %d pods in %.2f s: %.1f pods/s; algorithm p50 %.2f ms p99 %.2f ms; attempt p50 %.2f ms p99 %.2f ms",
		ns, res.Pods, res.Seconds, res.Throughput, res.AlgorithmP50, res.AlgorithmP99, res.AttemptP50, res.AttemptP99)

	sched.Stop(5 * time.Second)
	zero := int64(0)
	if err := c.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil {
		return res, err
	}
	return res, nil
}

func createPods(ctx context.Context, c kubernetes.Interface, cfg Config, profile, ns string) error {
	names := make(chan int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range names {
				if _, err := c.CoreV1().Pods(ns).Create(ctx, benchPod(cfg, profile, ns, i), metav1.CreateOptions{}); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for i := 0; i < cfg.Pods; i++ {
		names <- i
	}
	close(names)
	wg.Wait()
	select {
	case err := <-errs:
		return fmt.Errorf("creating pods: %w", err)
	default:
		return nil
	}
}

// benchPod is a pod for profile: for hetsev a model instance of
// cfg.GPUMemory on a T4, for the default profile the same pod without the
// GPU share (the default plugins would ignore it).
func benchPod(cfg Config, profile, ns string, i int) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%05d", i), Namespace: ns},
		Spec: v1.PodSpec{
			SchedulerName: profile,
			NodeSelector:  map[string]string{gpuinventory.LabelGPUProduct: cfg.product},
			Containers: []v1.Container{{
				Name: "server", Image: "model-server:sim",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
					v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("128Mi"),
				}},
			}},
		},
	}
	if profile == hetsevProfile {
		p.Annotations = map[string]string{
			v1alpha1.AnnotationModel:     fmt.Sprintf("model-%d", i%cfg.Models),
			v1alpha1.AnnotationGPUMemory: cfg.GPUMemory,
		}
	}
	return p
}

// histogram is the series of the named histogram whose labels include
// want.
func histogram(families map[string]*dto.MetricFamily, name string, want map[string]string) (*dto.Histogram, error) {
	fam, ok := families[name]
	if !ok {
		return nil, fmt.Errorf("scheduler /metrics has no %s", name)
	}
	for _, m := range fam.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && labels[k] == v
		}
		if match && m.GetHistogram() != nil {
			return m.GetHistogram(), nil
		}
	}
	return nil, fmt.Errorf("no %s series with %v in the scheduler's metrics", name, want)
}

// quantile interpolates linearly within the bucket that holds q, as
// Prometheus's histogram_quantile does; seconds.
func quantile(h *dto.Histogram, q float64) float64 {
	total := float64(h.GetSampleCount())
	if total == 0 {
		return math.NaN()
	}
	rank := q * total
	var prevBound, prevCount float64
	for _, b := range h.GetBucket() {
		count := float64(b.GetCumulativeCount())
		if count >= rank {
			if math.IsInf(b.GetUpperBound(), 1) {
				return prevBound
			}
			if count == prevCount {
				return b.GetUpperBound()
			}
			return prevBound + (b.GetUpperBound()-prevBound)*(rank-prevCount)/(count-prevCount)
		}
		prevBound, prevCount = b.GetUpperBound(), count
	}
	return prevBound
}
