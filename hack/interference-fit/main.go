// interference-fit refits pkg/interference's co-location coefficients to
// the co-location measurement files (calibration.Fit from
// calibration.FitStart), prints them with the MAPE per file, and writes
// them as pkg/interference/fitted.go, the one place the shipped values
// live (-out "" only prints them). It refuses to write a fit whose signed
// bias is below calibration.MinBias in any mode, in sample or
// leave-one-scenario-out cross-validated (calibration.CrossValidate).
//
//	go run ./hack/interference-fit data/measurements/gpu-colocation-h100/*.json
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"math"
	"os"
	"sort"
	"strconv"
	"text/template"

	"github.com/hetsev/hetsev/internal/sim/calibration"
	"github.com/hetsev/hetsev/pkg/interference"
)

func main() {
	out := flag.String("out", "pkg/interference/fitted.go", "Go file to write the fitted constants to (\"\": print only)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: interference-fit [-out FILE.go] FILE.json...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "interference-fit:", err)
		os.Exit(1)
	}
}

func run(out string, paths []string) error {
	occ := interference.H100Occupancy()
	var files []*calibration.ColocationFile
	for _, p := range paths {
		f, err := calibration.ReadColocation(p, occ)
		if err != nil {
			return err
		}
		files = append(files, f)
	}
	start := calibration.FitStart()
	shipped := calibration.FitParams{Sharing: interference.FittedSharing(), MPSOccupancy: map[string]float64{}, EagerOccupancy: map[string]float64{}}
	for m := range start.EagerOccupancy {
		shipped.EagerOccupancy[m], _ = occ.Lookup(interference.SharingTimeSlicing, interference.ExecutionEager, m)
	}
	for m := range start.MPSOccupancy {
		shipped.MPSOccupancy[m], _ = occ.Lookup(interference.SharingMPS, interference.ExecutionCUDAGraph, m)
	}
	before, err := shipped.Evaluate(files)
	if err != nil {
		return err
	}
	res, err := calibration.Fit(files, start)
	if err != nil {
		return err
	}
	s := res.Params.Sharing
	fmt.Printf("time-slicing: Slice %.6f s, Switch %.6f s, BackToBackExponent %g (not fitted)\n", s.TimeSlicing.Slice, s.TimeSlicing.Switch, s.TimeSlicing.BackToBackExponent)
	fmt.Printf("time-slicing, eager: Slice %.6f s, Switch %.6f s\n", s.EagerTimeSlicing.Slice, s.EagerTimeSlicing.Switch)
	fmt.Printf("MPS: Contention %.4f, OccupancyExponent %.4f\n", s.MPS.Contention, s.MPS.OccupancyExponent)
	for _, m := range sortedKeys(res.Params.MPSOccupancy) {
		fmt.Printf("MPS occupancy %s %.4f (bert-large-seq384 fixed at 1)\n", m, res.Params.MPSOccupancy[m])
	}
	for _, m := range sortedKeys(res.Params.EagerOccupancy) {
		fmt.Printf("eager occupancy %s %.4f\n", m, res.Params.EagerOccupancy[m])
	}
	for _, f := range files {
		fmt.Printf("%s: MAPE %.4f (coefficients in the code: %.4f)\n", f.Path, res.MAPE[f.Path], before[f.Path])
	}
	// The rule of calibration.MinBias: no mode may under-predict on
	// average, in sample or held out.
	for _, f := range files {
		m, err := calibration.CrossValidate(f, res.Params.Sharing, res.Params.OccupancyTable(), start)
		if err != nil {
			return err
		}
		fmt.Printf("%s: %s: in sample MAPE %.4f bias %+.4f; leave-one-scenario-out MAPE %.4f bias %+.4f\n", f.Path, m.Mode, m.MAPE, m.Bias, m.CVMAPE, m.CVBias)
		if err := m.CheckBias(); err != nil {
			return fmt.Errorf("not writing the fit: %w", err)
		}
	}
	if out == "" {
		return nil
	}
	src, err := generate(res.Params)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, src, 0o644); err != nil {
		return err
	}
	fmt.Printf("wrote %s\n", out)
	return nil
}

