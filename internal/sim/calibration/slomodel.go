package calibration

import (
	"fmt"
	"io"
	"math"

	"github.com/hetsev/hetsev/pkg/heterogeneity/latency"
)

// SLOModelPoint is the SLO check's latency model (pkg/heterogeneity/latency,
// the dynamic batcher hetsev-scaler assumes) against one member of a
// serving file that ran alone: the 98th percentile of its response time at
// the member's arrival rate, in ms, with its full-batch latency and batch
// size from the file's table.
type SLOModelPoint struct {
	Label      string  // the scenario's label
	ModelMs    float64 // the model's p98, ms
	MeasuredMs float64 // the measured p98, ms
}

// SLOModelSolo evaluates the SLO latency model on every scenario of f with
// one member, in the file's order.
func SLOModelSolo(f *ServingFile) []SLOModelPoint {
	var out []SLOModelPoint
	for _, sc := range f.Scenarios {
		if len(sc.Members) != 1 {
			continue
		}
		mb := sc.Members[0]
		srv := f.Servers[mb.Server]
		lat := srv.BatchLatencies()
		m := latency.Model{BatchSize: *srv.MaxBatch, BatchLatencyMs: lat[len(lat)-1] * 1000}
		out = append(out, SLOModelPoint{Label: sc.Label, ModelMs: m.Percentile(0.98, *mb.RateRPS), MeasuredMs: *mb.LatMsP98})
	}
	return out
}

// WriteSLOModelReport prints pts, one line each, and the range of the
// model's p98 over the measured one.
func WriteSLOModelReport(w io.Writer, pts []SLOModelPoint) {
	if len(pts) == 0 {
		return
	}
	fmt.Fprintln(w, "SLO latency model (pkg/heterogeneity/latency, dynamic batcher) against the members that ran alone:")
	fmt.Fprintf(w, "%-33s %9s %9s %6s\n", "scenario", "p98 m", "model", "ratio")
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range pts {
		r := p.ModelMs / p.MeasuredMs
		lo, hi = math.Min(lo, r), math.Max(hi, r)
		fmt.Fprintf(w, "%-33s %9.2f %9.2f %6.2f\n", p.Label, p.MeasuredMs, p.ModelMs, r)
	}
	fmt.Fprintf(w, "SLO model p98 / measured p98: %.2f..%.2f over %d members\n", lo, hi, len(pts))
}
