// serving-check prints the SLO latency model's p98 (pkg/heterogeneity/latency)
// against the measured one for the members of an open-loop serving
// measurement file that ran alone, then runs hetsev's simulated model
// servers on the file as the demo and the evaluator run them
// (internal/sim/replay's Engine driving internal/sim/modelserver Servers):
// for every member not overloaded, the file's batch latency table, the
// member's arrival rate and its co-located members on one GPU through
// pkg/interference's fitted model; prints predicted against measured p50
// and p98 latency, the p98 held out (the co-location model refitted without
// the co-location scenarios of each co-located scenario's models,
// internal/sim/calibration.CrossValidateServing), the MAPE of the
// SharedGPU co-simulation for comparison, the p98 MAPE and signed bias in
// sample and held out, and ends with the engine's held-out figures:
// `RESULT mode=<mode>/<execution> cv_p98_mape=<fraction> bias=<signed
// fraction> members=<n>` (`make serving-check MEASUREMENTS=<file>`).
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
	colocation := flag.String("colocation", "data/measurements/gpu-colocation-h100", "folder of the co-location files the fitted model is refitted to, leaving scenarios out, for the held-out figures (not used with --interference-model)")
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
	dir := *colocation
	if *model != "" {
		dir = ""
	}
	if err := calibration.RunServingCheck(os.Stdout, flag.Arg(0), col, opt, dir); err != nil {
		fmt.Fprintln(os.Stderr, "serving-check:", err)
		os.Exit(1)
	}
}
