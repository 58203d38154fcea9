package provider

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/metrics/pkg/apis/custom_metrics"
	cmprovider "sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// value computes metric for one object; adapter.ErrNoData (wrapped) when
// there is none.
func (p *Provider) value(k objectKind, name types.NamespacedName, q query) (adapter.Value, error) {
	if p.src == nil {
		return adapter.Value{}, fmt.Errorf("no source: %w", adapter.ErrNoData)
	}
	switch k {
	case kindDeployment:
		pods, err := p.deploymentPods(name)
		if err != nil {
			return adapter.Value{}, err
		}
		return p.groupValue("deployment "+name.String(), pods, q)
	case kindModelService:
		pods, err := p.modelServicePods(name)
		if err != nil {
			return adapter.Value{}, err
		}
		return p.groupValue("modelservice "+name.String(), pods, q)
	}
	return p.podValue(name, q)
}

func (p *Provider) podValue(pod types.NamespacedName, q query) (adapter.Value, error) {
	if q.fromHistogram != nil {
		h, err := p.src.RequestDurationHistogram(pod)
		if err != nil {
			return adapter.Value{}, err
		}
		return histogramValue(q, h)
	}
	metric := q.metric
	switch metric {
	case adapter.MetricRequestsPerSecond:
		return p.src.RequestRate(pod)
	case adapter.MetricGPUUtilization, adapter.MetricGPUMemoryUsed:
		gpu, err := p.podGPU(pod)
		if err != nil {
			return adapter.Value{}, err
		}
		series := adapter.SeriesDCGMGPUUtil
		if metric == adapter.MetricGPUMemoryUsed {
			series = adapter.SeriesDCGMFBUsed
		}
		return p.src.GPUGauge(series, gpu)
	}
	return adapter.Value{}, fmt.Errorf("metric %q: %w", metric, adapter.ErrNoData)
}

// histogramValue is q's value of the bucket increases h; ErrNoData
// (wrapped) when the window holds no requests.
func histogramValue(q query, h adapter.Histogram) (adapter.Value, error) {
	v, ok := q.fromHistogram(h.Buckets)
	if !ok {
		return adapter.Value{}, fmt.Errorf("no requests in the window: %w", adapter.ErrNoData)
	}
	return adapter.Value{Value: v, Time: h.Time, Window: h.Window}, nil
}

// groupValue aggregates over the pods of a Deployment or ModelService
// (what names it in errors) that have data: rates are summed, histograms
// merged before the quantile, GPU utilisation averaged. Every serving pod
// (Ready and not being deleted, see adapter.Serving) must have data: a sum over some
// of the pods that take traffic would understate the load, and a scaler
// reading it would scale in on missing data. So one serving pod without data
// makes the whole value unavailable (adapter.ErrNoData, wrapped with a
// *PartialDataError naming the pods), counted in
// hetsev_metrics_adapter_partial_data_total. Pods that do not serve (not
// Ready yet, or terminating) count when they have data and are skipped when
// they have none.
func (p *Provider) groupValue(what string, pods []*corev1.Pod, q query) (adapter.Value, error) {
	metric := q.metric
	var (
		sum        float64
		n          int
		latest     time.Time
		window     time.Duration
		buckets    [][]adapter.Bucket
		reason     error
		unmeasured []string
	)
	for _, pod := range pods {
		name := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
		var v adapter.Value
		switch {
		case q.fromHistogram != nil:
			h, err := p.src.RequestDurationHistogram(name)
			if err != nil {
				if !errors.Is(err, adapter.ErrNoData) {
					return adapter.Value{}, err
				}
				reason = err
				if adapter.Serving(pod) {
					unmeasured = append(unmeasured, pod.Name)
				}
				continue
			}
			buckets = append(buckets, h.Buckets)
			v = adapter.Value{Time: h.Time, Window: h.Window}
		default:
			var err error
			v, err = p.podValue(name, q)
			if err != nil {
				if !errors.Is(err, adapter.ErrNoData) {
					return adapter.Value{}, err
				}
				reason = err
				if adapter.Serving(pod) {
					unmeasured = append(unmeasured, pod.Name)
				}
				continue
			}
			sum += v.Value
		}
		n++
		if v.Time.After(latest) {
			latest = v.Time
		}
		if v.Window > window {
			window = v.Window
		}
	}
	if len(unmeasured) > 0 {
		return adapter.Value{}, &PartialDataError{Object: what, Metric: metric, Unmeasured: unmeasured, Pods: len(pods), Last: reason}
	}
	if n == 0 {
		if reason == nil {
			reason = adapter.ErrNoData
		}
		return adapter.Value{}, fmt.Errorf("%s: none of its %d pods has data (last: %v): %w", what, len(pods), reason, adapter.ErrNoData)
	}
	switch {
	case q.fromHistogram != nil:
		return histogramValue(q, adapter.Histogram{Buckets: adapter.MergeHistograms(buckets...), Time: latest, Window: window})
	case metric == adapter.MetricGPUUtilization:
		return adapter.Value{Value: sum / float64(n), Time: latest, Window: window}, nil
	}
	return adapter.Value{Value: sum, Time: latest, Window: window}, nil
}

