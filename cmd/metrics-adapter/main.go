// Command metrics-adapter is hetsev's custom.metrics.k8s.io server: it reads
// the Istio and dcgm-exporter metrics of model-server pods, by scraping
// annotated pods itself (--backend=scrape, the default) or by querying
// Prometheus (--backend=prometheus), and serves request rate, latency
// percentiles and GPU utilisation per pod, Deployment and ModelService (see
// package github.com/hetsev/hetsev/pkg/adapter).
//
// Flags of its own: --backend, --rate-window, --namespace; for the scrape
// backend --scrape-interval, --scrape-timeout, --scrape-workers; for the
// Prometheus backend --prometheus-url, --prometheus-timeout,
// --prometheus-cache-ttl, the label flags and the query templates
// (--prometheus-*-query). The API-server flags (--secure-port,
// --bind-address, --cert-dir, --tls-cert-file, --lister-kubeconfig,
// --authentication-kubeconfig, --authorization-kubeconfig, ...) come from
// sigs.k8s.io/custom-metrics-apiserver's AdapterBase; without a serving
// certificate it writes a self-signed one for localhost and 127.0.0.1 to
// --cert-dir.
package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/metadata/metadatalister"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/logs"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	cmmetrics "sigs.k8s.io/custom-metrics-apiserver/pkg/apiserver/metrics"
	basecmd "sigs.k8s.io/custom-metrics-apiserver/pkg/cmd"

	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/adapter/prometheus"
	"github.com/hetsev/hetsev/pkg/adapter/provider"
	"github.com/hetsev/hetsev/pkg/adapter/scrape"
)

type metricsAdapter struct {
	basecmd.AdapterBase

	backend   string
	scrape    scrape.Options
	prom      prometheus.Options
	namespace string
}

// Values of --backend.
const (
	backendScrape     = "scrape"
	backendPrometheus = "prometheus"
)

func main() {
	logs.InitLogs()
	defer logs.FlushLogs()
	if err := run(); err != nil {
		klog.ErrorS(err, "hetsev-metrics-adapter failed")
		logs.FlushLogs()
		os.Exit(1)
	}
}

