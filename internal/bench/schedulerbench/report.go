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
	fmt.Fprintln(tw, "profile\tpods\tseconds\tpods/s\talgorithm p50 ms\talgorithm p99 ms\tattempt p50 ms\tattempt p99 ms\t")
	for _, p := range r.Runs {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.1f\t%.2f\t%.2f\t%.2f\t%.2f\t\n", p.Name, p.Pods, p.Seconds, p.Throughput, p.AlgorithmP50, p.AlgorithmP99, p.AttemptP50, p.AttemptP99)
	}
	for _, name := range []string{defaultProfile, hetsevProfile} {
		m := r.medians(name)
		fmt.Fprintf(tw, "%s (median)\t\t\t%.1f\t%.2f\t%.2f\t%.2f\t%.2f\t\n", name, m.Throughput, m.AlgorithmP50, m.AlgorithmP99, m.AttemptP50, m.AttemptP99)
	}
	return tw.Flush()
}

// ResultLine is `RESULT throughput_ratio=<hetsev/default> p99_ms=<hetsev>`,
// from the medians over the rounds; p99_ms is the scheduling algorithm's
// 99th percentile per pod.
func (r Report) ResultLine() string {
	h, d := r.medians(hetsevProfile), r.medians(defaultProfile)
	ratio := 0.0
	if d.Throughput > 0 {
		ratio = h.Throughput / d.Throughput
	}
	return fmt.Sprintf("RESULT throughput_ratio=%.3f p99_ms=%.2f", ratio, h.AlgorithmP99)
}

// medians is a Profile of the medians of the profile's runs.
func (r Report) medians(name string) Profile {
	var cols [5][]float64
	for _, p := range r.Runs {
		if p.Name == name {
			for i, v := range []float64{p.Throughput, p.AlgorithmP50, p.AlgorithmP99, p.AttemptP50, p.AttemptP99} {
				cols[i] = append(cols[i], v)
			}
		}
	}
	return Profile{Name: name, Throughput: median(cols[0]), AlgorithmP50: median(cols[1]), AlgorithmP99: median(cols[2]), AttemptP50: median(cols[3]), AttemptP99: median(cols[4])}
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
