package adapter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/metadata/metadatalister"
	"k8s.io/klog/v2"
	"k8s.io/metrics/pkg/apis/custom_metrics"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"
)

type objectKind int

const (
	kindUnknown objectKind = iota
	kindPod
	kindDeployment
	kindModelService
)

// kindOf maps the group-resource of a request to a kind; resource names are
// accepted plural or singular, and deployments with or without the apps
// group (the core group has no deployments).
func kindOf(gr schema.GroupResource) objectKind {
	res := strings.ToLower(gr.Resource)
	switch {
	case gr.Group == "" && (res == "pods" || res == "pod"):
		return kindPod
	case (gr.Group == "apps" || gr.Group == "") && (res == "deployments" || res == "deployment"):
		return kindDeployment
	case gr.Group == v1alpha1.GroupName && (res == "modelservices" || res == "modelservice"):
		return kindModelService
	}
	return kindUnknown
}

func (k objectKind) resource() schema.GroupResource {
	switch k {
	case kindDeployment:
		return DeploymentsResource
	case kindModelService:
		return ModelServicesResource
	}
	return PodsResource
}

// served says which metric is served for which kind.
var served = map[string][]objectKind{
	MetricRequestsPerSecond: {kindPod, kindDeployment, kindModelService},
	MetricLatencyP50:        {kindPod, kindDeployment, kindModelService},
	MetricLatencyP98:        {kindPod, kindDeployment, kindModelService},
	MetricLatencyP99:        {kindPod, kindDeployment, kindModelService},
	MetricGPUUtilization:    {kindPod, kindDeployment, kindModelService},
	MetricGPUMemoryUsed:     {kindPod},
}

var latencyQuantile = map[string]float64{
	MetricLatencyP50: 0.50,
	MetricLatencyP98: 0.98,
	MetricLatencyP99: 0.99,
}

func serves(k objectKind, metric string) bool {
	for _, sk := range served[metric] {
		if sk == k && k != kindUnknown {
			return true
		}
	}
	return false
}

// Provider serves the adapter's metrics (see the Metric* constants) for
// pods, apps/v1 Deployments and hetsev.io ModelServices through
// custom.metrics.k8s.io. It reads data from a Source and objects from
// informer listers.
//
// Per Deployment, the pods are those its spec.selector selects in its
// namespace; per ModelService, those labelled hetsev.io/modelservice=<name>
// in its namespace (the pods of all its GPU types' Deployments). Pods
// without data are left out, and the object is NotFound only when none of
// its pods has data. Its Timestamp is the newest of the pods' sample times.
//
// Every value carries Timestamp (in the samples' clock) and WindowSeconds:
// the rate window for rates and percentiles, 0 for GPU gauge readings.
type Provider struct {
	src         Source
	pods        corelisters.PodLister
	deployments appslisters.DeploymentLister
	services    metadatalister.Lister
	// servicesSynced reports whether services holds every ModelService yet.
	servicesSynced func() bool
}

var _ provider.CustomMetricsProvider = (*Provider)(nil)

// NewProvider returns a Provider reading src, pods (needed for GPU metrics
// and Deployments) and deployments (needed for Deployments).
func NewProvider(src Source, pods corelisters.PodLister, deployments appslisters.DeploymentLister) *Provider {
	return &Provider{src: src, pods: pods, deployments: deployments}
}

// WithModelServices makes p list ModelServices from l, a metadata
// informer's lister for modelservices.hetsev.io, and answer NotFound for a
// ModelService l lacks once synced reports true (nil: at once). Without it
// ModelServices are not listed by selector, and a ModelService asked for by
// name is read from its pods' label alone. It returns p.
func (p *Provider) WithModelServices(l metadatalister.Lister, synced func() bool) *Provider {
	p.services, p.servicesSynced = l, synced
	return p
}

// ListAllMetrics implements provider.CustomMetricsProvider: every metric for
// pods, and all but gpu_memory_used_mib for deployments.apps and
// modelservices.hetsev.io.
func (p *Provider) ListAllMetrics() []provider.CustomMetricInfo {
	names := make([]string, 0, len(served))
	for m := range served {
		names = append(names, m)
	}
	sort.Strings(names)
	var out []provider.CustomMetricInfo
	for _, k := range []objectKind{kindPod, kindDeployment, kindModelService} {
		for _, m := range names {
			if serves(k, m) {
				out = append(out, provider.CustomMetricInfo{GroupResource: k.resource(), Namespaced: true, Metric: m})
			}
		}
	}
	return out
}

