// Command hetsev-scheduler is the upstream kube-scheduler with hetsev's
// plugins registered; run it as a secondary scheduler and select it per pod
// with schedulerName: hetsev-scheduler.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics on /metrics
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	// HetsevFairQueueArgs and HetsevGPUShareArgs in the scheduler's scheme:
	// decoded, defaulted and shown on /configz like upstream plugins' args.
	_ "github.com/hetsev/hetsev/pkg/apis/config/scheme"
	"github.com/hetsev/hetsev/pkg/plugins/fairqueue"
	"github.com/hetsev/hetsev/pkg/plugins/gpushare"
)

func main() {
	cmd := app.NewSchedulerCommand(
		app.WithPlugin(fairqueue.Name, fairqueue.New),
		app.WithPlugin(gpushare.Name, gpushare.New),
	)
	os.Exit(cli.Run(cmd))
}
