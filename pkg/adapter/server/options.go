// Package server is hetsev-metrics-adapter's command: Options holds its
// command-line options, its own (backend, GPU mode, namespace, rate
// window, the scrape and Prometheus backends' settings) and, through
// sigs.k8s.io/custom-metrics-apiserver's basecmd.AdapterBase, the API
// server's (--secure-port, --cert-dir, --lister-kubeconfig, the
// authentication and authorization flags, ...). Run wires informers, the
// chosen backend and the provider into the aggregated API server, which
// also serves /healthz and the adapter's own metrics on /metrics.
//
// Use: NewOptions, AddFlags, parse, Complete, Validate, Run.
package server

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	basecmd "sigs.k8s.io/custom-metrics-apiserver/pkg/cmd"

	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/adapter/prometheus"
	"github.com/hetsev/hetsev/pkg/adapter/scrape"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/dra"
)

// Name is the API server's name (basecmd.AdapterBase.Name).
const Name = "hetsev-metrics-adapter"

// Values of --backend.
const (
	BackendScrape     = "scrape"
	BackendPrometheus = "prometheus"
)

// Options are hetsev-metrics-adapter's options. The embedded AdapterBase
// holds the API server's options and builds its clients and server.
type Options struct {
	basecmd.AdapterBase

	// Backend is where metrics come from: BackendScrape or
	// BackendPrometheus (--backend).
	Backend string
	// GPUMode is how pods reach their GPU, which says how a pod is joined
	// to its GPU's DCGM series: v1alpha1.GPUModeAnnotations (the pod's
	// hetsev.io/gpu-index) or v1alpha1.GPUModeDRA (that annotation, else
	// the device its ResourceClaims are allocated) (--gpu-mode).
	GPUMode string
	// DRADriver is the --dra-driver flags' configuration: the DRA driver
	// whose devices GPU mode dra joins pods to.
	DRADriver dra.DriverConfig
	// Namespace limits the pods watched and the objects served to one
	// namespace; empty means all (--namespace).
	Namespace string
	// RateWindow is the window of rates and latency percentiles of both
	// backends (--rate-window); Complete copies it into Scrape and
	// Prometheus.
	RateWindow time.Duration
	// Scrape configures the scrape backend (--scrape-*).
	Scrape scrape.Options
	// Prometheus configures the Prometheus backend (--prometheus-*).
	Prometheus prometheus.Options
	// Cert configures the built-in self-signed serving certificate and
	// the APIServices' caBundle (--cert-*).
	Cert CertOptions
}

// NewOptions returns the defaults: the scrape backend, all namespaces, a
// one-minute rate window, and each backend's own defaults.
func NewOptions() *Options {
	o := &Options{
		Backend:    BackendScrape,
		GPUMode:    v1alpha1.GPUModeAnnotations,
		RateWindow: adapter.DefaultRateWindow,
		Scrape:     scrape.DefaultOptions(),
		Prometheus: prometheus.DefaultOptions(),
		Cert:       defaultCertOptions(),
	}
	o.Name = Name
	return o
}