// GetMetricByName implements provider.CustomMetricsProvider. Objects without
// data get a NotFound error (provider.NewMetricNotFoundForError), never a
// zero. The metrics carry no labels, so a metric selector that does not
// match the empty label set yields NotFound too.
func (p *Provider) GetMetricByName(ctx context.Context, name types.NamespacedName, info provider.CustomMetricInfo, metricSelector labels.Selector) (*custom_metrics.MetricValue, error) {
	p = p.forRequest()
	k := kindOf(info.GroupResource)
	if !serves(k, info.Metric) {
		return nil, provider.NewMetricNotFoundError(info.GroupResource, info.Metric)
	}
	if metricSelector != nil && !metricSelector.Matches(labels.Set{}) {
		return nil, provider.NewMetricNotFoundForSelectorError(k.resource(), info.Metric, name.Name, metricSelector)
	}
	v, err := p.value(k, name, info.Metric)
	if err != nil {
		return nil, p.notFound(ctx, k, name, info.Metric, err)
	}
	return p.metricValue(k, name, info.Metric, metricSelector, v)
}

// GetMetricBySelector implements provider.CustomMetricsProvider: the metric
// for every pod or Deployment in namespace matching selector that has data;
// objects without data are left out (the list may be empty).
func (p *Provider) GetMetricBySelector(ctx context.Context, namespace string, selector labels.Selector, info provider.CustomMetricInfo, metricSelector labels.Selector) (*custom_metrics.MetricValueList, error) {
	p = p.forRequest()
	k := kindOf(info.GroupResource)
	if !serves(k, info.Metric) {
		return nil, provider.NewMetricNotFoundError(info.GroupResource, info.Metric)
	}
	if selector == nil {
		selector = labels.Everything()
	}
	list := &custom_metrics.MetricValueList{Items: []custom_metrics.MetricValue{}}
	if metricSelector != nil && !metricSelector.Matches(labels.Set{}) {
		return list, nil
	}
	names, err := p.objectNames(k, namespace, selector)
	if err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx)
	for _, n := range names {
		v, err := p.value(k, n, info.Metric)
		if errors.Is(err, ErrNoData) {
			logger.V(4).Info("No data", "resource", k.resource(), "object", n, "metric", info.Metric, "reason", err.Error())
			continue
		}
		if err != nil {
			return nil, err
		}
		mv, err := p.metricValue(k, n, info.Metric, metricSelector, v)
		if err != nil {
			return nil, err
		}
		list.Items = append(list.Items, *mv)
	}
	return list, nil
}

// forRequest returns p reading through a per-request view of its source
// when the source offers one (RequestScoped), else p.
func (p *Provider) forRequest() *Provider {
	rs, ok := p.src.(RequestScoped)
	if !ok {
		return p
	}
	q := *p
	q.src = rs.ForRequest()
	return &q
}

func (p *Provider) notFound(ctx context.Context, k objectKind, name types.NamespacedName, metric string, err error) error {
	if !errors.Is(err, ErrNoData) {
		return err
	}
	klog.FromContext(ctx).V(4).Info("No data", "resource", k.resource(), "object", name, "metric", metric, "reason", err.Error())
	return provider.NewMetricNotFoundForError(k.resource(), metric, name.Name)
}

func (p *Provider) objectNames(k objectKind, namespace string, selector labels.Selector) ([]types.NamespacedName, error) {
	var (
		names []types.NamespacedName
		err   error
	)
	switch {
	case k == kindPod && p.pods != nil:
		names, err = listNames(namespace == "", func() ([]*corev1.Pod, error) { return p.pods.List(selector) },
			func() ([]*corev1.Pod, error) { return p.pods.Pods(namespace).List(selector) })
	case k == kindDeployment && p.deployments != nil:
		names, err = listNames(namespace == "", func() ([]*appsv1.Deployment, error) { return p.deployments.List(selector) },
			func() ([]*appsv1.Deployment, error) { return p.deployments.Deployments(namespace).List(selector) })
	case k == kindModelService && p.services != nil:
		names, err = listNames(namespace == "", func() ([]*metav1.PartialObjectMetadata, error) { return p.services.List(selector) },
			func() ([]*metav1.PartialObjectMetadata, error) { return p.services.Namespace(namespace).List(selector) })
	}
	if err != nil {
		return nil, err
	}
	sort.Slice(names, func(i, j int) bool { return names[i].String() < names[j].String() })
	return names, nil
}

