package scaler

import (
	"fmt"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"os"
	"sync"
	"time"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	v1 "k8s.io/api/core/v1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	cmclient "k8s.io/metrics/pkg/client/custom_metrics"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/catalog"
	"github.com/hetsev/hetsev/pkg/interference"
	"github.com/hetsev/hetsev/pkg/kubeversion"
)

// Leader election timing: a standby takes over within the lease duration
// when the leader goes away.
const (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
)

// RESTConfig is the API server's config from --kubeconfig (in-cluster when
// empty), with --kube-api-qps and --kube-api-burst.
func (o *Options) RESTConfig() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = float32(o.KubeAPIQPS), o.KubeAPIBurst
	return cfg, nil
}

// NewManager builds the controller-runtime manager of hetsev-scaler with
// the ModelService controller set up, after checking that the API server
// is one hetsev supports (pkg/kubeversion): leader election on a Lease, /metrics
// (hetsev_scaler_* beside controller-runtime's own), /healthz and /readyz.
// A lost lease makes the manager's Start return an error.
func (o *Options) NewManager(cfg *rest.Config) (manager.Manager, error) {
	cat, err := loadCatalog(o.CatalogFile)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	if err := kubeversion.Check(disc); err != nil {
		return nil, err
	}
	// A cache entry for a kind the API server does not serve fails the
	// manager's start: the Istio kinds are cached only where Istio's CRDs
	// are installed (the reconciler then watches them too).
	istio, err := servesGroupVersion(disc, networkingv1.SchemeGroupVersion.String())
	if err != nil {
		return nil, err
	}
	admission, err := o.GPUShareArgs()
	if err != nil {
		return nil, fmt.Errorf("--scheduler-config: %w", err)
	}
	// In DRA mode with the GPU pool, the pool's GPUs get a device taint
	// where the API server serves DeviceTaintRules (PoolTaintReconciler).
	poolRules := false
	if o.Defaults.GPUMode == v1alpha1.GPUModeDRA && admission.GPUPool != nil && *admission.GPUPool {
		if poolRules, err = servesResource(disc, resourcev1beta2.SchemeGroupVersion.String(), "devicetaintrules"); err != nil {
			return nil, err
		}
		if !poolRules {
			klog.Background().Info("the API server serves no resource.k8s.io/v1beta2 DeviceTaintRules: the GPU pool's devices are not tainted, so claims of other DeviceClasses may be allocated on them")
		}
	}
	mopts := manager.Options{
		Scheme:                        Scheme(),
		Cache:                         CacheOptions(istio, poolRules, o.Namespace),
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsBindAddress},
		HealthProbeBindAddress:        o.HealthProbeBindAddress,
		LeaderElection:                o.LeaderElect,
		LeaderElectionID:              v1alpha1.ScalerName,
		LeaderElectionNamespace:       o.LeaderElectNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 ptr(leaseDuration),
		RenewDeadline:                 ptr(renewDeadline),
		RetryPeriod:                   ptr(retryPeriod),
	}
	if mopts.Metrics.BindAddress == "" {
		mopts.Metrics.BindAddress = "0" // "" means off, as it did before controller-runtime
	}
	mgr, err := manager.New(cfg, mopts)
	if err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	registerMetrics.Do(func() { Register(ctrlmetrics.Registry) })
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	// The custom metrics client takes no context: its requests, and the
	// discovery it makes, end at the config's Timeout.
	metricsCfg := rest.CopyConfig(cfg)
	metricsCfg.Timeout = o.MetricsTimeout
	metricsDisc, err := discovery.NewDiscoveryClientForConfig(metricsCfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	colocation, err := interference.LoadColocation(o.InterferenceModel)
	if err != nil {
		return nil, fmt.Errorf("--interference-model: %w", err)
	}
	var metrics MetricsSource = CustomMetrics{Client: cmclient.NewForConfig(metricsCfg, mgr.GetRESTMapper(), cmclient.NewAvailableAPIsGetter(metricsDisc))}
	if o.MetricsBackend == MetricsBackendPrometheus {
		if metrics, err = NewPrometheusMetrics(o.PrometheusOptions(), mgr.GetCache()); err != nil {
			return nil, fmt.Errorf("--metrics-backend=prometheus: %w", err)
		}
	}
	r := &Reconciler{
		Admission:      &admission,
		Colocation:     colocation,
		Client:         mgr.GetClient(),
		APIReader:      mgr.GetAPIReader(),
		Metrics:        metrics,
		MetricsTimeout: o.MetricsTimeout,
		Catalog:        cat,
		// core/v1 Events, aggregated with a count, as kubectl and the demo
		// read them.
		Recorder:        mgr.GetEventRecorderFor(v1alpha1.ScalerName), //nolint:staticcheck
		Defaults:        o.Defaults,
		TrafficSplit:    o.TrafficSplit,
		DecisionHistory: o.DecisionHistory,
		StatusRefresh:   o.StatusRefresh,
		ClusterDomain:   o.ClusterDomain,
	}
	if err := r.SetupWithManager(mgr, o.Workers); err != nil {
		return nil, err
	}
	if poolRules {
		if err := (&PoolTaintReconciler{Client: mgr.GetClient(), Driver: o.Defaults.DRADriver}).SetupWithManager(mgr); err != nil {
			return nil, err
		}
	}
	return mgr, nil
}

