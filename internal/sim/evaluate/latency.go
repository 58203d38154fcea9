package evaluate

import "math"

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
		i = int(math.Log(ms/latencyFloorMs) / math.Log(bucketRatio))
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
