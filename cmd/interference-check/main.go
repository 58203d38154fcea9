// interference-check predicts, for a co-location measurement file, every
// co-located member's mean latency inflation with pkg/interference's fitted
// model (in sample) and, leaving one scenario out at a time, with the model
// refitted without it (internal/sim/calibration.CrossValidate); prints
// both against measured per member, the MAPE and signed bias (mean
// predicted/measured − 1) of each, and ends with the cross-validated
// figures: `RESULT mode=<mode>/<execution> cv_mape=<fraction>
// bias=<signed fraction> members=<n> scenarios=<n>` (`make
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
