// Package provider is the adapter's custom-metrics provider: it implements
// sigs.k8s.io/custom-metrics-apiserver's provider.CustomMetricsProvider
// (imported here as cmprovider) over an adapter.Source, for pods,
// Deployments and ModelServices. It maps the API's objects to pods
// (objects.go), computes and aggregates their values (values.go), and
// answers missing data with NotFound, never a zero (provider.go); which
// metric is served for which resource is in resources.go.
package provider

import (
	"context"
	"errors"
	"sort"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
	"k8s.io/client-go/metadata/metadatalister"
	"k8s.io/klog/v2"
	"k8s.io/metrics/pkg/apis/custom_metrics"
	cmprovider "sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/adapter/internal/selfmetrics"
	"github.com/hetsev/hetsev/pkg/dra"
)

// Provider serves the adapter's metrics (see the adapter.Metric* constants)
// for pods, apps/v1 Deployments and hetsev.io ModelServices through
// custom.metrics.k8s.io. It reads data from an adapter.Source and objects
// from informer listers.
//
// Per Deployment, the pods are those its spec.selector selects in its
// namespace; per ModelService, those labelled hetsev.io/modelservice=<name>
// in its namespace (the pods of all its GPU types' Deployments). The object
// is NotFound when none of its pods has data, and also when any pod that
// serves (Ready, not terminating) has none: a value summed over part of the
// serving pods would understate the load. Pods that do not serve are left
// out when they have no data. Its Timestamp is the newest of the pods'
// sample times.
//
// Every value carries Timestamp (in the samples' clock) and WindowSeconds:
// the rate window for rates and percentiles, 0 for GPU gauge readings.
type Provider struct {
	src         adapter.Source
	pods        corelisters.PodLister
	deployments appslisters.DeploymentLister
	services    metadatalister.Lister
	// servicesSynced reports whether services holds every ModelService yet.
	servicesSynced func() bool

	// GPU mode dra (WithDRA): where podGPU finds the GPU of a pod without
	// hetsev.io/gpu-index. Nil in annotation mode.
	draDriver string // the DRA driver's name (WithDRA)
	claims    resourcelisters.ResourceClaimLister
	slices    resourcelisters.ResourceSliceLister
	draSynced func() bool
}

var _ cmprovider.CustomMetricsProvider = (*Provider)(nil)

