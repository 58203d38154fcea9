package evaluate

import (
	"math"
	"sync"
)

// latencyHist counts response times in buckets 1 % wide (relative) from
// latencyFloorMs up, plus those that were never answered, for percentiles
// of millions of requests in constant memory.
type latencyHist struct {
	counts []int64
	shed   int64 // unserved or rejected: +Inf
	n      int64
}

// latencyFloorMs is the lower edge of the first bucket; faster responses
// count in it.
const latencyFloorMs = 0.1

// bucketRatio is the ratio of a bucket's upper to lower edge.
const bucketRatio = 1.01

func (h *latencyHist) add(ms float64) {
	h.n++
	if math.IsInf(ms, 1) || math.IsNaN(ms) {
		h.shed++
		return
	}
	i := 0
	if ms > latencyFloorMs {
		i = bucketOf(ms)
	}
	if i >= len(h.counts) {
		h.counts = append(h.counts, make([]int64, i+1-len(h.counts))...)
	}
	h.counts[i]++
}

// quantile is the q-quantile (0 < q < 1) in ms: the upper edge of the
// bucket it falls in (within 1 % above the true value); +Inf when it falls
// on an unanswered request; 0 with no requests.
func (h *latencyHist) quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(h.n)))
	var seen int64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return latencyFloorMs * math.Pow(bucketRatio, float64(i+1))
		}
	}
	return math.Inf(1)
}

// bucketFormula is the bucket of ms > latencyFloorMs: the whole number of
// bucketRatio steps from the floor.
func bucketFormula(ms float64) int {
	return int(math.Log(ms/latencyFloorMs) / math.Log(bucketRatio))
}

// The replay counts every request's latency, and a logarithm each was a
// tenth of a peer's replay time. bucketOf finds bucketFormula's answer in
// a table instead: the smallest float with each bucket (found once by
// bisection over the formula itself, so the two agree wherever the
// logarithm is monotone) and, per binary exponent and top 8 bits of the
// mantissa (cells 0.27 % wide, narrower than a bucket), the bucket of the
// cell's first value.
const (
	bucketTableMaxMs = 1e7 // beyond: the formula
	cellBits         = 8
)

var bucketTable struct {
	once     sync.Once
	edges    []float64 // edges[i]: the smallest ms in bucket i
	minExp   int
	cellBase []int32 // per cell: the bucket of its smallest value
}

func bucketOf(ms float64) int {
	t := &bucketTable
	t.once.Do(buildBucketTable)
	if !(ms < bucketTableMaxMs) {
		return bucketFormula(ms)
	}
	bits := math.Float64bits(ms)
	cell := (int(bits>>52)-t.minExp)<<cellBits | int(bits>>(52-cellBits))&(1<<cellBits-1)
	i := int(t.cellBase[cell])
	for i+1 < len(t.edges) && ms >= t.edges[i+1] {
		i++
	}
	return i
}

func buildBucketTable() {
	t := &bucketTable
	last := bucketFormula(bucketTableMaxMs)
	t.edges = make([]float64, last+2)
	lo := math.Nextafter(latencyFloorMs, math.Inf(1))
	for i := 1; i < len(t.edges); i++ {
		// The smallest float in [lo, 2^64 bits) whose bucket is >= i.
		a, b := math.Float64bits(lo), math.Float64bits(bucketTableMaxMs*2)
		for a < b {
			m := a + (b-a)/2
			if bucketFormula(math.Float64frombits(m)) >= i {
				b = m
			} else {
				a = m + 1
			}
		}
		t.edges[i] = math.Float64frombits(a)
		lo = t.edges[i]
	}
	t.edges[0] = latencyFloorMs
	t.minExp = int(math.Float64bits(math.Nextafter(latencyFloorMs, math.Inf(1))) >> 52)
	maxExp := int(math.Float64bits(bucketTableMaxMs) >> 52)
	t.cellBase = make([]int32, (maxExp-t.minExp+1)<<cellBits)
	for c := range t.cellBase {
		first := math.Float64frombits(uint64(t.minExp+c>>cellBits)<<52 | uint64(c&(1<<cellBits-1))<<(52-cellBits))
		i := 0
		if first > latencyFloorMs {
			i = bucketFormula(first)
		}
		t.cellBase[c] = int32(i)
	}
}
