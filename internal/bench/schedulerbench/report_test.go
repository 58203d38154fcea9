package schedulerbench

import (
	"math"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// TestQuantile works histogram_quantile's interpolation by hand: 100
// samples, 50 up to 1 ms, 90 up to 2 ms, 100 up to 4 ms. The median is the
// 50th sample: the end of the first bucket, 1 ms. The 99th percentile is
// rank 99 in the (2, 4] bucket holding ranks 91-100: 2 + 2*(99-90)/10 = 3.8 ms.
func TestQuantile(t *testing.T) {
	h := &dto.Histogram{SampleCount: proto.Uint64(100), Bucket: []*dto.Bucket{
		{UpperBound: proto.Float64(0.001), CumulativeCount: proto.Uint64(50)},
		{UpperBound: proto.Float64(0.002), CumulativeCount: proto.Uint64(90)},
		{UpperBound: proto.Float64(0.004), CumulativeCount: proto.Uint64(100)},
		{UpperBound: proto.Float64(math.Inf(1)), CumulativeCount: proto.Uint64(100)},
	}}
	if q := quantile(h, 0.5); math.Abs(q-0.001) > 1e-12 {
		t.Errorf("p50 = %g, want 0.001", q)
	}
	if q := quantile(h, 0.99); math.Abs(q-0.0038) > 1e-12 {
		t.Errorf("p99 = %g, want 0.0038", q)
	}
}

// TestResultLine: the ratio is of the medians over rounds, and p99_ms is
// the algorithm's.
func TestResultLine(t *testing.T) {
	r := Report{Runs: []Profile{
		{Name: defaultProfile, Throughput: 400}, {Name: hetsevProfile, Throughput: 380, AlgorithmP99: 12.5, AttemptP99: 900},
		{Name: defaultProfile, Throughput: 300}, {Name: hetsevProfile, Throughput: 300, AlgorithmP99: 7.5, AttemptP99: 800},
	}}
	// Medians: default 350, hetsev 340, p99 10.
	if got, want := r.ResultLine(), "RESULT throughput_ratio=0.971 p99_ms=10.00"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil || !strings.Contains(b.String(), "hetsev-scheduler (median)") {
		t.Errorf("table:\n%s", b.String())
	}
}
