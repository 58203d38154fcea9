package adapter

import (
	"math"
	"sort"
)

// HistogramQuantile returns the q-quantile (0 < q <= 1) of a cumulative
// histogram, as Prometheus' histogram_quantile does: buckets are sorted by
// upper bound (duplicates summed), counts are made monotonic, the rank
// q*count(+Inf) is located in the first bucket whose cumulative count
// reaches it, and the result is interpolated linearly between that bucket's
// lower and upper bounds (the lower bound of the first bucket is 0 when its
// upper bound is positive). A rank that falls in the +Inf bucket yields the
// highest finite upper bound. The unit of the result is the unit of the
// upper bounds (milliseconds for Istio's histogram).
//
// It reports false when the quantile is undefined: no +Inf bucket, fewer
// than two buckets, no observations, or q outside (0, 1].
func HistogramQuantile(q float64, buckets []Bucket) (float64, bool) {
	if !(q > 0 && q <= 1) {
		return 0, false
	}
	bs, total, ok := cumulative(buckets)
	if !ok {
		return 0, false
	}
	n := len(bs)
	rank := q * total
	b := sort.Search(n, func(i int) bool { return bs[i].Count >= rank })
	if b >= n-1 {
		return bs[n-2].UpperBound, true
	}
	if b == 0 && bs[0].UpperBound <= 0 {
		return bs[0].UpperBound, true
	}
	start, end, count := 0.0, bs[b].UpperBound, bs[b].Count
	if b > 0 {
		start = bs[b-1].UpperBound
		count -= bs[b-1].Count
		rank -= bs[b-1].Count
	}
	if !(count > 0) {
		return end, true
	}
	return start + (end-start)*(rank/count), true
}

// HistogramFractionAtMost returns the fraction (0-1) of a cumulative
// histogram's observations that are <= bound, the counterpart of
// HistogramQuantile (same bucket handling). At a bucket's upper bound it is
// exact: that bucket's count over the +Inf count. Between two bounds it is
// an estimate: the count is interpolated linearly between the lower and
// upper bound of the bucket holding bound, assuming observations spread
// evenly inside it, as histogram_quantile assumes (the lower bound of the
// first bucket is 0 when its upper bound is positive). Above the highest
// finite bound it is that bound's count over the total, a lower bound
// since the +Inf bucket has no width to interpolate in. The unit of bound
// is that of the upper bounds (milliseconds for Istio's histogram).
//
// It reports false when the fraction is undefined: no +Inf bucket, fewer
// than two buckets, no observations, or bound NaN.
func HistogramFractionAtMost(bound float64, buckets []Bucket) (float64, bool) {
	if math.IsNaN(bound) {
		return 0, false
	}
	bs, total, ok := cumulative(buckets)
	if !ok {
		return 0, false
	}
	if math.IsInf(bound, +1) {
		return 1, true
	}
	n := len(bs)
	b := sort.Search(n, func(i int) bool { return bs[i].UpperBound >= bound })
	if b >= n-1 { // above the highest finite bound
		return bs[n-2].Count / total, true
	}
	if bs[b].UpperBound == bound {
		return bs[b].Count / total, true
	}
	start, below := 0.0, 0.0
	if b > 0 {
		start, below = bs[b-1].UpperBound, bs[b-1].Count
	} else if bs[0].UpperBound <= 0 {
		return 0, true // below a non-positive first bound: nothing to spread over
	}
	if bound <= start {
		return below / total, true
	}
	in := bs[b].Count - below
	return (below + in*(bound-start)/(bs[b].UpperBound-start)) / total, true
}

// cumulative returns buckets normalised (normalizeBuckets) with counts
// made monotonic, and the +Inf bucket's count; false when there is no
// +Inf bucket, fewer than two buckets, or no (or infinitely many)
// observations.
func cumulative(buckets []Bucket) ([]Bucket, float64, bool) {
	bs := normalizeBuckets(buckets)
	n := len(bs)
	if n < 2 || !math.IsInf(bs[n-1].UpperBound, +1) {
		return nil, 0, false
	}
	for i := 1; i < n; i++ {
		if bs[i].Count < bs[i-1].Count {
			bs[i].Count = bs[i-1].Count
		}
	}
	total := bs[n-1].Count
	if !(total > 0) || math.IsInf(total, 0) {
		return nil, 0, false
	}
	return bs, total, true
}

// normalizeBuckets returns a sorted copy of bs without NaN bounds or counts,
// with buckets of equal upper bound summed.
func normalizeBuckets(bs []Bucket) []Bucket {
	out := make([]Bucket, 0, len(bs))
	for _, b := range bs {
		if math.IsNaN(b.UpperBound) || math.IsNaN(b.Count) {
			continue
		}
		out = append(out, b)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].UpperBound < out[j].UpperBound })
	merged := out[:0]
	for _, b := range out {
		if k := len(merged); k > 0 && merged[k-1].UpperBound == b.UpperBound {
			merged[k-1].Count += b.Count
			continue
		}
		merged = append(merged, b)
	}
	return merged
}

// MergeHistograms sums cumulative histograms bucket by bucket (by upper
// bound), like sum by (le) in PromQL. Merging before taking a quantile is
// what makes a Deployment's percentile the percentile of all its requests;
// averaging the pods' percentiles would not be.
func MergeHistograms(hs ...[]Bucket) []Bucket {
	var all []Bucket
	for _, h := range hs {
		all = append(all, h...)
	}
	return normalizeBuckets(all)
}