// AddFlags makes fs the AdapterBase's flag set, installs the API server's
// flags in it, and adds the adapter's own. Call it once, before parsing.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.FlagSet = fs
	o.InstallFlags()

	fs.StringVar(&o.Backend, "backend", o.Backend,
		"Where metrics come from: scrape (the adapter scrapes annotated pods itself) or prometheus (PromQL against --prometheus-url).")
	fs.StringVar(&o.GPUMode, "gpu-mode", o.GPUMode,
		"How pods reach their GPU, as hetsev-scheduler's gpuMode and hetsev-scaler's --gpu-mode; it says how a pod is joined to its GPU's DCGM series. "+
			v1alpha1.GPUModeAnnotations+": the pod's "+v1alpha1.AnnotationGPUIndex+" on its node. "+
			v1alpha1.GPUModeDRA+": that annotation when present (hetsev-scheduler writes it), else the uuid (or index) attribute of the --dra-driver"+
			" device the pod's ResourceClaims are allocated (pods whose claims another scheduler allocated; the lowest index when they hold several GPUs); the adapter then also watches resource.k8s.io/v1 ResourceClaims and ResourceSlices.")
	draFlags := flag.NewFlagSet("dra", flag.ContinueOnError)
	o.DRADriver.AddGoFlags(draFlags)
	fs.AddGoFlagSet(draFlags)
	fs.DurationVar(&o.Scrape.Interval, "scrape-interval", o.Scrape.Interval,
		"Wall-clock interval between scrapes of each annotated pod.")
	fs.DurationVar(&o.Scrape.Timeout, "scrape-timeout", o.Scrape.Timeout,
		"Timeout of one scrape.")
	fs.DurationVar(&o.RateWindow, "rate-window", o.RateWindow,
		"Window over which request rates and latency percentiles are computed: in the samples' own clock (exposition timestamps when present) for the scrape backend, the PromQL range (whole seconds) for the Prometheus backend.")
	fs.IntVar(&o.Scrape.Workers, "scrape-workers", o.Scrape.Workers,
		"Maximum number of concurrent scrapes.")
	fs.StringVar(&o.Scrape.DCGMExporterNamespace, "dcgm-exporter-namespace", o.Scrape.DCGMExporterNamespace,
		"With --backend=scrape: the namespace of the dcgm-exporter pods whose DCGM series are read (\"\": any namespace, which trusts every tenant who can label a pod); any other pod's DCGM series are ignored.")
	fs.StringVar(&o.Scrape.DCGMExporterSelector, "dcgm-exporter-selector", o.Scrape.DCGMExporterSelector,
		"With --backend=scrape: the label selector of those dcgm-exporter pods (the GPU Operator's app=nvidia-dcgm-exporter; dcgm-exporter's own chart: app.kubernetes.io/name=dcgm-exporter). An exporter's series count for the GPUs of its own node only.")
	p := &o.Prometheus
	p.Connection.AddFlags(fs)
	fs.DurationVar(&p.Timeout, "prometheus-timeout", p.Timeout,
		"Bound on one PromQL query; past it the API answers 503 ServiceUnavailable, never a zero.")
	fs.DurationVar(&p.CacheTTL, "prometheus-cache-ttl", p.CacheTTL,
		"How long one query's answer (a whole namespace, or all GPUs) is reused; 0 or negative disables the cache (one API request still runs each query at most once).")
	fs.StringVar(&p.NamespaceLabel, "prometheus-namespace-label", p.NamespaceLabel, "Label of Istio series holding the pod's namespace.")
	fs.StringVar(&p.PodLabel, "prometheus-pod-label", p.PodLabel, "Label of Istio series holding the pod's name.")
	fs.StringVar(&p.NodeLabel, "prometheus-node-label", p.NodeLabel, "Label of DCGM series holding the node name (dcgm-exporter's Hostname, or node when relabelled).")
	fs.StringVar(&p.GPULabel, "prometheus-gpu-label", p.GPULabel, "Label of DCGM series holding the GPU index.")
	fs.StringVar(&p.DCGMMatcher, "prometheus-dcgm-matcher", p.DCGMMatcher,
		"PromQL label matcher of the dcgm-exporter series the GPU queries read (.DCGMMatcher), so that no other scrape target's DCGM_FI_* series count as a GPU's; e.g. job=\"nvidia-dcgm-exporter\" or namespace=\"gpu-operator\".")
	fs.StringVar(&p.RequestRateQuery, "prometheus-request-rate-query", p.RequestRateQuery,
		"PromQL template (Go text/template: .Window, .NamespaceMatcher, .NamespaceLabel, .PodLabel, .NodeLabel, .GPULabel) giving requests/s per namespace and pod.")
	fs.StringVar(&p.DurationQuery, "prometheus-duration-query", p.DurationQuery,
		"PromQL template giving request-duration bucket counts per namespace, pod and le (ms).")
	fs.StringVar(&p.GPUUtilQuery, "prometheus-gpu-util-query", p.GPUUtilQuery, "PromQL template giving GPU utilisation (percent) per node and GPU index.")
	fs.StringVar(&p.GPUMemoryQuery, "prometheus-gpu-memory-query", p.GPUMemoryQuery, "PromQL template giving used GPU memory (MiB) per node and GPU index.")
	o.Cert.addFlags(fs)
	fs.StringVar(&o.Namespace, "namespace", o.Namespace,
		"Only watch pods and serve pods, Deployments and ModelServices in this namespace (default: all namespaces); with --backend=scrape, dcgm-exporter pods must then run in it too, and --dcgm-exporter-namespace name it.")
}

// Complete derives what follows from the parsed flags: both backends'
// rate window, and a --prometheus-cache-ttl of 0, which means no cache,
// as the Prometheus options' -1 (their 0 means the default).
func (o *Options) Complete() {
	o.Scrape.RateWindow = o.RateWindow
	o.Prometheus.RateWindow = o.RateWindow
	if o.Prometheus.CacheTTL == 0 {
		o.Prometheus.CacheTTL = -1
	}
}

// Validate reports completed options that cannot work, naming the flag:
// self-signed certificate settings that conflict or cannot renew, an
// unknown GPU mode or backend, or the chosen backend's invalid
// settings. The API server's own options are validated by AdapterBase when
// Run starts it.
func (o *Options) Validate() error {
	if err := o.Cert.validate(o.SecureServing.ServerCert.CertKey.CertFile); err != nil {
		return err
	}
	if !v1alpha1.IsGPUMode(o.GPUMode) {
		return fmt.Errorf("--gpu-mode %q: want %s or %s", o.GPUMode, v1alpha1.GPUModeAnnotations, v1alpha1.GPUModeDRA)
	}
	if _, err := o.DRADriver.Driver(); err != nil {
		return fmt.Errorf("--dra-driver: %w", err)
	}
	switch o.Backend {
	case BackendScrape:
		if err := o.Scrape.Validate(); err != nil {
			return err
		}
		if o.Scrape.Interval <= 0 || o.Scrape.Timeout <= 0 || o.Scrape.RateWindow <= 0 || o.Scrape.Workers <= 0 {
			return errors.New("--scrape-interval, --scrape-timeout, --rate-window and --scrape-workers must be positive")
		}
		if _, err := o.Scrape.DCGMExporters(); err != nil {
			return err
		}
		if ns := o.Scrape.DCGMExporterNamespace; o.Namespace != "" && ns != o.Namespace {
			return fmt.Errorf("--namespace %q watches no pod of --dcgm-exporter-namespace %q: no GPU would have DCGM series; run the exporters in %q and set --dcgm-exporter-namespace=%s", o.Namespace, ns, o.Namespace, o.Namespace)
		}
		return nil
	case BackendPrometheus:
		return o.Prometheus.Validate()
	}
	return fmt.Errorf("--backend %q: want %s or %s", o.Backend, BackendScrape, BackendPrometheus)
}