// CacheOptions is what the scaler caches: pods that have not finished,
// trimmed to what its rules read (PodCacheFieldSelector, TrimPod); nodes;
// Deployments; and of Services, VirtualServices and DestinationRules only
// the ModelServices' (RoutingCacheSelector), the Istio kinds only where
// istio says the API server serves them; with poolRules, the
// DeviceTaintRules it keeps for the GPU pool (PoolTaintRuleSelector).
// Managed fields are never read, so they take no memory. A namespace other
// than "" limits the namespaced kinds to it (--namespace).
func CacheOptions(istio, poolRules bool, namespace string) cache.Options {
	byObject := map[client.Object]cache.ByObject{
		&v1.Service{}: {Label: RoutingCacheSelector()},
		&v1.Pod{}:     {Field: PodCacheFieldSelector(), Transform: TrimPod},
	}
	if istio {
		byObject[&networkingv1.VirtualService{}] = cache.ByObject{Label: RoutingCacheSelector()}
		byObject[&networkingv1.DestinationRule{}] = cache.ByObject{Label: RoutingCacheSelector()}
	}
	if poolRules {
		byObject[&resourcev1beta2.DeviceTaintRule{}] = cache.ByObject{Label: PoolTaintRuleSelector()}
	}
	opts := cache.Options{DefaultTransform: cache.TransformStripManagedFields(), ByObject: byObject}
	if namespace != "" {
		opts.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	}
	return opts
}

// RoutingCacheSelector selects the Services, VirtualServices and
// DestinationRules the scaler caches: those labelled
// hetsev.io/modelservice, which it creates.
func RoutingCacheSelector() labels.Selector {
	req, err := labels.NewRequirement(v1alpha1.LabelModelService, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant, valid label key
	}
	return labels.NewSelector().Add(*req)
}

// registerMetrics adds the scaler's collectors to controller-runtime's
// registry once per process.
var registerMetrics sync.Once

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

// servesGroupVersion says whether the API server serves groupVersion
// (e.g. networking.istio.io/v1); an error other than "not found" is
// returned.
func servesGroupVersion(disc discovery.DiscoveryInterface, groupVersion string) (bool, error) {
	_, err := disc.ServerResourcesForGroupVersion(groupVersion)
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	default:
		return false, fmt.Errorf("discovery of %s: %w", groupVersion, err)
	}
}

// servesResource says whether the API server serves resource (plural, e.g.
// devicetaintrules) in groupVersion; a group version it does not serve is
// false, another error is returned.
func servesResource(disc discovery.DiscoveryInterface, groupVersion, resource string) (bool, error) {
	list, err := disc.ServerResourcesForGroupVersion(groupVersion)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("discovery of %s: %w", groupVersion, err)
	}
	for _, r := range list.APIResources {
		if r.Name == resource {
			return true, nil
		}
	}
	return false, nil
}
