// Command hetsev-demo is `make demo`: a local control plane with HetSev's GPU
// testbed simulated by kwok, the three hetsev programs, and a replay of the
// Twitter trace against simulated model servers, ending with a summary.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/internal/sim/demo"
	"github.com/hetsev/hetsev/internal/sim/trace"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/interference"
)

func main() {
	cfg := demo.DefaultDemo()
	summary := flag.String("summary", "demo-summary.json", "where to write the summary JSON")
	workdir := flag.String("workdir", "", "directory for logs and state (default: a new temp dir, kept)")
	flag.IntVar(&cfg.TraceStart, "trace-start", cfg.TraceStart, "first second of the Twitter trace to replay")
	flag.IntVar(&cfg.TraceSeconds, "trace-seconds", cfg.TraceSeconds, "trace seconds to replay")
	flag.Float64Var(&cfg.PeakRPS, "peak", cfg.PeakRPS, "peak arrival rate after scaling, requests/s")
	flag.DurationVar(&cfg.Duration, "duration", cfg.Duration, "wall time of the replay; sets the time compression")
	flag.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed of the arrivals")
	solver := flag.String("solver", "", "hetsev-scaler's --solver (exact or heuristic; default the scaler's)")
	sharing := flag.String("gpu-sharing", "time-slicing", "how simulated model servers on one GPU share it: time-slicing or mps (the fitted co-location model)")
	flag.StringVar(&cfg.GPUMode, "gpu-mode", v1alpha1.GPUModeAnnotations, "how pods get their GPU: annotations (hetsev.io/gpu-index) or dra (ResourceClaims on published ResourceSlices, allocated by hetsev-scheduler; the summary adds an audit of the claims)")
	flag.Parse()
	mode, err := interference.ParseSharingMode(*sharing)
	if err != nil {
		fail(err)
	}
	cfg.GPUSharing = mode
	if *solver != "" {
		cfg.ScalerArgs = append(cfg.ScalerArgs, "--solver="+*solver)
	}
	// Component logs go to a file in the work dir; stdout is the report.
	p, err := cluster.StartProgram("hetsev-demo", *workdir)
	if err != nil {
		fail(err)
	}
	defer p.Close()
	cfg.Dir = p.Dir
	rates, err := trace.Twitter()
	if err != nil {
		p.Close()
		fail(err)
	}
	cfg.Rates = rates
	start := time.Now()
	s, err := demo.RunDemo(p.Ctx, p.TB, cfg)
	if err != nil {
		p.Close()
		fail(err)
	}
	demo.PrintSummary(os.Stdout, s)
	if err := demo.WriteSummary(*summary, s); err != nil {
		fail(err)
	}
	fmt.Printf("summary written to %s (run took %s)\n", *summary, time.Since(start).Round(time.Second))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "hetsev-demo:", err)
	os.Exit(1)
}
