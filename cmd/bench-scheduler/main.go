// Command bench-scheduler measures hetsev-scheduler against the default
// scheduler profile on a local control plane (see test/schedulerbench) and
// prints a table that ends with one line:
//
//	RESULT throughput_ratio=<hetsev/default> p99_ms=<hetsev attempt p99>
//
// Usage: bench-scheduler [-nodes N] [-pods P] [-rounds R]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/hetsev/hetsev/test/harness"
	"github.com/hetsev/hetsev/test/schedulerbench"
)

func main() {
	cfg := schedulerbench.DefaultConfig()
	flag.IntVar(&cfg.Nodes, "nodes", cfg.Nodes, "GPU nodes")
	flag.IntVar(&cfg.GPUsPerNode, "gpus-per-node", cfg.GPUsPerNode, "GPUs per node")
	flag.IntVar(&cfg.Pods, "pods", cfg.Pods, "pods per profile and round")
	flag.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "runs per profile, alternating")
	workdir := flag.String("workdir", "", "directory for the control plane and logs (default: a temporary one)")
	flag.Parse()
	dir := *workdir
	if dir == "" {
		d, err := os.MkdirTemp("", "hetsev-bench-scheduler-")
		if err != nil {
			fail(err)
		}
		dir = d
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fail(err)
	}
	logf, err := os.Create(dir + "/bench-scheduler.log")
	if err != nil {
		fail(err)
	}
	klog.SetOutput(logf)
	klog.LogToStderr(false)
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	tb := harness.NewProgramTB("bench-scheduler")
	defer tb.Close()
	say := func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	rep, err := schedulerbench.Run(ctx, tb, dir, cfg, say)
	if err != nil {
		fail(err)
	}
	if err := rep.WriteTable(os.Stdout); err != nil {
		fail(err)
	}
	fmt.Println(rep.ResultLine())
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench-scheduler:", err)
	os.Exit(1)
}
