// Command metrics-adapter is hetsev's custom.metrics.k8s.io server: it
// scrapes the Istio and dcgm-exporter metrics of annotated pods and serves
// request rate, latency percentiles and GPU utilisation per pod and per
// Deployment (see package github.com/hetsev/hetsev/pkg/adapter).
//
// Flags of its own: --scrape-interval, --scrape-timeout, --rate-window,
// --scrape-workers, --namespace. The API-server flags (--secure-port,
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

	"k8s.io/apimachinery/pkg/api/meta"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/logs"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	cmmetrics "sigs.k8s.io/custom-metrics-apiserver/pkg/apiserver/metrics"
	basecmd "sigs.k8s.io/custom-metrics-apiserver/pkg/cmd"

	"github.com/hetsev/hetsev/pkg/adapter"
)

type metricsAdapter struct {
	basecmd.AdapterBase

	scrape    adapter.ScraperOptions
	namespace string
}

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
	cmd := &metricsAdapter{scrape: adapter.DefaultScraperOptions()}
	cmd.Name = "hetsev-metrics-adapter"

	fs := cmd.Flags()
	fs.DurationVar(&cmd.scrape.Interval, "scrape-interval", cmd.scrape.Interval,
		"Wall-clock interval between scrapes of each annotated pod.")
	fs.DurationVar(&cmd.scrape.Timeout, "scrape-timeout", cmd.scrape.Timeout,
		"Timeout of one scrape.")
	fs.DurationVar(&cmd.scrape.RateWindow, "rate-window", cmd.scrape.RateWindow,
		"Window, in the samples' own clock (exposition timestamps when present), over which request rates and latency percentiles are computed.")
	fs.IntVar(&cmd.scrape.Workers, "scrape-workers", cmd.scrape.Workers,
		"Maximum number of concurrent scrapes.")
	fs.StringVar(&cmd.namespace, "namespace", "",
		"Only watch and scrape pods, and serve Deployments, in this namespace (default: all namespaces); dcgm-exporter pods must then run in it too.")
	logs.AddFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		return fmt.Errorf("parsing flags: %w", err)
	}
	if err := cmd.scrape.Validate(); err != nil {
		return err
	}
	if cmd.scrape.Interval <= 0 || cmd.scrape.Timeout <= 0 || cmd.scrape.RateWindow <= 0 || cmd.scrape.Workers <= 0 {
		return errors.New("--scrape-interval, --scrape-timeout, --rate-window and --scrape-workers must be positive")
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

	scraper, err := adapter.NewScraper(cmd.scrape, adapter.PodTargetLister(pods.Lister()))
	if err != nil {
		return err
	}
	cmd.WithCustomMetrics(adapter.NewProvider(scraper, pods.Lister(), deployments.Lister()))

	adapter.RegisterMetrics()
	if err := cmmetrics.RegisterMetrics(legacyregistry.Register); err != nil {
		return fmt.Errorf("registering API server metrics: %w", err)
	}

	ctx := genericapiserver.SetupSignalContext()
	factory.Start(ctx.Done())
	go func() {
		start := time.Now()
		if !cache.WaitForCacheSync(ctx.Done(), podsSynced, deploymentsSynced) {
			return
		}
		klog.InfoS("Informer caches synced", "namespace", cmd.namespace, "after", time.Since(start))
		scraper.Run(ctx)
	}()
	klog.InfoS("Starting hetsev-metrics-adapter", "namespace", cmd.namespace)
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
