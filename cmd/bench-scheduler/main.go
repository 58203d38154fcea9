// Command bench-scheduler measures hetsev-scheduler against the default
// scheduler profile on a local control plane (see internal/bench/schedulerbench) and
// prints a table that ends with one line:
//
//	RESULT throughput_ratio=<hetsev/default> p99_ms=<hetsev attempt p99>
//
// Usage: bench-scheduler [-nodes N] [-pods P] [-rounds R]
package main

import (
	"flag"

	"github.com/hetsev/hetsev/internal/bench/schedulerbench"
	"github.com/hetsev/hetsev/internal/cluster"
)

func main() {
	cfg := schedulerbench.DefaultConfig()
	flag.IntVar(&cfg.Nodes, "nodes", cfg.Nodes, "GPU nodes")
	flag.IntVar(&cfg.GPUsPerNode, "gpus-per-node", cfg.GPUsPerNode, "GPUs per node")
	flag.IntVar(&cfg.Pods, "pods", cfg.Pods, "pods per profile and round")
	flag.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "runs per profile, alternating")
	workdir := flag.String("workdir", "", "directory for the control plane and logs (default: a temporary one, kept)")
	flag.Parse()
	cluster.RunBench("hetsev-bench-scheduler", *workdir, func(p *cluster.Program, say func(string, ...any)) (cluster.BenchReport, error) {
		return schedulerbench.Run(p.Ctx, p.TB, p.Dir, cfg, say)
	})
}
