package scaler

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/hetsev/hetsev/pkg/adapter/prometheus"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/dra"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
	"github.com/hetsev/hetsev/pkg/interference"
	"github.com/hetsev/hetsev/pkg/schedulerconfig"
)

// Options are hetsev-scaler's command-line settings (the webhook's are
// webhook.Options).
type Options struct {
	// Kubeconfig is a kubeconfig path; "" uses the in-cluster config.
	Kubeconfig string
	// Namespace limits the controller to one namespace ("" = all).
	Namespace string
	// Workers is how many ModelServices are reconciled in parallel.
	Workers int
	// CatalogFile is a GPU catalog CSV; "" uses the embedded one.
	CatalogFile string
	// DRADriver is the --dra-driver flags' configuration; Validate
	// resolves it into Defaults.DRADriver.
	DRADriver dra.DriverConfig
	// LeaderElect elects a leader among replicas with the Lease
	// v1alpha1.ScalerName in LeaderElectNamespace.
	LeaderElect          bool
	LeaderElectNamespace string
	// MetricsBindAddress serves /metrics, HealthProbeBindAddress /healthz
	// and /readyz; "" or "0" disables either.
	MetricsBindAddress     string
	HealthProbeBindAddress string
	// Defaults are the solver and SLO check a ModelService may override.
	Defaults Defaults
	// TrafficSplit writes Istio routes weighted by capacity.
	TrafficSplit bool
	// InterferenceModel is a co-location model file (YAML/JSON,
	// interference.ColocationFile) for the capacity factor; empty: the
	// model fitted to the H100 measurements.
	InterferenceModel string
	// SchedulerConfig is the path of hetsev-scheduler's
	// KubeSchedulerConfiguration file: the free slots are counted with its
	// HetsevGPUShare arguments (maxBusyShare, anti-affinity, fit,
	// interference weight and model file; schedulerconfig.LoadFile); ""
	// takes their defaults.
	SchedulerConfig string
	// KubeAPIQPS and KubeAPIBurst limit queries to the API server.
	KubeAPIQPS   float64
	KubeAPIBurst int
	// MetricsTimeout bounds each call to custom.metrics.k8s.io, or each
	// PromQL query; a decision whose call runs out holds the replicas.
	MetricsTimeout time.Duration
	// MetricsBackend is where request rates and latencies come from:
	// MetricsBackendCustomMetrics or MetricsBackendPrometheus
	// (--metrics-backend).
	MetricsBackend string
	// Prometheus is the server and queries of MetricsBackendPrometheus:
	// the connection flags the metrics adapter has (--prometheus-url,
	// --prometheus-bearer-token-file, --prometheus-ca-file,
	// --prometheus-header) and --rate-window; its default queries.
	Prometheus prometheus.Options
	// DecisionHistory is how many of a ModelService's latest decisions
	// status.decisions keeps (0: none; at most MaxDecisionHistory).
	DecisionHistory int
	// StatusRefresh is how often the measured fields of a ModelService's
	// status are rewritten while nothing else in it changes
	// (--status-refresh, at least 1 s).
	StatusRefresh time.Duration
	// ClusterDomain is the DNS domain of the cluster's Services
	// (--cluster-domain): the VirtualService host of a ModelService is
	// <name>.<namespace>.svc.<ClusterDomain>.
	ClusterDomain string
}

// Values of --metrics-backend.
const (
	// MetricsBackendCustomMetrics reads custom.metrics.k8s.io, served by
	// hetsev-metrics-adapter through its APIService.
	MetricsBackendCustomMetrics = "custom-metrics"
	// MetricsBackendPrometheus runs the metrics adapter's PromQL against
	// Prometheus itself (pkg/adapter/prometheus): no APIService needed.
	MetricsBackendPrometheus = "prometheus"
)

// DefaultMetricsTimeout is --metrics-timeout's default: the default
// decision interval (DefaultIntervalSeconds). A decision makes no further
// call once one runs out and holds the replicas, so a hung metrics API
// stretches the time between decisions to at most twice the interval;
// a shorter deadline would hold the replicas of a Prometheus that answers
// a large query in a few seconds.
const DefaultMetricsTimeout = 5 * time.Second

// maxMetricsTimeout is the longest --metrics-timeout accepted: a reconcile
// worker waits that long per call.
const maxMetricsTimeout = 5 * time.Minute

