package evaluate

import (
	"slices"
	"testing"

	"github.com/hetsev/hetsev/pkg/catalog"
)

// TestBatchLatenciesChargeTheNextMeasuredSize: ResNet-50 on a T4 is
// measured at batches 1, 2, 4 (10.7, 11.26, 12.73 ms) and 8 (22.41 ms):
// a batch of 3 is charged batch 4's latency, 5-8 batch 8's; a profile with
// no smaller measured batch has none (every batch at its latency); a
// smaller batch measured slower than a larger one never makes the larger
// one cheaper.
func TestBatchLatenciesChargeTheNextMeasuredSize(t *testing.T) {
	ps, err := catalog.DefaultProfiles()
	if err != nil {
		t.Fatal(err)
	}
	p, ok := ps.Get("resnet50", "T4")
	if !ok {
		t.Fatal("no resnet50 T4 profile")
	}
	want := []float64{0.0107, 0.01126, 0.01273, 0.01273, 0.02241, 0.02241, 0.02241, 0.02241}
	got := batchLatencies(p)
	if len(got) != len(want) {
		t.Fatalf("batchLatencies = %v, want %v", got, want)
	}
	for i := range want {
		if !near(got[i], want[i]) {
			t.Fatalf("batchLatencies = %v, want %v", got, want)
		}
	}
	p.SmallBatches = nil
	if got := batchLatencies(p); got != nil {
		t.Errorf("without smaller batches: %v, want nil", got)
	}
	odd := catalog.Profile{BatchSize: 4, LatencyMs: 10, SmallBatches: []catalog.BatchPoint{{BatchSize: 2, LatencyMs: 12}}}
	if got := batchLatencies(odd); !slices.Equal(got, []float64{0.012, 0.012, 0.012, 0.012}) {
		t.Errorf("a noisy smaller batch: %v, want every size at 12 ms", got)
	}
}

// TestEveryPolicysServersBatchWhatArrived: at 1 request/s BERT-large on a
// T4 runs batches of one, measured at 14.4 ms against 114.5 ms for its
// profile's batch of 8. Every policy's servers, not only hetsev's light
// columns, answer such a request in about the batch-1 time.
func TestEveryPolicysServersBatchWhatArrived(t *testing.T) {
	svc := Service{Name: "b", Model: "bert-large", Share: 1, RTMaxMs: 600}
	for _, policy := range []string{PolicyKnativeKPA, PolicyHPABestType, PolicyExact} {
		res := run(t, constant(1, 120), t4Only(2), policy, svc)
		if len(res.Services) != 1 || res.Services[0].Requests == 0 {
			t.Fatalf("%s: no requests answered: %+v", policy, res.Services)
		}
		if p99 := res.Services[0].P99Ms; !(p99 < 60) {
			t.Errorf("%s: p99 %.1f ms at 1 request/s, want about the batch-1 latency (14.4 ms), not the batch of 8's 114.5 ms", policy, p99)
		}
	}
}
