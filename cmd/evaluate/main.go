// Command hetsev-evaluate is `make evaluate`: it replays days of a real
// trace in simulated time under default Kubernetes, hetsev (heuristic and
// exact) and a lower bound, and reports cost, SLO attainment, GPU
// utilisation and scaling per policy and service (internal/sim/evaluate). With
// --trace it is the what-if mode for a user's own trace, profiles and
// prices.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hetsev/hetsev/internal/sim/evaluate"
)

type serviceFlags []evaluate.Service

func (s *serviceFlags) String() string { return fmt.Sprint(*s) }
func (s *serviceFlags) Set(v string) error {
	svc, err := evaluate.ParseService(v)
	if err == nil {
		*s = append(*s, svc)
	}
	return err
}

func main() {
	out := flag.String("out", "evaluation", "directory for evaluation.json and the plots")
	nodes := flag.Int("nodes-per-type", 16, "servers per GPU type, each with 2 GPUs, 40 CPUs and 62 GiB (the demo's testbed has 4)")
	policies := flag.String("policies", strings.Join(evaluate.PolicyNames, ","), "policies to compare")
	seed := flag.Uint64("seed", 1, "seed of arrivals, routing and default Kubernetes' GPU types")
	twitterPeak := flag.Float64("twitter-peak", 1000, "peak arrival rate the Twitter trace is scaled to, requests/s (the demo's)")
	azurePeak := flag.Float64("azure-peak", 300, "peak arrival rate the Azure code trace is scaled to, requests/s")
	traceFile := flag.String("trace", "", "what-if mode: a trace file, per-second counts or one timestamp per request (RFC 3339 or the Azure traces' format)")
	var services serviceFlags
	flag.Var(&services, "service", "what-if mode: NAME=MODEL,SHARE,RT_MAX_MS[,SATURATION_THRESHOLD], repeatable (default: the demo's resnet50 and ssd)")
	peak := flag.Float64("peak", 0, "what-if mode: scale the trace to this peak, requests/s (0: as recorded)")
	fillGaps := flag.Bool("fill-gaps", false, "what-if mode: treat runs of zero seconds as data gaps and hold the last rate")
	smoothWindow := flag.Int("smooth-window", 120, "what-if mode: average the rate over this many seconds (HetSev 6; 0: raw)")
	smoothStep := flag.Int("smooth-step", 15, "what-if mode: recompute the average every this many seconds")
	catalog := flag.String("gpu-catalog", "", "what-if mode: GPU catalog CSV (default: data/profiles/gpu_catalog.csv)")
	profiles := flag.String("profiles", "", "what-if mode: model profiles CSV (with --estimates; default: data/profiles)")
	estimates := flag.String("estimates", "", "what-if mode: instance estimates CSV (with --profiles)")
	flag.Parse()

	var cfgs []evaluate.Config
	if *traceFile != "" {
		if len(services) == 0 {
			services = evaluate.DemoServices()
		}
		prep := evaluate.Preparation{FillGaps: *fillGaps, SmoothWindow: *smoothWindow, SmoothStep: *smoothStep, PeakRPS: *peak}
		c, err := evaluate.WhatIf(*traceFile, prep, evaluate.HetSevNodes(*nodes), services, *catalog, *profiles, *estimates)
		if err != nil {
			fail(err)
		}
		cfgs = append(cfgs, c)
	} else {
		tw, err := evaluate.Twitter(*twitterPeak, *nodes)
		if err != nil {
			fail(err)
		}
		az, err := evaluate.AzureCode(*azurePeak, *nodes)
		if err != nil {
			fail(err)
		}
		cfgs = append(cfgs, tw, az)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fail(err)
	}
	start := time.Now()
	rep := evaluate.Report{}
	for _, c := range cfgs {
		c.Policies = strings.Split(*policies, ",")
		c.Seed = *seed
		r, err := evaluate.Evaluate(c)
		if err != nil {
			fail(err)
		}
		evaluate.PrintTable(os.Stdout, r)
		plot := filepath.Join(*out, "evaluation-"+r.Name+".png")
		if err := evaluate.WritePlot(plot, r); err != nil {
			fail(err)
		}
		fmt.Printf("plot: %s\n", plot)
		rep.Runs = append(rep.Runs, r)
	}
	rep.Result = evaluate.Summarize(rep.Runs)
	path := filepath.Join(*out, "evaluation.json")
	if err := rep.WriteJSON(path); err != nil {
		fail(err)
	}
	fmt.Printf("\nwrote %s; %d replays in %.1f s\n", path, len(rep.Runs), time.Since(start).Seconds())
	fmt.Println(rep.Result.ResultLine())
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "hetsev-evaluate:", err)
	os.Exit(1)
}
