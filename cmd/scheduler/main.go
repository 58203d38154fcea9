// Command hetsev-scheduler is the upstream kube-scheduler with hetsev's
// plugins registered; run it as a secondary scheduler and select it per pod
// with schedulerName: hetsev-scheduler. Its plugins refuse to start against
// a kube-apiserver older than hetsev supports (pkg/kubeversion).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics on /metrics
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	// HetsevFairQueueArgs and HetsevGPUShareArgs in the scheduler's scheme:
	// decoded, defaulted and shown on /configz like upstream plugins' args.
	_ "github.com/hetsev/hetsev/pkg/apis/config/scheme"
	"github.com/hetsev/hetsev/pkg/kubeversion"
	"github.com/hetsev/hetsev/pkg/plugins/fairqueue"
	"github.com/hetsev/hetsev/pkg/plugins/gpushare"
	"github.com/hetsev/hetsev/pkg/version"
)

func main() {
	cmd := app.NewSchedulerCommand(
		app.WithPlugin(fairqueue.Name, versionChecked(fairqueue.New)),
		app.WithPlugin(gpushare.Name, versionChecked(gpushare.New)),
	)
	withVersion(cmd)
	os.Exit(cli.Run(cmd))
}

// withVersion prints hetsev's version before the upstream command runs:
// on stdout for --version (the upstream command then prints the
// Kubernetes version the scheduler is built from, and exits), else in the
// start-up log.
func withVersion(cmd *cobra.Command) {
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if f := c.Flags().Lookup("version"); f != nil && f.Value.String() != "false" {
			fmt.Println("hetsev-scheduler", version.Version)
		} else {
			klog.InfoS("Starting hetsev-scheduler", "version", version.Version)
		}
		return run(c, args)
	}
}

// versionChecked checks the API server's version with the scheduler's own
// client before building the plugin: the upstream command builds that
// client (from --kubeconfig, the configuration file or in-cluster), and
// a plugin's error stops the scheduler before its informers start.
func versionChecked(f frameworkruntime.PluginFactory) frameworkruntime.PluginFactory {
	return func(ctx context.Context, args runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		if err := kubeversion.Check(h.ClientSet().Discovery()); err != nil {
			return nil, err
		}
		return f(ctx, args, h)
	}
}
