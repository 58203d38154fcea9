// Command bench-adapter measures hetsev-metrics-adapter's Prometheus backend
// (see test/adapterbench): the latency of listing requests_per_second for
// 1,000 pods through the kube-apiserver's aggregation layer, against the
// kube-apiserver listing the same pods. It prints a table that ends with one
// line:
//
//	RESULT list_1000_p99_ms=<p99 ms, a PromQL query per list>
//
// Usage: bench-adapter [-pods N] [-requests R] [-rounds K]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/hetsev/hetsev/test/adapterbench"
	"github.com/hetsev/hetsev/test/harness"
)

func main() {
	cfg := adapterbench.DefaultConfig()
	flag.IntVar(&cfg.Pods, "pods", cfg.Pods, "pods with a request-rate series")
	flag.IntVar(&cfg.Requests, "requests", cfg.Requests, "timed requests per kind and round")
	flag.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "rounds")
	workdir := flag.String("workdir", "", "directory for the control plane, Prometheus and logs (default: a temporary one)")
	flag.Parse()
	dir := *workdir
	if dir == "" {
		d, err := os.MkdirTemp("", "hetsev-bench-adapter-")
		if err != nil {
			fail(err)
		}
		dir = d
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fail(err)
	}
	logf, err := os.Create(dir + "/bench-adapter.log")
	if err != nil {
		fail(err)
	}
	klog.SetOutput(logf)
	klog.LogToStderr(false)
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	tb := harness.NewProgramTB("bench-adapter")
	defer tb.Close()
	say := func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	rep, err := adapterbench.Run(ctx, tb, dir, cfg, say)
	if err != nil {
		fail(err)
	}
	if err := rep.WriteTable(os.Stdout); err != nil {
		fail(err)
	}
	fmt.Println(rep.ResultLine())
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench-adapter:", err)
	os.Exit(1)
}
