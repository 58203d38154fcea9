// serving-check runs hetsev's simulated model server (internal/sim/
// modelserver) on an open-loop serving measurement file: for every member
// not overloaded, the file's batch latency table, the member's arrival rate
// and its co-located members through pkg/interference's fitted model;
// prints predicted against measured p50 and p98 latency and ends with
// `RESULT serving_p98_mape=<fraction> members=<n>` (`make serving-check
// MEASUREMENTS=<file>`). It runs in virtual time.
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
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: serving-check [flags] FILE.json (data/measurements/gpu-serving-h100/*.json)")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := calibration.RunServingCheck(os.Stdout, flag.Arg(0), interference.FittedSharing(), interference.H100Occupancy(), opt); err != nil {
		fmt.Fprintln(os.Stderr, "serving-check:", err)
		os.Exit(1)
	}
}
