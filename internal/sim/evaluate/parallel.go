package evaluate

import (
	"runtime"

	"golang.org/x/sync/errgroup"
)

// eachReplay runs f(0) ... f(n-1) on at most GOMAXPROCS goroutines at once
// and returns the error of the lowest i that failed, nil if none did (so
// that a run's error does not depend on which replay finished first). The
// Pareto sweep's and the ablation's replays are independent (each holds
// its own Config; the slices they share are only read, as the policies of
// one Evaluate share them) and a replay of one policy keeps one core
// busy, so a run of many finishes in about 1/GOMAXPROCS of the time it
// takes one after another, and at most GOMAXPROCS replays hold memory.
func eachReplay(n int, f func(i int) error) error {
	errs := make([]error, n)
	var g errgroup.Group
	g.SetLimit(max(1, runtime.GOMAXPROCS(0)))
	for i := range n {
		g.Go(func() error { errs[i] = f(i); return nil })
	}
	_ = g.Wait() // every f's error is in errs
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
