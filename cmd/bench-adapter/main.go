// Command bench-adapter measures hetsev-metrics-adapter's Prometheus backend
// (see internal/bench/adapterbench): the latency of listing requests_per_second for
// 1,000 pods through the kube-apiserver's aggregation layer, against the
// kube-apiserver listing the same pods. It prints a table that ends with one
// line:
//
//	RESULT list_1000_p99_ms=<p99 ms, a PromQL query per list>
//
// Usage: bench-adapter [-pods N] [-requests R] [-rounds K] [-workdir DIR]
package main

import (
	"flag"

	"github.com/hetsev/hetsev/internal/bench/adapterbench"
	"github.com/hetsev/hetsev/internal/cluster"
)

func main() {
	cfg := adapterbench.DefaultConfig()
	flag.IntVar(&cfg.Pods, "pods", cfg.Pods, "pods with a request-rate series")
	flag.IntVar(&cfg.Requests, "requests", cfg.Requests, "timed requests per kind and round")
	flag.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "rounds")
	workdir := flag.String("workdir", "", "directory for the control plane, Prometheus and logs (default: a temporary one, kept)")
	flag.Parse()
	cluster.RunBench("hetsev-bench-adapter", *workdir, func(p *cluster.Program, say func(string, ...any)) (cluster.BenchReport, error) {
		return adapterbench.Run(p.Ctx, p.TB, p.Dir, cfg, say)
	})
}
