package schedulerbench

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
)

// WriteTable prints one row per run, then the medians per profile.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "profile\tpods\tseconds\tpods/s\tattempt p50 ms\tattempt p99 ms\t")
	for _, p := range r.Runs {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.1f\t%.2f\t%.2f\t\n", p.Name, p.Pods, p.Seconds, p.Throughput, p.AttemptP50, p.AttemptP99)
	}
	for _, name := range []string{defaultProfile, hetsevProfile} {
		thr, p50, p99 := r.medians(name)
		fmt.Fprintf(tw, "%s (median)\t\t\t%.1f\t%.2f\t%.2f\t\n", name, thr, p50, p99)
	}
	return tw.Flush()
}

// ResultLine is `RESULT throughput_ratio=<hetsev/default> p99_ms=<hetsev>`,
// from the medians over the rounds.
func (r Report) ResultLine() string {
	hThr, _, hP99 := r.medians(hetsevProfile)
	dThr, _, _ := r.medians(defaultProfile)
	ratio := 0.0
	if dThr > 0 {
		ratio = hThr / dThr
	}
	return fmt.Sprintf("RESULT throughput_ratio=%.3f p99_ms=%.2f", ratio, hP99)
}

func (r Report) medians(name string) (throughput, p50, p99 float64) {
	var thr, a, b []float64
	for _, p := range r.Runs {
		if p.Name == name {
			thr, a, b = append(thr, p.Throughput), append(a, p.AttemptP50), append(b, p.AttemptP99)
		}
	}
	return median(thr), median(a), median(b)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}
