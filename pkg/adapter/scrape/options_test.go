package scrape

import (
	"testing"
	"time"
)

func TestScraperOptionsValidate(t *testing.T) {
	if err := (Options{Interval: -time.Second}).Validate(); err == nil {
		t.Error("negative interval accepted")
	}
	if _, err := New(Options{}, nil); err == nil {
		t.Error("nil lister accepted")
	}
	s, err := New(Options{}, staticTargets())
	if err != nil {
		t.Fatal(err)
	}
	if o := s.Options(); o.Interval != time.Second || o.Timeout != 500*time.Millisecond || o.RateWindow != time.Minute || o.Workers != 16 {
		t.Errorf("defaults: %+v", o)
	}
}