// New returns a Provider reading src, pods (needed for GPU metrics
// and Deployments) and deployments (needed for Deployments).
func New(src adapter.Source, pods corelisters.PodLister, deployments appslisters.DeploymentLister) *Provider {
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

// WithDRA makes p find the GPU of a pod that has no hetsev.io/gpu-index
// annotation from its ResourceClaims (GPU mode dra, where another
// scheduler's DynamicResources plugin may have allocated the claim): the
// device of DRA driver driver (its name; "" is dra.NVIDIA's) its
// claims are allocated, and that device's uuid and index in the
// ResourceSlice of the pod's node (see podGPU). claims and slices are the
// informers' listers; until synced reports true (nil: at once) such a pod
// has no data. It returns p.
func (p *Provider) WithDRA(driver string, claims resourcelisters.ResourceClaimLister, slices resourcelisters.ResourceSliceLister, synced func() bool) *Provider {
	if driver == "" {
		driver = dra.NVIDIA.Name
	}
	p.draDriver, p.claims, p.slices, p.draSynced = driver, claims, slices, synced
	return p
}

// ListAllMetrics implements cmprovider.CustomMetricsProvider: every metric
// for pods, and all but gpu_memory_used_mib for deployments.apps and
// modelservices.hetsev.io.
func (p *Provider) ListAllMetrics() []cmprovider.CustomMetricInfo {
	names := make([]string, 0, len(served))
	for m := range served {
		names = append(names, m)
	}
	sort.Strings(names)
	var out []cmprovider.CustomMetricInfo
	for _, k := range []objectKind{kindPod, kindDeployment, kindModelService} {
		for _, m := range names {
			if serves(k, m) {
				out = append(out, cmprovider.CustomMetricInfo{GroupResource: k.resource(), Namespaced: true, Metric: m})
			}
		}
	}
	return out
}

// GetMetricByName implements cmprovider.CustomMetricsProvider. Objects
// without data get a NotFound error (cmprovider.NewMetricNotFoundForError),
// never a zero. The metrics carry no labels, so a metric selector that does not
// match the empty label set yields NotFound too, except for
// request_latency_ms and request_slo_attainment, whose metric selector is
// their parameter (quantile=<q>, le=<ms>; parseQuery): a missing or
// malformed one is a BadRequest.
func (p *Provider) GetMetricByName(ctx context.Context, name types.NamespacedName, info cmprovider.CustomMetricInfo, metricSelector labels.Selector) (*custom_metrics.MetricValue, error) {
	p = p.forRequest()
	k := kindOf(info.GroupResource)
	if !serves(k, info.Metric) {
		return nil, cmprovider.NewMetricNotFoundError(info.GroupResource, info.Metric)
	}
	q, err := parseQuery(info.Metric, metricSelector)
	if err != nil {
		return nil, err
	}
	if !parametrised(info.Metric) && metricSelector != nil && !metricSelector.Matches(labels.Set{}) {
		return nil, cmprovider.NewMetricNotFoundForSelectorError(k.resource(), info.Metric, name.Name, metricSelector)
	}
	v, err := p.value(k, name, q)
	if err != nil {
		return nil, p.notFound(ctx, k, name, info.Metric, err)
	}
	return p.metricValue(k, name, info.Metric, metricSelector, v)
}

// GetMetricBySelector implements cmprovider.CustomMetricsProvider: the
// metric for every pod, Deployment or ModelService in namespace matching
// selector that has data; objects without data are left out (the list may
// be empty). A malformed parameter of request_latency_ms or
// request_slo_attainment is a BadRequest.
func (p *Provider) GetMetricBySelector(ctx context.Context, namespace string, selector labels.Selector, info cmprovider.CustomMetricInfo, metricSelector labels.Selector) (*custom_metrics.MetricValueList, error) {
	p = p.forRequest()
	k := kindOf(info.GroupResource)
	if !serves(k, info.Metric) {
		return nil, cmprovider.NewMetricNotFoundError(info.GroupResource, info.Metric)
	}
	if selector == nil {
		selector = labels.Everything()
	}
	q, err := parseQuery(info.Metric, metricSelector)
	if err != nil {
		return nil, err
	}
	list := &custom_metrics.MetricValueList{Items: []custom_metrics.MetricValue{}}
	if !parametrised(info.Metric) && metricSelector != nil && !metricSelector.Matches(labels.Set{}) {
		return list, nil
	}
	names, err := p.objectNames(k, namespace, selector)
	if err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx)
	for _, n := range names {
		v, err := p.value(k, n, q)
		if errors.Is(err, adapter.ErrNoData) {
			logNoData(logger, k, n, info.Metric, err)
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
// when the source offers one (adapter.RequestScoped), else p.
func (p *Provider) forRequest() *Provider {
	rs, ok := p.src.(adapter.RequestScoped)
	if !ok {
		return p
	}
	q := *p
	q.src = rs.ForRequest()
	return &q
}

func (p *Provider) notFound(ctx context.Context, k objectKind, name types.NamespacedName, metric string, err error) error {
	if !errors.Is(err, adapter.ErrNoData) {
		return err
	}
	logNoData(klog.FromContext(ctx), k, name, metric, err)
	return cmprovider.NewMetricNotFoundForError(k.resource(), metric, name.Name)
}

// logNoData logs why an object has no value. A value withheld because some
// serving pods have no data (*PartialDataError) is logged at V(2) and
// counted in hetsev_metrics_adapter_partial_data_total, since a scaler then
// holds; plain missing data at V(4).
func logNoData(logger klog.Logger, k objectKind, name types.NamespacedName, metric string, err error) {
	var partial *PartialDataError
	if errors.As(err, &partial) {
		selfmetrics.PartialDataTotal.WithLabelValues(k.resource().String(), metric).Inc()
		logger.V(2).Info("Withholding value: serving pods have no data", "resource", k.resource(), "object", name,
			"metric", metric, "unmeasured", partial.Unmeasured, "pods", partial.Pods, "reason", err.Error())
		return
	}
	logger.V(4).Info("No data", "resource", k.resource(), "object", name, "metric", metric, "reason", err.Error())
}
