package provider

import (
	"context"
	"math"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	cmprovider "sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/adapter/internal/adaptertest"
)

func mustSelector(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// The fixture's resnet-t4 (and ModelService resnet) merges to
// {100: 100, 250: 100, 500: 200, +Inf: 200}: pod a has 100 requests
// <= 100 ms, pod b 100 in (250, 500].
func TestProviderSelectedLatencyAndAttainment(t *testing.T) {
	p, _ := fixture(t)
	ctx := context.Background()
	msInfo := func(m string) cmprovider.CustomMetricInfo {
		return cmprovider.CustomMetricInfo{GroupResource: adapter.ModelServicesResource, Namespaced: true, Metric: m}
	}
	for _, tc := range []struct {
		what, object string
		info         cmprovider.CustomMetricInfo
		selector     string
		want         float64
	}{
		// Rank 196 in (250, 500]: 250 + 250*96/100, as request_latency_p98_ms.
		{"deployment p98", "resnet-t4", adaptertest.DepInfo(adapter.MetricLatency), "quantile=0.98", 490},
		// Rank 199.8: 250 + 250*99.8/100.
		{"deployment p99.9", "resnet-t4", adaptertest.DepInfo(adapter.MetricLatency), "quantile=0.999", 499.5},
		{"modelservice p99.9", "resnet", msInfo(adapter.MetricLatency), "quantile=0.999", 499.5},
		// At a bound: 100 of 200.
		{"deployment le=250", "resnet-t4", adaptertest.DepInfo(adapter.MetricSLOAttainment), "le=250", 0.5},
		// Between bounds: (100 + 100*(375-250)/250) / 200.
		{"deployment le=375", "resnet-t4", adaptertest.DepInfo(adapter.MetricSLOAttainment), "le=375", 0.75},
		{"modelservice le=375", "resnet", msInfo(adapter.MetricSLOAttainment), "le=375", 0.75},
		// Pod b: 100*(0.1/250) / 100, kept to the micro (milli would be 0).
		{"pod b le=250.1", "b", adaptertest.PodsInfo(adapter.MetricSLOAttainment), "le=250.1", 0.0004},
	} {
		mv, err := p.GetMetricByName(ctx, adaptertest.NN("ml", tc.object), tc.info, mustSelector(t, tc.selector))
		if err != nil {
			t.Errorf("%s: %v", tc.what, err)
			continue
		}
		if got := mv.Value.AsApproximateFloat64(); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: %s{%s} = %v, want %v", tc.what, tc.info.Metric, tc.selector, got, tc.want)
		}
		if mv.Metric.Selector == nil || labels.Set(mv.Metric.Selector.MatchLabels).String() != tc.selector {
			t.Errorf("%s: metric selector %v, want %s", tc.what, mv.Metric.Selector, tc.selector)
		}
	}
	// By selector: every pod with data, a all <= 100 ms, b half of its
	// (250, 500] bucket below 375.
	list, err := p.GetMetricBySelector(ctx, "ml", labels.SelectorFromSet(labels.Set{"app": "resnet"}), adaptertest.PodsInfo(adapter.MetricSLOAttainment), mustSelector(t, "le=375"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, it := range list.Items {
		got[it.DescribedObject.Name] = it.Value.AsApproximateFloat64()
	}
	if len(got) != 2 || got["a"] != 1 || got["b"] != 0.5 {
		t.Errorf("pods le=375: %v, want a=1 b=0.5", got)
	}
}

// No requests in the window: no value (NotFound), not 1 or 0.
func TestProviderAttainmentWithoutRequestsIsNotFound(t *testing.T) {
	p, src := fixture(t)
	src.hists[adaptertest.NN("ml", "c")] = adapter.Histogram{Buckets: []adapter.Bucket{{UpperBound: 100, Count: 0}, {UpperBound: adaptertest.Inf, Count: 0}}}
	for _, pod := range []string{"c", "d"} {
		_, err := p.GetMetricByName(context.Background(), adaptertest.NN("ml", pod), adaptertest.PodsInfo(adapter.MetricSLOAttainment), mustSelector(t, "le=100"))
		if !apierrors.IsNotFound(err) {
			t.Errorf("pod %s: err = %v, want NotFound", pod, err)
		}
	}
}

// A missing or malformed parameter is a BadRequest, by name and by
// selector, for every kind.
func TestProviderBadMetricSelectorIsBadRequest(t *testing.T) {
	p, _ := fixture(t)
	ctx := context.Background()
	for _, tc := range []struct {
		metric   string
		selector labels.Selector
	}{
		{adapter.MetricLatency, labels.Everything()},
		{adapter.MetricLatency, nil},
		{adapter.MetricLatency, mustSelector(t, "quantile=abc")},
		{adapter.MetricLatency, mustSelector(t, "quantile=1")},
		{adapter.MetricLatency, mustSelector(t, "quantile=0")},
		{adapter.MetricLatency, mustSelector(t, "quantile=98")},
		{adapter.MetricLatency, mustSelector(t, "quantile!=0.5")},
		{adapter.MetricLatency, mustSelector(t, "quantile in (0.5,0.9)")},
		{adapter.MetricLatency, mustSelector(t, "quantile=0.9,le=100")},
		{adapter.MetricLatency, mustSelector(t, "le=100")},
		{adapter.MetricSLOAttainment, labels.Everything()},
		{adapter.MetricSLOAttainment, mustSelector(t, "le=0")},
		{adapter.MetricSLOAttainment, mustSelector(t, "le=fast")},
		{adapter.MetricSLOAttainment, mustSelector(t, "quantile=0.5")},
		{adapter.MetricSLOAttainment, mustSelector(t, "le")},
	} {
		for _, info := range []cmprovider.CustomMetricInfo{adaptertest.PodsInfo(tc.metric), adaptertest.DepInfo(tc.metric),
			{GroupResource: adapter.ModelServicesResource, Namespaced: true, Metric: tc.metric}} {
			obj := map[string]string{"pods": "a", "deployments": "resnet-t4", "modelservices": "resnet"}[info.GroupResource.Resource]
			if _, err := p.GetMetricByName(ctx, adaptertest.NN("ml", obj), info, tc.selector); !apierrors.IsBadRequest(err) {
				t.Errorf("%s %s{%v} by name: err = %v, want BadRequest", info.GroupResource, tc.metric, tc.selector, err)
			}
			if _, err := p.GetMetricBySelector(ctx, "ml", labels.Everything(), info, tc.selector); !apierrors.IsBadRequest(err) {
				t.Errorf("%s %s{%v} by selector: err = %v, want BadRequest", info.GroupResource, tc.metric, tc.selector, err)
			}
		}
	}
}
