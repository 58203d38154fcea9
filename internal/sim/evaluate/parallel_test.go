package evaluate

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
)

// TestEachReplayRunsEveryIndexAndReportsTheFirstFailure: every index runs
// once, and the error returned is the lowest failing index's even when a
// higher index fails first, so a run's error does not depend on which
// replay finished first.
func TestEachReplayRunsEveryIndexAndReportsTheFirstFailure(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	var runs [7]atomic.Int32
	if err := eachReplay(len(runs), func(i int) error { runs[i].Add(1); return nil }); err != nil {
		t.Fatalf("no failure: err %v", err)
	}
	for i := range runs {
		if n := runs[i].Load(); n != 1 {
			t.Errorf("index %d ran %d times, want once", i, n)
		}
	}
	first, later := errors.New("index 0"), errors.New("index 1")
	failed := make(chan struct{})
	err := eachReplay(2, func(i int) error {
		if i == 1 {
			defer close(failed)
			return later
		}
		<-failed // index 0 fails after index 1
		return first
	})
	if err != first {
		t.Errorf("err %v, want index 0's", err)
	}
}