// NewOptions returns the flags' defaults.
func NewOptions() *Options {
	return &Options{
		Workers:                2,
		LeaderElect:            true,
		LeaderElectNamespace:   "hetsev-system",
		MetricsBindAddress:     ":8080",
		HealthProbeBindAddress: ":8081",
		Defaults:               DefaultDefaults,
		TrafficSplit:           true,
		KubeAPIQPS:             50,
		KubeAPIBurst:           100,
		MetricsTimeout:         DefaultMetricsTimeout,
		MetricsBackend:         MetricsBackendCustomMetrics,
		Prometheus:             prometheus.DefaultOptions(),
		DecisionHistory:        DefaultDecisionHistory,
		StatusRefresh:          DefaultStatusRefresh,
		ClusterDomain:          DefaultClusterDomain,
	}
}

// AddFlags registers hetsev-scaler's flags on fs, with o's values as
// defaults.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "path to a kubeconfig; in-cluster config when empty")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "watch ModelServices in this namespace only (default: all)")
	fs.IntVar(&o.Workers, "workers", o.Workers, "ModelServices reconciled in parallel")
	fs.StringVar(&o.CatalogFile, "gpu-catalog", o.CatalogFile, "GPU catalog CSV (gpu_type, product_label, gpu_memory_mib, usd_per_hour, ...); default: the embedded data/profiles/gpu_catalog.csv")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "elect a leader among replicas with a Lease")
	fs.StringVar(&o.LeaderElectNamespace, "leader-elect-namespace", o.LeaderElectNamespace, "namespace of the leader-election Lease")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, "address of /metrics")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress, "address of /healthz and /readyz")
	fs.StringVar(&o.Defaults.Solver, "solver", o.Defaults.Solver, "how the amount of a scaling action is computed: exact (the ILP of HetSev 4.1, solved exactly) or heuristic (the paper's greedy selection); a ModelService's spec.scaling.solver overrides it")
	fs.StringVar(&o.Defaults.SLOCheck, "slo-check", o.Defaults.SLOCheck, "which GPU types meet the SLO: paper (profiled batch latency <= RT_max, HetSev 4.1) or model (latency model of a dynamic batcher: queueing and the fitted co-location inflation of one neighbour busy at the saturation threshold, at SL_min; conservative)")
	fs.StringVar(&o.Defaults.RuntimeClassName, "gpu-runtime-class", o.Defaults.RuntimeClassName, "RuntimeClass given to GPU pods that name none: the scaler's Deployments and pods the webhook opts in. The NVIDIA runtime reads NVIDIA_VISIBLE_DEVICES, and is not the node's default with the GPU Operator's CDI mode (v25.10 and later); empty leaves runtimeClassName alone (nodes whose default runtime is NVIDIA's)")
	fs.Func("flavors", "instance flavors, busy shares in (0, 1] comma-separated and ascending, e.g. 0.1,0.25,0.5,1, that each GPU type of a ModelService is offered in unless its spec.scaling.flavors names others: a light flavor f < 1 declares busy share f, shares a GPU in use, and counts f x T_i requests/s (a batch taking L_i / f) at f times the GPU's price, with a Deployment of its own, where 3 L_i / f <= RT_max (L_i at spec.batchSize or at a smaller batch of spec.profiles[].smallBatches); 1 (or empty): whole-GPU instances only (default "+DefaultDefaults.Flavors.String()+")", func(v string) error {
		fl, err := heterogeneity.ParseFlavors(v)
		if err != nil {
			return err
		}
		o.Defaults.Flavors = fl
		return nil
	})
	fs.BoolVar(&o.Defaults.ModelThresholds, "model-thresholds", o.Defaults.ModelThresholds, "give every ModelService without spec.scaling.saturationThreshold the highest threshold at which the SLO latency model (a dynamic batcher's queueing at SL_min, each instance on a GPU of its own) meets RT_max on all its GPU types, in [0.3, 0.99]; --model-thresholds=false: 0.8")
	fs.BoolVar(&o.Defaults.SeasonalForecast, "seasonal-forecast", o.Defaults.SeasonalForecast, "provision for bursts that recur with a period of 5 to 60 minutes in a ModelService's own arrival rate before they start (the highest rate per minute is kept for 3 h, in status.rateHistory, so that a new leader keeps it); --seasonal-forecast=false: none")
	fs.BoolVar(&o.Defaults.Replacement, "replacement", o.Defaults.Replacement, "make-before-break replacement: when a ModelService would run cheaper on another GPU type or flavor (e.g. V100 -> T4 after a burst, a whole GPU -> a light flavor when quiet), with at least its capacity within the scale-in cool-down and the scale-in bar after it, add the new replicas first and remove the old ones only as new ones are Ready and weighted in the traffic split; one in flight per ModelService")
	fs.BoolVar(&o.Defaults.Consolidation, "consolidation", o.Defaults.Consolidation, "consolidation: move a Ready replica alone on its GPU onto a GPU in use where the scheduler admits it, make-before-break (a new replica of its column first; the old pod, marked with controller.kubernetes.io/pod-deletion-cost, goes once the new one is Ready and routed), so that its GPU is left empty; one move or replacement in flight per ModelService, --replacement-interval apart")
	fs.DurationVar(&o.Defaults.ReplacementInterval, "replacement-interval", o.Defaults.ReplacementInterval, "least time from the end of one replacement of a ModelService to the start of the next (0: 5m)")
	fs.DurationVar(&o.Defaults.ReplacementTimeout, "replacement-timeout", o.Defaults.ReplacementTimeout, "how long a replacement waits for its new replicas to be Ready and routed; then those not ready are removed and the old replicas stay (0: 5m)")
	fs.StringVar(&o.Defaults.GPUMode, "gpu-mode", o.Defaults.GPUMode, "how pods reach their GPU, as hetsev-scheduler's HetsevGPUShare gpuMode: annotations (the scheduler's hetsev.io/gpu-index read into NVIDIA_VISIBLE_DEVICES, with --gpu-runtime-class; nodes with NVIDIA's device plugin or GPU Operator) or dra (a ResourceClaimTemplate per Deployment requesting the instance's GPU memory as consumable capacity of DeviceClass "+v1alpha1.DeviceClassName+", allocated by hetsev-scheduler; NVIDIA's DRA driver injects the device through CDI; consumable capacity, on by default since Kubernetes 1.36). Also the webhook's mode")
	fs.BoolVar(&o.TrafficSplit, "traffic-split", o.TrafficSplit, "write Istio VirtualServices and DestinationRules that split each ModelService's traffic across GPU types by capacity")
	fs.StringVar(&o.InterferenceModel, "interference-model", o.InterferenceModel, "co-location model file (YAML/JSON: version hetsev.io/interference/v1, time-slicing and MPS coefficients, occupancy table) for the latency a neighbour adds in the SLO check; empty: the model fitted to the H100 measurements in data/measurements")
	fs.StringVar(&o.SchedulerConfig, "scheduler-config", o.SchedulerConfig, "hetsev-scheduler's KubeSchedulerConfiguration file (its --config): the free GPU slots are counted with the HetsevGPUShare arguments of its hetsev-scheduler profile (maxBusyShare, antiAffinity, fit, interferenceWeight, interferenceModelFile), by the scheduler's admission rule; empty: the arguments' defaults")
	fs.Float64Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "queries per second to the API server (client-go's default of 5 throttles a decision every few seconds per ModelService)")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "burst of queries to the API server")
	fs.DurationVar(&o.MetricsTimeout, "metrics-timeout", o.MetricsTimeout, "how long each call to custom.metrics.k8s.io, or each Prometheus query, may take (e.g. 5s); a decision whose call runs out holds the replicas and reports MetricsUnavailable with reason MetricsTimeout")
	fs.StringVar(&o.MetricsBackend, "metrics-backend", o.MetricsBackend, "where request rates and latencies come from: custom-metrics (custom.metrics.k8s.io, served by hetsev-metrics-adapter through its APIService) or prometheus (the adapter's Prometheus queries run by the scaler itself against --prometheus-url; no APIService needed)")
	fs.IntVar(&o.Defaults.ReplicaCeiling, "max-replicas", o.Defaults.ReplicaCeiling, "the most replicas any ModelService holds over all its GPU types and flavors, whatever its spec.scaling.maxReplicas (0 there means this); 0: no ceiling")
	fs.IntVar(&o.DecisionHistory, "decision-history", o.DecisionHistory, fmt.Sprintf("how many of a ModelService's latest decisions status.decisions keeps, oldest first (those that changed replicas or the action, as status.lastDecision); 0 keeps none; at most %d", MaxDecisionHistory))
	fs.DurationVar(&o.StatusRefresh, "status-refresh", o.StatusRefresh, "how often a ModelService's measured status fields (measuredAt, arrivalRate, saturation, latency, attainment, rateHistory) are rewritten while nothing else in its status changes; any other change is written at once. At least 1s")
	fs.StringVar(&o.ClusterDomain, "cluster-domain", o.ClusterDomain, "DNS domain of the cluster's Services (the kubelet's clusterDomain): the host of each ModelService's VirtualService is <name>.<namespace>.svc.<domain>")
	o.DRADriver.AddGoFlags(fs)
	o.Prometheus.Connection.AddGoFlags(fs)
	fs.DurationVar(&o.Prometheus.RateWindow, "rate-window", o.Prometheus.RateWindow, "with --metrics-backend=prometheus: the PromQL range of request rates and latency percentiles (whole seconds), as hetsev-metrics-adapter's --rate-window")
}

