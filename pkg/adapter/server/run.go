package server

import (
	"context"
	"fmt"
	"time"

	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	cmmetrics "sigs.k8s.io/custom-metrics-apiserver/pkg/apiserver/metrics"

	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/adapter/internal/selfmetrics"
	"github.com/hetsev/hetsev/pkg/adapter/prometheus"
	"github.com/hetsev/hetsev/pkg/adapter/provider"
	"github.com/hetsev/hetsev/pkg/adapter/scrape"
)

// Run serves custom.metrics.k8s.io until ctx is done: it starts informers
// for pods, Deployments and ModelServices (and, with --gpu-mode=dra,
// ResourceClaims and ResourceSlices), the backend (for the scrape
// backend, scraping starts once the pod and Deployment caches have
// synced), registers the adapter's and the API server's metrics, and runs
// the API server. Call it once, after Complete and Validate.
func (o *Options) Run(ctx context.Context) error {
	cfg, err := o.ClientConfig()
	if err != nil {
		return err
	}
	inf, err := newInformers(cfg, o.Namespace, o.GPUMode)
	if err != nil {
		return err
	}
	src, scraper, err := o.newSource(inf.pods.Lister())
	if err != nil {
		return err
	}
	prov := provider.New(src, inf.pods.Lister(), inf.deployments.Lister())
	if inf.services != nil {
		prov.WithModelServices(inf.services, inf.servicesSynced)
	}
	if inf.claims != nil {
		driver, err := o.DRADriver.Driver()
		if err != nil {
			return fmt.Errorf("--dra-driver: %w", err)
		}
		prov.WithDRA(driver.Name, inf.claims.Lister(), inf.slices.Lister(), inf.draSynced)
	}
	o.WithCustomMetrics(prov)

	selfmetrics.Register()
	if err := cmmetrics.RegisterMetrics(legacyregistry.Register); err != nil {
		return fmt.Errorf("registering API server metrics: %w", err)
	}

	inf.start(ctx)
	go func() {
		start := time.Now()
		if !cache.WaitForCacheSync(ctx.Done(), inf.pods.Informer().HasSynced, inf.deployments.Informer().HasSynced) {
			return
		}
		klog.InfoS("Informer caches synced", "namespace", o.Namespace, "after", time.Since(start))
		if scraper != nil {
			scraper.Run(ctx)
		}
	}()
	if inf.claims != nil {
		// Not a condition of scraping: until these sync, only pods
		// without hetsev.io/gpu-index lack GPU metrics.
		go func() {
			start := time.Now()
			if cache.WaitForCacheSync(ctx.Done(), inf.claims.Informer().HasSynced, inf.slices.Informer().HasSynced) {
				klog.InfoS("ResourceClaim and ResourceSlice caches synced", "after", time.Since(start))
			}
		}()
	}
	if o.Cert.SelfSigned {
		if err := o.startCertificate(ctx, cfg); err != nil {
			return err
		}
	}
	klog.InfoS("Starting hetsev-metrics-adapter", "namespace", o.Namespace, "backend", o.Backend, "gpuMode", o.GPUMode, "prometheus", o.Prometheus.URL)
	return o.AdapterBase.Run(ctx)
}

// startCertificate brings the self-signed certificate's Secret, the
// APIServices' caBundle and the files in --cert-dir up to date, makes them
// the serving certificate (the API server reloads the files when they
// change), and keeps them so every --cert-check-interval until ctx ends.
// Errors: the first sync's (API errors on the Secret; a caBundle that
// cannot be written is logged and retried).
func (o *Options) startCertificate(ctx context.Context, cfg *rest.Config) error {
	dir := o.SecureServing.ServerCert.CertDirectory
	if dir == "" {
		return fmt.Errorf("--cert-self-signed needs --cert-dir")
	}
	prov, err := o.Cert.provisioner(cfg, dir)
	if err != nil {
		return err
	}
	if err := prov.Sync(ctx); err != nil {
		return err
	}
	o.SecureServing.ServerCert.CertKey.CertFile, o.SecureServing.ServerCert.CertKey.KeyFile = certFiles(dir)
	go prov.Run(ctx, o.Cert.CheckInterval)
	return nil
}

// newSource returns the backend --backend names; scraper is the Scraper
// to run when that is the scrape backend, else nil.
func (o *Options) newSource(pods corelisters.PodLister) (src adapter.Source, scraper *scrape.Scraper, err error) {
	switch o.Backend {
	case BackendScrape:
		dcgm, err := o.Scrape.DCGMExporters()
		if err != nil {
			return nil, nil, err
		}
		if scraper, err = scrape.New(o.Scrape, scrape.PodTargetLister(pods, dcgm)); err != nil {
			return nil, nil, err
		}
		return scraper, scraper, nil
	case BackendPrometheus:
		if src, err = prometheus.New(o.Prometheus); err != nil {
			return nil, nil, err
		}
		return src, nil, nil
	}
	return nil, nil, fmt.Errorf("--backend %q: want %s or %s", o.Backend, BackendScrape, BackendPrometheus)
}
