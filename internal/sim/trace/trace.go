// Package trace reads request-arrival traces and turns them into per-second
// arrival rates for replay: the Twitter per-second counts that the
// inference-autoscaling papers use, with HetSev section 6's preparation
// (averages over a 120 s window in 15 s steps, scaled to a target peak), and
// traces of one timestamp per request such as the Azure LLM inference
// traces (ReadTimestamps, Read tells the two formats apart), and
// per-function, per-minute invocation counts such as the Azure Functions
// trace's (ReadFunctions), one rate series per function. Errors give the
// file and line, and quote at most 80 characters of the input (Quote).
package trace

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/hetsev/hetsev/data/traces"
)

// Rates is an arrival rate per second of trace time, requests/s.
type Rates []float64

// ReadCounts reads one non-negative integer per line (requests in that
// second). Blank lines are errors: a replay must not shift time silently.
// file names the input in errors, which give the line number.
func ReadCounts(r io.Reader, file string) (Rates, error) {
	var out Rates
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: want a request count, got %s", file, line, Quote(s))
		}
		if v < 0 {
			return nil, fmt.Errorf("%s:%d: negative request count %d", file, line, v)
		}
		out = append(out, float64(v))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: empty trace", file)
	}
	return out, nil
}

// Twitter returns the embedded Twitter trace (7 days, one count per second;
// provenance in data/README.md).
func Twitter() (Rates, error) {
	f, err := traces.Open(traces.TwitterTrace)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadCounts(f, traces.TwitterTrace)
}

// Window returns seconds [start, start+n) of r.
func (r Rates) Window(start, n int) (Rates, error) {
	if start < 0 || n <= 0 || start+n > len(r) {
		return nil, fmt.Errorf("window [%d, %d) outside the trace's %d s", start, start+n, len(r))
	}
	return append(Rates(nil), r[start:start+n]...), nil
}

// FillGaps replaces runs of zeros, which in the Twitter trace are gaps in
// the data rather than idle periods (data/README.md), with the last
// non-zero rate before them. Leading zeros take the first non-zero rate.
func (r Rates) FillGaps() Rates {
	out := append(Rates(nil), r...)
	last := 0.0
	for _, v := range out {
		if v > 0 {
			last = v
			break
		}
	}
	for i, v := range out {
		if v == 0 {
			out[i] = last
		} else {
			last = v
		}
	}
	return out
}

// Smooth follows HetSev section 6: the rate at each step is the trace's
// average over the preceding window seconds, recomputed every step seconds
// and held in between.
func (r Rates) Smooth(window, step int) Rates {
	if window <= 1 || step <= 0 {
		return append(Rates(nil), r...)
	}
	out := make(Rates, len(r))
	cur := 0.0
	for i := range r {
		if i%step == 0 {
			lo := max(0, i-window+1)
			sum := 0.0
			for _, v := range r[lo : i+1] {
				sum += v
			}
			cur = sum / float64(i+1-lo)
		}
		out[i] = cur
	}
	return out
}

// Peak is the highest rate.
func (r Rates) Peak() float64 {
	p := 0.0
	for _, v := range r {
		p = max(p, v)
	}
	return p
}

// Mean is the average rate.
func (r Rates) Mean() float64 {
	if len(r) == 0 {
		return 0
	}
	s := 0.0
	for _, v := range r {
		s += v
	}
	return s / float64(len(r))
}

// ScaleToPeak multiplies every rate so the peak becomes peak; it returns
// the factor used.
func (r Rates) ScaleToPeak(peak float64) (Rates, float64) {
	p := r.Peak()
	if p == 0 {
		return append(Rates(nil), r...), 1
	}
	f := peak / p
	out := make(Rates, len(r))
	for i, v := range r {
		out[i] = v * f
	}
	return out, f
}