func sortedKeys(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// generate renders the fitted constants as Go source: seconds to the
// microsecond, the other values to four decimals.
func generate(p calibration.FitParams) ([]byte, error) {
	sec := func(v float64) string { return strconv.FormatFloat(math.Round(v*1e6)/1e6, 'f', -1, 64) }
	num := func(v float64) string { return strconv.FormatFloat(math.Round(v*1e4)/1e4, 'f', -1, 64) }
	s := p.Sharing
	vals := map[string]string{
		"Slice": sec(s.TimeSlicing.Slice), "Switch": sec(s.TimeSlicing.Switch),
		"BackToBack": num(s.TimeSlicing.BackToBackExponent),
		"EagerSlice": sec(s.EagerTimeSlicing.Slice), "EagerSwitch": sec(s.EagerTimeSlicing.Switch),
		"Contention": num(s.MPS.Contention), "OccExp": num(s.MPS.OccupancyExponent),
		"MPSResNet50": num(p.MPSOccupancy["resnet50"]), "MPSResNet50B32": num(p.MPSOccupancy["resnet50-b32"]),
		"MPSSSD300":     num(p.MPSOccupancy["ssd300-vgg16"]),
		"EagerResNet50": num(p.EagerOccupancy["resnet50"]), "EagerResNet50B32": num(p.EagerOccupancy["resnet50-b32"]),
		"EagerSSD300": num(p.EagerOccupancy["ssd300-vgg16"]), "EagerBERTLarge": num(p.EagerOccupancy["bert-large-seq384"]),
	}
	var b bytes.Buffer
	if err := fittedTemplate.Execute(&b, vals); err != nil {
		return nil, err
	}
	return format.Source(b.Bytes())
}

var fittedTemplate = template.Must(template.New("fitted").Parse(`// Code generated by hack/interference-fit (make interference-fit); DO NOT EDIT.

package interference

// Fitted coefficients, from ` + "`make interference-fit`" + ` (hack/interference-fit:
// internal/sim/calibration.Fit from calibration.FitStart) over
// data/measurements/gpu-colocation-h100/{timeslice-cudagraph,
// timeslice-eager,mps-cudagraph}.json: NVIDIA H100 80GB HBM3, measured
// 2026-11-23. hetsev applies them to T4 and V100 as well, which were not
// measured: the mechanisms (a time slice, a switch cost, SM sharing under
// MPS) carry over; the values are the H100's.
const (
	// FittedSlice: τ, seconds (H100; applied to T4/V100 unmeasured).
	FittedSlice = {{.Slice}}
	// FittedSwitch: s, seconds (H100; applied to T4/V100 unmeasured).
	FittedSwitch = {{.Switch}}
	// FittedBackToBackExponent: p (not fitted: the start's value; see
	// calibration.Fit).
	FittedBackToBackExponent = {{.BackToBack}}
	// FittedEagerSlice: the effective τ of eager instances, seconds,
	// fitted to timeslice-eager.json alone (H100; applied to T4/V100
	// unmeasured): an eager context's bursts of queued kernels, not the
	// driver's slice, decide when it yields.
	FittedEagerSlice = {{.EagerSlice}}
	// FittedEagerSwitch: s of eager instances, seconds (H100; applied to
	// T4/V100 unmeasured).
	FittedEagerSwitch = {{.EagerSwitch}}
	// FittedMPSContention: γ (H100; applied to T4/V100 unmeasured).
	FittedMPSContention = {{.Contention}}
	// FittedMPSOccupancyExponent: α (H100; applied to T4/V100 unmeasured).
	FittedMPSOccupancyExponent = {{.OccExp}}
)

// Fitted solo occupancies of the H100 models (see H100Occupancy): under
// MPS with CUDA graphs (BERT-large fixed at 1), and under time-slicing
// with eager execution.
const (
	H100MPSOccupancyResNet50       = {{.MPSResNet50}}
	H100MPSOccupancyResNet50B32    = {{.MPSResNet50B32}}
	H100MPSOccupancySSD300         = {{.MPSSSD300}}
	H100EagerOccupancyResNet50     = {{.EagerResNet50}}
	H100EagerOccupancyResNet50B32  = {{.EagerResNet50B32}}
	H100EagerOccupancySSD300       = {{.EagerSSD300}}
	H100EagerOccupancyBERTLarge    = {{.EagerBERTLarge}}
)
`))
