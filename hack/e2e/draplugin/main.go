// Command hetsev-e2e-draplugin is the simulated NVIDIA DRA kubelet plugin
// of one real node of `make e2e`: it registers driver gpu.nvidia.com with
// the node's kubelet, publishes the node's GPUs in a ResourceSlice (as
// internal/sim/dradriver.Slice builds it for the demo) and prepares each
// claim by writing a CDI spec that gives its containers
// NVIDIA_VISIBLE_DEVICES. Flags and behaviour: internal/sim/draplugin's
// Config and Run. SIGINT or SIGTERM stops it with exit status 0, its
// sockets removed.
package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/hetsev/hetsev/internal/sim/draplugin"
)

func main() {
	klog.InitFlags(nil)
	cfg := draplugin.DefaultConfig()
	cfg.AddFlags(flag.CommandLine)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := draplugin.Run(ctx, cfg); err != nil {
		klog.ErrorS(err, "hetsev-e2e-draplugin failed")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}