// listNames lists objects from all namespaces or from one, and returns
// their names.
func listNames[T metav1.Object](allNamespaces bool, all, one func() ([]T, error)) ([]types.NamespacedName, error) {
	list := one
	if allNamespaces {
		list = all
	}
	objs, err := list()
	if err != nil {
		return nil, err
	}
	names := make([]types.NamespacedName, 0, len(objs))
	for _, o := range objs {
		names = append(names, types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()})
	}
	return names, nil
}

// value computes metric for one object; ErrNoData (wrapped) when there is
// none.
func (p *Provider) value(k objectKind, name types.NamespacedName, metric string) (Value, error) {
	if p.src == nil {
		return Value{}, fmt.Errorf("no source: %w", ErrNoData)
	}
	switch k {
	case kindDeployment:
		pods, err := p.deploymentPods(name)
		if err != nil {
			return Value{}, err
		}
		return p.groupValue("deployment "+name.String(), pods, metric)
	case kindModelService:
		pods, err := p.modelServicePods(name)
		if err != nil {
			return Value{}, err
		}
		return p.groupValue("modelservice "+name.String(), pods, metric)
	}
	return p.podValue(name, metric)
}

func (p *Provider) podValue(pod types.NamespacedName, metric string) (Value, error) {
	switch metric {
	case MetricRequestsPerSecond:
		return p.src.RequestRate(pod)
	case MetricLatencyP50, MetricLatencyP98, MetricLatencyP99:
		h, err := p.src.RequestDurationHistogram(pod)
		if err != nil {
			return Value{}, err
		}
		return quantileValue(metric, h)
	case MetricGPUUtilization, MetricGPUMemoryUsed:
		node, gpu, err := p.podGPU(pod)
		if err != nil {
			return Value{}, err
		}
		series := SeriesDCGMGPUUtil
		if metric == MetricGPUMemoryUsed {
			series = SeriesDCGMFBUsed
		}
		return p.src.GPUGauge(series, node, gpu)
	}
	return Value{}, fmt.Errorf("metric %q: %w", metric, ErrNoData)
}

func quantileValue(metric string, h Histogram) (Value, error) {
	q, ok := HistogramQuantile(latencyQuantile[metric], h.Buckets)
	if !ok {
		return Value{}, fmt.Errorf("no requests in the window: %w", ErrNoData)
	}
	return Value{Value: q, Time: h.Time, Window: h.Window}, nil
}

// podGPU returns the node and GPU index of a pod: spec.nodeName and the
// hetsev.io/gpu-index annotation.
func (p *Provider) podGPU(name types.NamespacedName) (string, int, error) {
	if p.pods == nil {
		return "", 0, fmt.Errorf("no pod lister: %w", ErrNoData)
	}
	pod, err := p.pods.Pods(name.Namespace).Get(name.Name)
	if apierrors.IsNotFound(err) {
		return "", 0, fmt.Errorf("pod %s not found: %w", name, ErrNoData)
	}
	if err != nil {
		return "", 0, err
	}
	if pod.Spec.NodeName == "" {
		return "", 0, fmt.Errorf("pod %s is not bound to a node: %w", name, ErrNoData)
	}
	raw, ok := pod.Annotations[v1alpha1.AnnotationGPUIndex]
	if !ok {
		return "", 0, fmt.Errorf("pod %s has no %s annotation: %w", name, v1alpha1.AnnotationGPUIndex, ErrNoData)
	}
	gpu, err := strconv.Atoi(strings.TrimSpace(raw))
	if err != nil || gpu < 0 {
		return "", 0, fmt.Errorf("pod %s: bad %s %q: %w", name, v1alpha1.AnnotationGPUIndex, raw, ErrNoData)
	}
	return pod.Spec.NodeName, gpu, nil
}

