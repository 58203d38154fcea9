// Command metrics-adapter is hetsev's custom.metrics.k8s.io server: it reads
// the Istio and dcgm-exporter metrics of model-server pods, by scraping
// annotated pods itself (--backend=scrape, the default) or by querying
// Prometheus (--backend=prometheus), and serves request rate, latency
// percentiles and GPU utilisation per pod, Deployment and ModelService (see
// package github.com/hetsev/hetsev/pkg/adapter).
//
// Flags of its own: --backend, --rate-window, --namespace; for the scrape
// backend --scrape-interval, --scrape-timeout, --scrape-workers; for the
// Prometheus backend --prometheus-url, --prometheus-bearer-token-file,
// --prometheus-ca-file, --prometheus-header, --prometheus-timeout,
// --prometheus-cache-ttl, the label flags and the query templates
// (--prometheus-*-query); for its serving certificate --cert-self-signed
// and --cert-* (a self-signed certificate for its Service, its CA kept in
// its APIServices' caBundle). The API-server flags (--secure-port,
// --bind-address, --cert-dir, --tls-cert-file, --lister-kubeconfig,
// --authentication-kubeconfig, --authorization-kubeconfig, ...) come from
// sigs.k8s.io/custom-metrics-apiserver's AdapterBase; with neither
// --cert-self-signed nor --tls-cert-file it writes a self-signed
// certificate for localhost and 127.0.0.1 to --cert-dir, which no
// caBundle can verify. Options, wiring and serving are in
// github.com/hetsev/hetsev/pkg/adapter/server.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/logs"
	"k8s.io/klog/v2"

	"github.com/hetsev/hetsev/pkg/adapter/server"
	"github.com/hetsev/hetsev/pkg/version"
)

func main() {
	logs.InitLogs()
	defer logs.FlushLogs()

	opts := server.NewOptions()
	opts.AddFlags(pflag.CommandLine)
	logs.AddFlags(pflag.CommandLine)
	printVersion := pflag.Bool("version", false, "Print hetsev's version and exit.")
	pflag.Parse()
	if *printVersion {
		fmt.Println("hetsev-metrics-adapter", version.Version)
		return
	}
	klog.InfoS("Starting hetsev-metrics-adapter", "version", version.Version)
	opts.Complete()

	err := opts.Validate()
	if err == nil {
		err = opts.Run(genericapiserver.SetupSignalContext())
	}
	if err != nil {
		klog.ErrorS(err, "hetsev-metrics-adapter failed")
		logs.FlushLogs()
		os.Exit(1)
	}
}
