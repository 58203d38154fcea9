package evaluate

import (
	"runtime"
	"sync"
)

// eachReplay runs f(0) ... f(n-1) on at most GOMAXPROCS goroutines at once
// and returns the error of the lowest i that failed, nil if none did. The
// Pareto sweep's and the ablation's replays are independent (each holds
// its own Config; the slices they share are only read, as the policies of
// one Evaluate share them) and a replay of one policy keeps one core
// busy, so a run of many finishes in about 1/GOMAXPROCS of the time it
// takes one after another, and at most GOMAXPROCS replays hold memory.
func eachReplay(n int, f func(i int) error) error {
	errs := make([]error, n)
	slots := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	for i := range n {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