// PartialDataError is why a Deployment's or ModelService's value is withheld
// although some of its pods have data: serving pods without data. It wraps
// adapter.ErrNoData, so the object is answered NotFound.
type PartialDataError struct {
	// Object is "deployment ns/name" or "modelservice ns/name".
	Object string
	// Metric is the metric asked for.
	Metric string
	// Unmeasured are the names of the serving pods without data.
	Unmeasured []string
	// Pods is how many pods the object has.
	Pods int
	// Last is the source's error for the last pod without data.
	Last error
}

func (e *PartialDataError) Error() string {
	return fmt.Sprintf("%s: %d of its %d pods serve but have no %s (%s; last: %v): withholding the value rather than under-counting",
		e.Object, len(e.Unmeasured), e.Pods, e.Metric, strings.Join(e.Unmeasured, ", "), e.Last)
}

// Unwrap makes a PartialDataError an adapter.ErrNoData.
func (e *PartialDataError) Unwrap() error { return adapter.ErrNoData }

// metricValue builds the API object; a non-finite value counts as no data.
// Values carry milli precision, MetricSLOAttainment micro precision (a
// fraction such as 0.9995 must not round to 1).
func (p *Provider) metricValue(k objectKind, name types.NamespacedName, metric string, metricSelector labels.Selector, v adapter.Value) (*custom_metrics.MetricValue, error) {
	q, ok := milliQuantity(v.Value)
	if metric == adapter.MetricSLOAttainment {
		q, ok = microQuantity(v.Value)
	}
	if !ok {
		return nil, cmprovider.NewMetricNotFoundForError(k.resource(), metric, name.Name)
	}
	ref := custom_metrics.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: name.Namespace, Name: name.Name}
	switch k {
	case kindDeployment:
		ref.APIVersion, ref.Kind = "apps/v1", "Deployment"
	case kindModelService:
		ref.APIVersion, ref.Kind = v1alpha1.GroupVersion.String(), v1alpha1.Kind
	}
	window := int64(math.Round(v.Window.Seconds()))
	mv := &custom_metrics.MetricValue{
		DescribedObject: ref,
		Metric:          custom_metrics.MetricIdentifier{Name: metric},
		Timestamp:       metav1.NewTime(v.Time),
		WindowSeconds:   &window,
		Value:           q,
	}
	if metricSelector != nil && !metricSelector.Empty() {
		sel, err := metav1.ParseToLabelSelector(metricSelector.String())
		if err == nil {
			mv.Metric.Selector = sel
		}
	}
	return mv, nil
}

// milliQuantity converts v to a DecimalSI quantity with milli precision.
func milliQuantity(v float64) (resource.Quantity, bool) {
	m := math.Round(v * 1000)
	if math.IsNaN(m) || m >= math.MaxInt64 || m <= math.MinInt64 {
		return resource.Quantity{}, false
	}
	return *resource.NewMilliQuantity(int64(m), resource.DecimalSI), true
}

// microQuantity converts v to a DecimalSI quantity with micro precision.
func microQuantity(v float64) (resource.Quantity, bool) {
	u := math.Round(v * 1e6)
	if math.IsNaN(u) || u >= math.MaxInt64 || u <= math.MinInt64 {
		return resource.Quantity{}, false
	}
	return *resource.NewScaledQuantity(int64(u), resource.Micro), true
}