// deploymentPods returns the pods a Deployment's selector selects in its
// namespace, sorted by name.
func (p *Provider) deploymentPods(name types.NamespacedName) ([]types.NamespacedName, error) {
	if p.deployments == nil || p.pods == nil {
		return nil, fmt.Errorf("no listers: %w", ErrNoData)
	}
	d, err := p.deployments.Deployments(name.Namespace).Get(name.Name)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("deployment %s not found: %w", name, ErrNoData)
	}
	if err != nil {
		return nil, err
	}
	if d.Spec.Selector == nil {
		return nil, fmt.Errorf("deployment %s has no selector: %w", name, ErrNoData)
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || sel.Empty() {
		return nil, fmt.Errorf("deployment %s: unusable selector: %w", name, ErrNoData)
	}
	return p.podsMatching(name.Namespace, sel)
}

// modelServicePods returns the pods labelled hetsev.io/modelservice=<name>
// in the ModelService's namespace, sorted by name.
func (p *Provider) modelServicePods(name types.NamespacedName) ([]types.NamespacedName, error) {
	if p.pods == nil {
		return nil, fmt.Errorf("no pod lister: %w", ErrNoData)
	}
	if p.services != nil && (p.servicesSynced == nil || p.servicesSynced()) {
		if _, err := p.services.Namespace(name.Namespace).Get(name.Name); apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("modelservice %s not found: %w", name, ErrNoData)
		} else if err != nil {
			return nil, err
		}
	}
	return p.podsMatching(name.Namespace, labels.SelectorFromSet(labels.Set{v1alpha1.LabelModelService: name.Name}))
}

// podsMatching lists the pods sel selects in namespace, sorted by name.
func (p *Provider) podsMatching(namespace string, sel labels.Selector) ([]types.NamespacedName, error) {
	pods, err := p.pods.Pods(namespace).List(sel)
	if err != nil {
		return nil, err
	}
	out := make([]types.NamespacedName, 0, len(pods))
	for _, o := range pods {
		out = append(out, types.NamespacedName{Namespace: o.Namespace, Name: o.Name})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// groupValue aggregates over the pods of a Deployment or ModelService
// (what names it in errors) that have data: rates are summed, histograms
// merged before the quantile, GPU utilisation averaged.
func (p *Provider) groupValue(what string, pods []types.NamespacedName, metric string) (Value, error) {
	var (
		sum     float64
		n       int
		latest  time.Time
		window  time.Duration
		buckets [][]Bucket
		reason  error
	)
	for _, pod := range pods {
		var v Value
		switch metric {
		case MetricLatencyP50, MetricLatencyP98, MetricLatencyP99:
			h, err := p.src.RequestDurationHistogram(pod)
			if err != nil {
				if !errors.Is(err, ErrNoData) {
					return Value{}, err
				}
				reason = err
				continue
			}
			buckets = append(buckets, h.Buckets)
			v = Value{Time: h.Time, Window: h.Window}
		default:
			var err error
			v, err = p.podValue(pod, metric)
			if err != nil {
				if !errors.Is(err, ErrNoData) {
					return Value{}, err
				}
				reason = err
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
	if n == 0 {
		if reason == nil {
			reason = ErrNoData
		}
		return Value{}, fmt.Errorf("%s: none of its %d pods has data (last: %v): %w", what, len(pods), reason, ErrNoData)
	}
	switch metric {
	case MetricLatencyP50, MetricLatencyP98, MetricLatencyP99:
		return quantileValue(metric, Histogram{Buckets: MergeHistograms(buckets...), Time: latest, Window: window})
	case MetricGPUUtilization:
		return Value{Value: sum / float64(n), Time: latest, Window: window}, nil
	}
	return Value{Value: sum, Time: latest, Window: window}, nil
}

// metricValue builds the API object; a non-finite value counts as no data.
func (p *Provider) metricValue(k objectKind, name types.NamespacedName, metric string, metricSelector labels.Selector, v Value) (*custom_metrics.MetricValue, error) {
	q, ok := milliQuantity(v.Value)
	if !ok {
		return nil, provider.NewMetricNotFoundForError(k.resource(), metric, name.Name)
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
