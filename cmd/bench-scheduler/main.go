// Command bench-scheduler measures hetsev-scheduler against the default
// scheduler profile on a local control plane (see test/schedulerbench) and
// prints a table that ends with one line:
//
//	RESULT throughput_ratio=<hetsev/default> p99_ms=<hetsev attempt p99>
//
// Usage: bench-scheduler [-nodes N] [-pods P] [-rounds R]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/hetsev/hetsev/test/harness"
	"github.com/hetsev/hetsev/test/schedulerbench"
)

func main() {
	cfg := schedulerbench.DefaultConfig()
	flag.IntVar(&cfg.Nodes, "nodes", cfg.Nodes, "GPU nodes")
	flag.IntVar(&cfg.GPUsPerNode, "gpus-per-node", cfg.GPUsPerNode, "GPUs per node")
	flag.IntVar(&cfg.Pods, "pods", cfg.Pods, "pods per profile and round")
	flag.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "runs per profile, alternating")
	workdir := flag.String("workdir", "", "directory for the control plane and logs (default: a temporary one, kept)")
	flag.Parse()
	p, err := harness.StartProgram("hetsev-bench-scheduler", *workdir)
	if err != nil {
		fail(err)
	}
	defer p.Close()
	say := func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	rep, err := schedulerbench.Run(p.Ctx, p.TB, p.Dir, cfg, say)
	if err != nil {
		p.Close()
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
