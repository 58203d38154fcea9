// Command hetsev-evaluate is `make evaluate`: it replays real traces (the
// Twitter trace, the Azure LLM code trace and 64 Azure Functions as 64
// services) in simulated time under default Kubernetes, hetsev (heuristic
// and exact) and a lower bound, and reports cost, SLO attainment, GPU
// utilisation and scaling per policy and service (internal/sim/evaluate).
// With --trace (one series shared by services) or --functions (a
// per-function, per-minute trace, one service per function) it is the
// what-if mode for a user's own workload, profiles and prices.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/hetsev/hetsev/internal/sim/evaluate"
)

func main() {
	o := evaluate.DefaultOptions()
	o.AddFlags(flag.CommandLine)
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof reads it)")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "hetsev-evaluate: --cpuprofile:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if err := evaluate.Run(o, os.Stdout); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "hetsev-evaluate:", err)
		os.Exit(1)
	}
}