func run() error {
	cmd := &metricsAdapter{backend: backendScrape, scrape: scrape.DefaultOptions(), prom: prometheus.DefaultOptions()}
	cmd.Name = "hetsev-metrics-adapter"

	fs := cmd.Flags()
	fs.StringVar(&cmd.backend, "backend", cmd.backend,
		"Where metrics come from: scrape (the adapter scrapes annotated pods itself) or prometheus (PromQL against --prometheus-url).")
	fs.DurationVar(&cmd.scrape.Interval, "scrape-interval", cmd.scrape.Interval,
		"Wall-clock interval between scrapes of each annotated pod.")
	fs.DurationVar(&cmd.scrape.Timeout, "scrape-timeout", cmd.scrape.Timeout,
		"Timeout of one scrape.")
	fs.DurationVar(&cmd.scrape.RateWindow, "rate-window", cmd.scrape.RateWindow,
		"Window over which request rates and latency percentiles are computed: in the samples' own clock (exposition timestamps when present) for the scrape backend, the PromQL range (whole seconds) for the Prometheus backend.")
	fs.IntVar(&cmd.scrape.Workers, "scrape-workers", cmd.scrape.Workers,
		"Maximum number of concurrent scrapes.")
	p := &cmd.prom
	fs.StringVar(&p.URL, "prometheus-url", "", "Prometheus HTTP API root, e.g. http://prometheus.monitoring.svc:9090 (--backend=prometheus).")
	fs.DurationVar(&p.Timeout, "prometheus-timeout", p.Timeout,
		"Bound on one PromQL query; past it the API answers 503 ServiceUnavailable, never a zero.")
	fs.DurationVar(&p.CacheTTL, "prometheus-cache-ttl", p.CacheTTL,
		"How long one query's answer (a whole namespace, or all GPUs) is reused; 0 or negative disables the cache (one API request still runs each query at most once).")
	fs.StringVar(&p.NamespaceLabel, "prometheus-namespace-label", p.NamespaceLabel, "Label of Istio series holding the pod's namespace.")
	fs.StringVar(&p.PodLabel, "prometheus-pod-label", p.PodLabel, "Label of Istio series holding the pod's name.")
	fs.StringVar(&p.NodeLabel, "prometheus-node-label", p.NodeLabel, "Label of DCGM series holding the node name (dcgm-exporter's Hostname, or node when relabelled).")
	fs.StringVar(&p.GPULabel, "prometheus-gpu-label", p.GPULabel, "Label of DCGM series holding the GPU index.")
	fs.StringVar(&p.RequestRateQuery, "prometheus-request-rate-query", p.RequestRateQuery,
		"PromQL template (Go text/template: .Window, .NamespaceMatcher, .NamespaceLabel, .PodLabel, .NodeLabel, .GPULabel) giving requests/s per namespace and pod.")
	fs.StringVar(&p.DurationQuery, "prometheus-duration-query", p.DurationQuery,
		"PromQL template giving request-duration bucket counts per namespace, pod and le (ms).")
	fs.StringVar(&p.GPUUtilQuery, "prometheus-gpu-util-query", p.GPUUtilQuery, "PromQL template giving GPU utilisation (percent) per node and GPU index.")
	fs.StringVar(&p.GPUMemoryQuery, "prometheus-gpu-memory-query", p.GPUMemoryQuery, "PromQL template giving used GPU memory (MiB) per node and GPU index.")
	fs.StringVar(&cmd.namespace, "namespace", "",
		"Only watch pods and serve pods, Deployments and ModelServices in this namespace (default: all namespaces); with --backend=scrape, dcgm-exporter pods must then run in it too.")
	logs.AddFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		return fmt.Errorf("parsing flags: %w", err)
	}
	cmd.prom.RateWindow = cmd.scrape.RateWindow
	if cmd.prom.CacheTTL == 0 {
		cmd.prom.CacheTTL = -1 // the flag's 0 means off, the options' 0 the default
	}
	switch cmd.backend {
	case backendScrape:
		if err := cmd.scrape.Validate(); err != nil {
			return err
		}
		if cmd.scrape.Interval <= 0 || cmd.scrape.Timeout <= 0 || cmd.scrape.RateWindow <= 0 || cmd.scrape.Workers <= 0 {
			return errors.New("--scrape-interval, --scrape-timeout, --rate-window and --scrape-workers must be positive")
		}
	case backendPrometheus:
		if err := cmd.prom.Validate(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("--backend %q: want %s or %s", cmd.backend, backendScrape, backendPrometheus)
	}

	cfg, err := cmd.ClientConfig()
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace(cmd.namespace), informers.WithTransform(stripManagedFields))
	pods := factory.Core().V1().Pods()
	deployments := factory.Apps().V1().Deployments()
	podsSynced := pods.Informer().HasSynced
	deploymentsSynced := deployments.Informer().HasSynced

	// ModelServices by metadata only: names and labels are all the
	// provider needs. Without the CRD they are not listed by selector (a
	// ModelService asked for by name is still served from its pods).
	msGVR := adapter.ModelServicesResource.WithVersion("v1alpha1")
	var services metadatalister.Lister
	servicesSynced := func() bool { return false }
	var metaFactory metadatainformer.SharedInformerFactory
	if _, err := client.Discovery().ServerResourcesForGroupVersion(msGVR.GroupVersion().String()); apierrors.IsNotFound(err) {
		klog.InfoS("ModelService CRD not installed; ModelServices are not listed by selector", "groupVersion", msGVR.GroupVersion())
	} else {
		if err != nil {
			// Not a missing CRD: start the informer anyway; it retries.
			klog.ErrorS(err, "Discovering the ModelService API", "groupVersion", msGVR.GroupVersion())
		}
		meta, err := metadata.NewForConfig(cfg)
		if err != nil {
			return fmt.Errorf("creating metadata client: %w", err)
		}
		metaFactory = metadatainformer.NewFilteredSharedInformerFactory(meta, 0, cmd.namespace, nil)
		informer := metaFactory.ForResource(msGVR).Informer()
		services = metadatalister.New(informer.GetIndexer(), msGVR)
		servicesSynced = informer.HasSynced
	}

	var (
		src     adapter.Source
		scraper *scrape.Scraper
	)
	switch cmd.backend {
	case backendScrape:
		if scraper, err = scrape.New(cmd.scrape, scrape.PodTargetLister(pods.Lister())); err != nil {
			return err
		}
		src = scraper
	case backendPrometheus:
		if src, err = prometheus.New(cmd.prom); err != nil {
			return err
		}
	}
	prov := provider.New(src, pods.Lister(), deployments.Lister())
	if services != nil {
		prov.WithModelServices(services, servicesSynced)
	}
	cmd.WithCustomMetrics(prov)

	adapter.RegisterMetrics()
	if err := cmmetrics.RegisterMetrics(legacyregistry.Register); err != nil {
		return fmt.Errorf("registering API server metrics: %w", err)
	}

	ctx := genericapiserver.SetupSignalContext()
	factory.Start(ctx.Done())
	if metaFactory != nil {
		metaFactory.Start(ctx.Done())
	}
	go func() {
		start := time.Now()
		if !cache.WaitForCacheSync(ctx.Done(), podsSynced, deploymentsSynced) {
			return
		}
		klog.InfoS("Informer caches synced", "namespace", cmd.namespace, "after", time.Since(start))
		if scraper != nil {
			scraper.Run(ctx)
		}
	}()
	klog.InfoS("Starting hetsev-metrics-adapter", "namespace", cmd.namespace, "backend", cmd.backend, "prometheus", cmd.prom.URL)
	return cmd.Run(ctx)
}

// stripManagedFields drops managedFields from cached objects; the adapter
// never reads them.
func stripManagedFields(obj interface{}) (interface{}, error) {
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
