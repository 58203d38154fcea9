// Command bench-scaler compares the heuristic and the exact solver of
// hetsev's scaler on a fixed, seeded set of decision instances (see package
// solverbench) and prints a table that ends with one line:
//
//	RESULT optimal_fraction=<heuristic> max_gap=<fraction> exact_p99_us=<microseconds>
//
// Usage: bench-scaler [-instances N] [-seed S] [-reps R]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/hetsev/hetsev/internal/bench/solverbench"
)

func main() {
	cfg := solverbench.DefaultConfig()
	flag.IntVar(&cfg.Instances, "instances", cfg.Instances, "number of decision instances")
	flag.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "generator seed")
	flag.IntVar(&cfg.Repetitions, "reps", cfg.Repetitions, "timed repetitions per instance and solver")
	flag.Parse()
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench-scaler:", err)
		os.Exit(1)
	}
}

func run(cfg solverbench.Config) error {
	instances, err := solverbench.Generate(cfg)
	if err != nil {
		return err
	}
	rep := solverbench.Run(instances, cfg)
	if err := rep.WriteTable(os.Stdout); err != nil {
		return err
	}
	_, err = fmt.Println(rep.ResultLine())
	return err
}
