package hpa

import (
	"testing"
	"time"
)

// TestDesiredWorkedByHand: target 10 requests/s per pod, 1..20 replicas.
func TestDesiredWorkedByHand(t *testing.T) {
	a, err := New(1, 20, 10)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(0, 0)
	steps := []struct {
		at      time.Duration
		current int32
		metric  float64
		want    int32
		why     string
	}{
		{0, 2, 10.9, 2, "ratio 1.09 is within the tolerance 0.1"},
		{15 * time.Second, 2, 35, 6, "ceil(2*3.5) = 7, but a 15 s period adds at most max(4, 100 %) = 4 to 2"},
		{20 * time.Second, 6, 35, 6, "same period: the 4 pods are spent"},
		{31 * time.Second, 6, 35, 12, "new period from 2+4: ceil(6*3.5) = 21 > max 20, limited to max(6+4, 12) = 12"},
		{60 * time.Second, 12, 2, 12, "scale-down stabilisation: the highest recommendation in 300 s is 20 (at 20 s and 31 s), so no scale-down"},
		{340 * time.Second, 12, 2, 3, "the window now holds only the recommendations of 60 s and 340 s, both ceil(12*0.2) = 3"},
		{360 * time.Second, 3, -1, 3, "no metric: hold"},
	}
	for _, s := range steps {
		if got := a.Desired(t0.Add(s.at), s.current, s.metric); got != s.want {
			t.Errorf("at %v: desired %d, want %d (%s)", s.at, got, s.want, s.why)
		}
	}
}

func TestNewRejectsBadBounds(t *testing.T) {
	for _, c := range []struct {
		min, max int32
		target   float64
	}{{0, 3, 1}, {3, 2, 1}, {1, 3, 0}} {
		if _, err := New(c.min, c.max, c.target); err == nil {
			t.Errorf("New(%d, %d, %g) accepted", c.min, c.max, c.target)
		}
	}
}
