// interference-check predicts, for a co-location measurement file, every
// co-located member's mean latency inflation with pkg/interference's fitted
// model, prints predicted against measured per member, and ends with
// `RESULT interference_mape=<fraction> members=<n>` (`make
// interference-check MEASUREMENTS=<file>`).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/hetsev/hetsev/internal/sim/calibration"
	"github.com/hetsev/hetsev/pkg/interference"
)

func main() {
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: interference-check FILE.json (data/measurements/gpu-colocation-h100/*.json)")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := calibration.RunColocationCheck(os.Stdout, flag.Arg(0), interference.FittedSharing(), interference.H100Occupancy()); err != nil {
		fmt.Fprintln(os.Stderr, "interference-check:", err)
		os.Exit(1)
	}
}