// PrometheusOptions are the Prometheus backend's options as the scaler
// uses them: each query bounded by --metrics-timeout, and answers cached
// for a second at most, so one decision's Deployments share a query and
// the next decision asks again.
func (o *Options) PrometheusOptions() prometheus.Options {
	p := o.Prometheus
	p.Timeout = o.MetricsTimeout
	p.CacheTTL = time.Second
	return p
}

// GPUShareArgs are hetsev-scheduler's HetsevGPUShare arguments from
// --scheduler-config (schedulerconfig.LoadFile), or their defaults when it
// is empty. Errors name the file and the field.
func (o *Options) GPUShareArgs() (schedulerconfig.GPUShareArgs, error) {
	if o.SchedulerConfig == "" {
		return schedulerconfig.DefaultGPUShareArgs(), nil
	}
	return schedulerconfig.LoadFile(o.SchedulerConfig)
}

// Validate checks the flags.
func (o *Options) Validate() error {
	if _, err := interference.LoadColocation(o.InterferenceModel); err != nil {
		return fmt.Errorf("--interference-model: %w", err)
	}
	if _, ok := heterogeneity.LookupSolver(o.Defaults.Solver); !ok {
		return fmt.Errorf("--solver=%q: want exact or heuristic", o.Defaults.Solver)
	}
	if o.Defaults.SLOCheck != heterogeneity.SLOCheckModel && o.Defaults.SLOCheck != heterogeneity.SLOCheckPaper {
		return fmt.Errorf("--slo-check=%q: want model or paper", o.Defaults.SLOCheck)
	}
	args, err := o.GPUShareArgs()
	if err != nil {
		return fmt.Errorf("--scheduler-config: %w", err)
	}
	if !v1alpha1.IsGPUMode(o.Defaults.GPUMode) {
		return fmt.Errorf("--gpu-mode=%q: want %s or %s", o.Defaults.GPUMode, v1alpha1.GPUModeAnnotations, v1alpha1.GPUModeDRA)
	}
	d, err := o.DRADriver.Driver()
	if err != nil {
		return fmt.Errorf("--dra-driver: %w", err)
	}
	// The scheduler counts the GPUs of its configured driver; claims
	// written for another would never be allocated. Without --dra-driver
	// flags, the scheduler configuration's driver is taken.
	if o.SchedulerConfig != "" {
		if o.DRADriver == (dra.DriverConfig{}) {
			d = args.Driver
		} else if !d.Equal(args.Driver) {
			return fmt.Errorf("--dra-driver: %s, but --scheduler-config %s configures hetsev-scheduler with %s: set both alike", d, o.SchedulerConfig, args.Driver.WithDefault())
		}
	}
	o.Defaults.DRADriver = d.WithDefault()
	switch o.MetricsBackend {
	case MetricsBackendCustomMetrics:
	case MetricsBackendPrometheus:
		if err := o.PrometheusOptions().Validate(); err != nil {
			return fmt.Errorf("--metrics-backend=prometheus: %w", err)
		}
	default:
		return fmt.Errorf("--metrics-backend=%q: want %s or %s", o.MetricsBackend, MetricsBackendCustomMetrics, MetricsBackendPrometheus)
	}
	if o.MetricsTimeout <= 0 || o.MetricsTimeout > maxMetricsTimeout {
		return fmt.Errorf("--metrics-timeout=%v: want a duration above 0 and at most %v", o.MetricsTimeout, maxMetricsTimeout)
	}
	if o.Defaults.ReplicaCeiling < 0 {
		return fmt.Errorf("--max-replicas=%d: want 0 (no ceiling) or more", o.Defaults.ReplicaCeiling)
	}
	if o.Defaults.ReplacementInterval < 0 || o.Defaults.ReplacementTimeout < 0 {
		return fmt.Errorf("--replacement-interval=%v, --replacement-timeout=%v: want durations >= 0 (0: 5m)", o.Defaults.ReplacementInterval, o.Defaults.ReplacementTimeout)
	}
	if o.DecisionHistory < 0 || o.DecisionHistory > MaxDecisionHistory {
		return fmt.Errorf("--decision-history=%d: want 0 (none) to %d", o.DecisionHistory, MaxDecisionHistory)
	}
	if o.StatusRefresh < time.Second {
		return fmt.Errorf("--status-refresh=%v: want at least 1s", o.StatusRefresh)
	}
	if errs := validation.IsDNS1123Subdomain(o.ClusterDomain); len(errs) > 0 {
		return fmt.Errorf("--cluster-domain=%q: %s", o.ClusterDomain, strings.Join(errs, "; "))
	}
	if o.Workers < 1 {
		return fmt.Errorf("--workers=%d: want at least 1", o.Workers)
	}
	return nil
}
