// Command hetsev-scaler reconciles ModelService objects: it keeps one
// Deployment per GPU type and scales them by HetSev's decision (paper 4.1).
// Its flags, manager and controller are in pkg/scaler; the pod admission
// webhook it serves is pkg/webhook.
package main

import (
	"flag"
	"fmt"
	"os"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager/signals"

	"github.com/hetsev/hetsev/pkg/scaler"
	"github.com/hetsev/hetsev/pkg/version"
	"github.com/hetsev/hetsev/pkg/webhook"
)

func main() {
	klog.InitFlags(nil)
	o := scaler.NewOptions()
	o.AddFlags(flag.CommandLine)
	wh := webhook.NewOptions()
	wh.AddFlags(flag.CommandLine)
	printVersion := flag.Bool("version", false, "Print hetsev's version and exit.")
	flag.Parse()
	if *printVersion {
		fmt.Println("hetsev-scaler", version.Version)
		return
	}
	klog.InfoS("Starting hetsev-scaler", "version", version.Version)
	// One flag each for the webhook and the Deployments.
	wh.RuntimeClassName, wh.GPUMode, wh.DRADriver = o.Defaults.RuntimeClassName, o.Defaults.GPUMode, o.Defaults.DRADriver
	if err := run(o, wh); err != nil {
		klog.ErrorS(err, "hetsev-scaler failed")
		os.Exit(1)
	}
}

func run(o *scaler.Options, wh *webhook.Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	// The webhook keeps the pods it opts in on the GPU pool when the
	// scheduler does (gpuPool in --scheduler-config), as the Deployments do.
	args, err := o.GPUShareArgs()
	if err != nil {
		return err
	}
	wh.GPUPool = args.GPUPool != nil && *args.GPUPool
	if err := wh.Validate(); err != nil {
		return err
	}
	ctrllog.SetLogger(klog.NewKlogr())
	cfg, err := o.RESTConfig()
	if err != nil {
		return err
	}
	mgr, err := o.NewManager(cfg)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	// The webhook serves on every replica, leader or not: the API server
	// calls whichever the Service picks.
	if err := wh.AddToManager(mgr, kube); err != nil {
		return err
	}
	// Until the signal, or with an error when the leader's lease is lost
	// or the webhook server fails.
	return mgr.Start(signals.SetupSignalHandler())
}
