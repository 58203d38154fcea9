package evaluate

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The bucket table must give the formula's bucket for every latency: at
// random over the table's range, and at each edge and the float below it.
func TestBucketTableMatchesTheFormula(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	check := func(ms float64) {
		t.Helper()
		if !(ms > latencyFloorMs) {
			return
		}
		if got, want := bucketOf(ms), bucketFormula(ms); got != want {
			t.Fatalf("bucket of %v ms: table %d, formula %d", ms, got, want)
		}
	}
	for range 1_000_000 {
		check(latencyFloorMs * math.Exp(rng.Float64()*math.Log(2*bucketTableMaxMs/latencyFloorMs)))
	}
	bucketOf(1)
	for _, e := range bucketTable.edges {
		check(e)
		check(math.Nextafter(e, 0))
	}
}
