package calibration

import (
	"testing"

	"github.com/hetsev/hetsev/pkg/heterogeneity/latency"
	"github.com/hetsev/hetsev/pkg/interference"
)

// TestSLOModelMeetsMeasuredServing holds the SLO check's latency model
// (pkg/heterogeneity/latency, the default dynamic batcher) to the measured
// 98th percentiles of the servers that ran alone in the open-loop H100
// measurement (dynamic batching without delay, Poisson arrivals at loads
// 0.3-0.9): the model may be at most 10 % below a measured percentile, so
// that the saturation thresholds it derives do not promise what a real
// server misses, and at most 2.5 times above it, so that they do not
// provision for a server that waits for full batches (that model reads
// 1.5 to 12 times the measured percentiles).
func TestSLOModelMeetsMeasuredServing(t *testing.T) {
	occ := interference.H100Occupancy()
	f, err := ReadServing("../../../data/measurements/gpu-serving-h100/timeslice-cudagraph-openloop.json", occ)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, sc := range f.Scenarios {
		if len(sc.Members) != 1 {
			continue
		}
		mb := sc.Members[0]
		srv := f.Servers[mb.Server]
		lat := srv.BatchLatencies()
		m := latency.Model{BatchSize: *srv.MaxBatch, BatchLatencyMs: lat[len(lat)-1] * 1000}
		got, meas := m.Percentile(0.98, *mb.RateRPS), *mb.LatMsP98
		if got < 0.9*meas || got > 2.5*meas {
			t.Errorf("%s: model p98 %.2f ms, measured %.2f ms (ratio %.2f)", sc.Label, got, meas, got/meas)
		}
		n++
	}
	if n < 12 {
		t.Fatalf("%d solo scenarios, want the file's 12", n)
	}
}
