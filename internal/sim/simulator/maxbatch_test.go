package simulator

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// A pod annotated with a measured smaller batch runs batches of at most
// that size at its latency; a missing, malformed or unmeasured value
// leaves the service's batch.
func TestMaxBatch(t *testing.T) {
	s := &Service{BatchSize: 8}
	prof := InstanceProfile{LatencyMs: 114.5, SmallBatchMs: map[int]float64{1: 14.4}}
	for _, tc := range []struct {
		ann     string
		b       int
		latency float64
	}{
		{"1", 1, 14.4},
		{"", 8, 114.5},
		{"two", 8, 114.5},
		{"4", 8, 114.5},
		{"8", 8, 114.5},
		{"0", 8, 114.5},
	} {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}
		if tc.ann != "" {
			p.Annotations[v1alpha1.AnnotationMaxBatchSize] = tc.ann
		}
		if b, ms := maxBatch(p, s, prof); b != tc.b || ms != tc.latency {
			t.Errorf("annotation %q: batch %d at %v ms, want %d at %v", tc.ann, b, ms, tc.b, tc.latency)
		}
	}
}
