package provider

import (
	"fmt"
	"math"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/hetsev/hetsev/pkg/adapter"
)

// query is one metric as a request asks for it: its name and, for the
// latency and attainment metrics, how the merged bucket increases of
// istio_request_duration_milliseconds reduce to the value.
type query struct {
	metric string
	// fromHistogram is the value of a histogram's bucket increases; false
	// when undefined (no requests in the window). Nil for metrics that are
	// not read from the histogram.
	fromHistogram func([]adapter.Bucket) (float64, bool)
}

// parseQuery returns the query for metric and the request's metric
// selector. The fixed-quantile metrics (request_latency_p50_ms, ...) and
// the others take no parameter. MetricLatency needs quantile=<q> with q in
// (0, 1), MetricSLOAttainment le=<ms> with ms > 0, as the selector's only
// requirement; anything else is a BadRequest (HTTP 400) naming what is
// wanted.
func parseQuery(metric string, metricSelector labels.Selector) (query, error) {
	switch metric {
	case adapter.MetricLatencyP50, adapter.MetricLatencyP98, adapter.MetricLatencyP99:
		q := latencyQuantile[metric]
		return query{metric: metric, fromHistogram: func(bs []adapter.Bucket) (float64, bool) { return adapter.HistogramQuantile(q, bs) }}, nil
	case adapter.MetricLatency:
		q, err := selectorNumber(metric, adapter.SelectorQuantile, "a number in (0, 1), e.g. 0.98", metricSelector, func(v float64) bool { return v > 0 && v < 1 })
		if err != nil {
			return query{}, err
		}
		return query{metric: metric, fromHistogram: func(bs []adapter.Bucket) (float64, bool) { return adapter.HistogramQuantile(q, bs) }}, nil
	case adapter.MetricSLOAttainment:
		ms, err := selectorNumber(metric, adapter.SelectorLE, "a response time in ms > 0, e.g. 250", metricSelector, func(v float64) bool { return v > 0 && !math.IsInf(v, 0) })
		if err != nil {
			return query{}, err
		}
		return query{metric: metric, fromHistogram: func(bs []adapter.Bucket) (float64, bool) { return adapter.HistogramFractionAtMost(ms, bs) }}, nil
	}
	return query{metric: metric}, nil
}

// parametrised reports whether metric takes its parameter from the metric
// selector.
func parametrised(metric string) bool {
	return metric == adapter.MetricLatency || metric == adapter.MetricSLOAttainment
}

// selectorNumber reads the number of requirement key=<number> (want
// describes it) from sel, which must hold that requirement alone and whose
// value must pass valid. Errors are BadRequest.
func selectorNumber(metric, key, want string, sel labels.Selector, valid func(float64) bool) (float64, error) {
	bad := func(why string) error {
		return apierrors.NewBadRequest(fmt.Sprintf("metric %s needs the metric selector %s=<%s>: %s", metric, key, want, why))
	}
	if sel == nil || sel.Empty() {
		return 0, bad("no metric selector given")
	}
	reqs, selectable := sel.Requirements()
	if !selectable || len(reqs) != 1 {
		return 0, bad(fmt.Sprintf("got %q; give exactly one requirement", sel.String()))
	}
	r := reqs[0]
	if r.Key() != key {
		return 0, bad(fmt.Sprintf("got label %q", r.Key()))
	}
	vals := r.Values().UnsortedList()
	if op := r.Operator(); (op != selection.Equals && op != selection.DoubleEquals && op != selection.In) || len(vals) != 1 {
		return 0, bad(fmt.Sprintf("got %q; give one value with =", sel.String()))
	}
	v, err := strconv.ParseFloat(vals[0], 64)
	if err != nil {
		return 0, bad(fmt.Sprintf("%q is not a number", vals[0]))
	}
	if !valid(v) {
		return 0, bad(fmt.Sprintf("%s is out of range", vals[0]))
	}
	return v, nil
}
