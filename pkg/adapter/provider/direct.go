package provider

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	cmprovider "sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/hetsev/hetsev/pkg/adapter"
)

// The values of custom.metrics.k8s.io without the API in between, for a
// program that reads a Source itself (hetsev-scaler with
// --metrics-backend=prometheus). They are what the API serves, to the
// milli-unit, under the same rules: a Deployment is NotFound while any of
// its serving pods has no data, and pods without data are left out.

// DeploymentValue is metric of Deployment name, in its unit (requests/s,
// ms, percent). Errors: those of GetMetricByName (NotFound without data).
func (p *Provider) DeploymentValue(ctx context.Context, name types.NamespacedName, metric string) (float64, error) {
	v, err := p.GetMetricByName(ctx, name, cmprovider.CustomMetricInfo{GroupResource: adapter.DeploymentsResource, Namespaced: true, Metric: metric}, labels.Everything())
	if err != nil {
		return 0, err
	}
	return float64(v.Value.MilliValue()) / 1000, nil
}

// DeploymentValueFor is metric of Deployment name with its metric selector
// (quantile=<q> for request_latency_ms, le=<ms> for
// request_slo_attainment), at the precision served (micro for the
// attainment). Errors: those of GetMetricByName (BadRequest for a
// malformed selector, NotFound without data).
func (p *Provider) DeploymentValueFor(ctx context.Context, name types.NamespacedName, metric string, metricSelector labels.Selector) (float64, error) {
	v, err := p.GetMetricByName(ctx, name, cmprovider.CustomMetricInfo{GroupResource: adapter.DeploymentsResource, Namespaced: true, Metric: metric}, metricSelector)
	if err != nil {
		return 0, err
	}
	return v.Value.AsApproximateFloat64(), nil
}

// PodValues is metric of each pod selector selects in namespace that has
// data, by pod name. Errors: those of GetMetricBySelector.
func (p *Provider) PodValues(ctx context.Context, namespace string, selector labels.Selector, metric string) (map[string]float64, error) {
	list, err := p.GetMetricBySelector(ctx, namespace, selector, cmprovider.CustomMetricInfo{GroupResource: adapter.PodsResource, Namespaced: true, Metric: metric}, labels.Everything())
	if err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(list.Items))
	for _, v := range list.Items {
		out[v.DescribedObject.Name] = float64(v.Value.MilliValue()) / 1000
	}
	return out, nil
}
