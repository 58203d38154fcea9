// Command hetsev-scaler reconciles ModelService objects: it keeps one
// Deployment per GPU type and scales them by HetSev's decision (paper 4.1).
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hetsev/hetsev/pkg/catalog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	cmclient "k8s.io/metrics/pkg/client/custom_metrics"

	istioclient "istio.io/client-go/pkg/clientset/versioned"

	"github.com/hetsev/hetsev/pkg/heterogeneity"
	"github.com/hetsev/hetsev/pkg/scaler"
	"github.com/hetsev/hetsev/pkg/webhook"
)

func main() {
	klog.InitFlags(nil)
	kubeconfig := flag.String("kubeconfig", "", "path to a kubeconfig; in-cluster config when empty")
	namespace := flag.String("namespace", "", "watch ModelServices in this namespace only (default: all)")
	workers := flag.Int("workers", 2, "ModelServices reconciled in parallel")
	catalogFile := flag.String("gpu-catalog", "", "GPU catalog CSV (gpu_type, product_label, gpu_memory_mib, usd_per_hour, ...); default: the embedded data/profiles/gpu_catalog.csv")
	leaderElect := flag.Bool("leader-elect", true, "elect a leader among replicas with a Lease")
	leaseNS := flag.String("leader-elect-namespace", "hetsev-system", "namespace of the leader-election Lease")
	metricsAddr := flag.String("metrics-bind-address", ":8080", "address of /metrics")
	healthAddr := flag.String("health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	solver := flag.String("solver", heterogeneity.SolverExact, "how the amount of a scaling action is computed: exact (the ILP of HetSev 4.1, solved exactly) or heuristic (the paper's greedy selection); a ModelService's spec.scaling.solver overrides it")
	sloCheck := flag.String("slo-check", heterogeneity.SLOCheckPaper, "which GPU types meet the SLO: paper (profiled batch latency <= RT_max, HetSev 4.1) or model (latency model with batch formation, queueing and +18 % co-location, at SL_min; conservative)")
	trafficSplit := flag.Bool("traffic-split", true, "write Istio VirtualServices and DestinationRules that split each ModelService's traffic across GPU types by capacity")
	qps := flag.Float64("kube-api-qps", 50, "queries per second to the API server (client-go's default of 5 throttles a decision every few seconds per ModelService)")
	burst := flag.Int("kube-api-burst", 100, "burst of queries to the API server")
	wh := webhook.NewOptions()
	wh.AddFlags(flag.CommandLine)
	flag.Parse()
	kubeQPS, kubeBurst = float32(*qps), *burst
	defaults := scaler.Defaults{Solver: *solver, SLOCheck: *sloCheck}
	if err := run(*kubeconfig, *namespace, *workers, *catalogFile, *leaderElect, *leaseNS, *metricsAddr, *healthAddr, *trafficSplit, defaults, wh); err != nil {
		klog.ErrorS(err, "hetsev-scaler failed")
		os.Exit(1)
	}
}

func run(kubeconfig, namespace string, workers int, catalogFile string, leaderElect bool, leaseNS, metricsAddr, healthAddr string, trafficSplit bool, defaults scaler.Defaults, wh *webhook.Options) error {
	if _, ok := heterogeneity.LookupSolver(defaults.Solver); !ok {
		return fmt.Errorf("--solver=%q: want exact or heuristic", defaults.Solver)
	}
	if defaults.SLOCheck != heterogeneity.SLOCheckModel && defaults.SLOCheck != heterogeneity.SLOCheckPaper {
		return fmt.Errorf("--slo-check=%q: want model or paper", defaults.SLOCheck)
	}
	if err := wh.Validate(); err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = kubeQPS, kubeBurst
	cat, err := loadCatalog(catalogFile)
	if err != nil {
		return err
	}
	kube := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	disc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	cm := cmclient.NewForConfig(cfg, mapper, cmclient.NewAvailableAPIsGetter(disc))

	// The webhook serves on every replica, leader or not: the API server
	// calls whichever the Service picks.
	if err := wh.Start(ctx, kube); err != nil {
		return err
	}

	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scaler.Scheme(), v1.EventSource{Component: "hetsev-scaler"})

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	scaler.Register(reg)
	serve(metricsAddr, "/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux := http.NewServeMux()
	mux.Handle("/healthz", ok)
	mux.Handle("/readyz", ok)
	serve(healthAddr, "", mux)

	opts := scaler.Options{Kube: kube, Dynamic: dyn, Metrics: scaler.CustomMetrics{Client: cm}, Catalog: cat, Recorder: recorder, Namespace: namespace, Resync: 10 * time.Minute, Defaults: defaults}
	if trafficSplit {
		if opts.Istio, err = istioclient.NewForConfig(cfg); err != nil {
			return fmt.Errorf("istio client: %w", err)
		}
	}
	ctrl := scaler.New(opts)
	if !leaderElect {
		return ctrl.Run(ctx, workers)
	}
	id, _ := os.Hostname()
	id = fmt.Sprintf("%s_%d", id, os.Getpid())
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: "hetsev-scaler", Namespace: leaseNS},
		Client:     kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock: lock, ReleaseOnCancel: true,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				if err := ctrl.Run(ctx, workers); err != nil {
					klog.ErrorS(err, "controller stopped")
				}
			},
			OnStoppedLeading: func() { klog.InfoS("lost leadership", "identity", id) },
		},
		Name: "hetsev-scaler",
	})
	return nil
}

var (
	kubeQPS   float32 = 50
	kubeBurst         = 100
)

func loadCatalog(path string) (catalog.Catalog, error) {
	if path == "" {
		return catalog.DefaultCatalog()
	}
	f, err := os.Open(path)
	if err != nil {
		return catalog.Catalog{}, fmt.Errorf("--gpu-catalog: %w", err)
	}
	defer f.Close()
	return catalog.LoadCatalog(f, path)
}

func serve(addr, path string, h http.Handler) {
	if addr == "" || addr == "0" {
		return
	}
	if path != "" {
		mux := http.NewServeMux()
		mux.Handle(path, h)
		h = mux
	}
	go func() {
		srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 5 * time.Second}
		if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
			klog.ErrorS(err, "serving", "addr", addr)
		}
	}()
}
