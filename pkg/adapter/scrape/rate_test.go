package scrape

import (
	"testing"
	"time"
)

func TestWindowRate(t *testing.T) {
	t0 := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	pts := []point{{t0, 10}, {t0.Add(2 * time.Second), 30}, {t0.Add(4 * time.Second), 50}}
	if r, ok := windowRate(pts); !ok || r != 10 {
		t.Errorf("got %v ok=%v, want 10", r, ok)
	}
	if _, ok := windowRate(pts[:1]); ok {
		t.Error("one sample: want no rate")
	}
	if _, ok := windowRate([]point{{t0, 1}, {t0, 2}}); ok {
		t.Error("zero time span: want no rate")
	}
	if counterIncrease(100, 7) != 7 || counterIncrease(5, 7) != 2 {
		t.Error("counterIncrease")
	}
}
