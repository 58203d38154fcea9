// interference-fit refits pkg/interference's co-location coefficients to
// the co-location measurement files and prints them with the MAPE per file;
// the Fitted* constants in pkg/interference/sharing.go are its output.
//
//	go run ./hack/interference-fit data/measurements/gpu-colocation-h100/*.json
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"

	"github.com/hetsev/hetsev/internal/sim/calibration"
	"github.com/hetsev/hetsev/pkg/interference"
)

func main() {
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: interference-fit FILE.json...")
		os.Exit(2)
	}
	occ := interference.H100Occupancy()
	var files []*calibration.ColocationFile
	for _, p := range flag.Args() {
		f, err := calibration.ReadColocation(p, occ)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		files = append(files, f)
	}
	start := calibration.FitParams{Sharing: interference.FittedSharing(), MPSOccupancy: map[string]float64{}, EagerOccupancy: map[string]float64{}}
	for _, m := range []string{"resnet50", "resnet50-b32", "ssd300-vgg16", "bert-large-seq384"} {
		start.EagerOccupancy[m], _ = occ.Lookup(interference.SharingTimeSlicing, interference.ExecutionEager, m)
	}
	for _, m := range []string{"resnet50", "resnet50-b32", "ssd300-vgg16"} {
		start.MPSOccupancy[m], _ = occ.Lookup(interference.SharingMPS, interference.ExecutionCUDAGraph, m)
	}
	before, err := start.Evaluate(files)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	res, err := calibration.Fit(files, start)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s := res.Params.Sharing
	fmt.Printf("time-slicing: Slice %.6f s, Switch %.6f s, BackToBackExponent %g (not fitted)\n", s.TimeSlicing.Slice, s.TimeSlicing.Switch, s.TimeSlicing.BackToBackExponent)
	fmt.Printf("time-slicing, eager: Slice %.6f s, Switch %.6f s\n", s.EagerTimeSlicing.Slice, s.EagerTimeSlicing.Switch)
	fmt.Printf("MPS: Contention %.4f, OccupancyExponent %.4f\n", s.MPS.Contention, s.MPS.OccupancyExponent)
	var ms []string
	for m := range res.Params.MPSOccupancy {
		ms = append(ms, m)
	}
	sort.Strings(ms)
	for _, m := range ms {
		fmt.Printf("MPS occupancy %s %.4f (bert-large-seq384 fixed at 1)\n", m, res.Params.MPSOccupancy[m])
	}
	ms = ms[:0]
	for m := range res.Params.EagerOccupancy {
		ms = append(ms, m)
	}
	sort.Strings(ms)
	for _, m := range ms {
		fmt.Printf("eager occupancy %s %.4f\n", m, res.Params.EagerOccupancy[m])
	}
	for _, f := range files {
		fmt.Printf("%s: MAPE %.4f (coefficients in the code: %.4f)\n", f.Path, res.MAPE[f.Path], before[f.Path])
	}
}
