// serving-check runs hetsev's simulated model servers on an open-loop
// serving measurement file as the demo and the evaluator run them
// (internal/sim/replay's Engine driving internal/sim/modelserver Servers):
// for every member not overloaded, the file's batch latency table, the
// member's arrival rate and its co-located members on one GPU through
// pkg/interference's fitted model; prints predicted against measured p50
// and p98 latency, the MAPE of the SharedGPU co-simulation for
// comparison, and ends with `RESULT serving_p98_mape=<fraction>
// members=<n>` of the engine (`make serving-check MEASUREMENTS=<file>`).
// It runs in simulated time.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/hetsev/hetsev/internal/sim/calibration"
	"github.com/hetsev/hetsev/pkg/interference"
)

func main() {
	opt := calibration.DefaultSimOptions
	flag.IntVar(&opt.Runs, "runs", opt.Runs, "simulate each scenario this many runs of the file's dur_s, each from idle; percentiles are averaged over the runs")
	flag.Uint64Var(&opt.Seed, "seed", opt.Seed, "seed of the simulated arrivals")
	flag.Float64Var(&opt.StepS, "step", opt.StepS, "seconds of trace time per replay engine step (the evaluator's 1 s; interference is set once per step)")
	model := flag.String("interference-model", "", "co-location model file (YAML/JSON, pkg/interference ColocationFile; default: the model fitted to the H100 measurements)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: serving-check [flags] FILE.json (data/measurements/gpu-serving-h100/*.json)")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	col, err := interference.LoadColocation(*model)
	if err != nil {
		fmt.Fprintln(os.Stderr, "serving-check:", err)
		os.Exit(1)
	}
	if err := calibration.RunServingCheck(os.Stdout, flag.Arg(0), col, opt); err != nil {
		fmt.Fprintln(os.Stderr, "serving-check:", err)
		os.Exit(1)
	}
}
