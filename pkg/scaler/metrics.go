package scaler

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	cmv1beta2 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	cmclient "k8s.io/metrics/pkg/client/custom_metrics"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hetsev/hetsev/pkg/adapter/prometheus"
	"github.com/hetsev/hetsev/pkg/adapter/provider"
)

// MetricsSource returns a Deployment's metric value and its pods' values;
// an error or a missing pod means the value is unknown, never zero. A call
// returns, with ctx's error, once ctx is done.
type MetricsSource interface {
	// DeploymentMetric is metric over the Deployment's pods. The adapter
	// withholds it (an error) while any pod that serves has no data.
	DeploymentMetric(ctx context.Context, namespace, deployment, metric string) (float64, error)
	// PodMetrics is metric of each pod that selector selects in
	// namespace and that has data, by pod name; pods without data are
	// absent.
	PodMetrics(ctx context.Context, namespace string, selector labels.Selector, metric string) (map[string]float64, error)
}

// SelectedMetricsSource is a MetricsSource that also reads the metrics
// parametrised by a metric selector: adapter.MetricLatency with
// quantile=<q> and adapter.MetricSLOAttainment with le=<ms>. Both
// implementations of this package are one; a source that is not leaves
// the status fields read from them as they were.
type SelectedMetricsSource interface {
	// DeploymentMetricFor is metric with metricSelector over the
	// Deployment's pods, withheld (an error) as DeploymentMetric is.
	DeploymentMetricFor(ctx context.Context, namespace, deployment, metric string, metricSelector labels.Selector) (float64, error)
}

// metricsOrigin names where m reads from, for status messages.
func metricsOrigin(m MetricsSource) string {
	if _, ok := m.(*PrometheusMetrics); ok {
		return "Prometheus"
	}
	return "custom.metrics.k8s.io"
}

// CustomMetrics reads custom.metrics.k8s.io with the standard client.
type CustomMetrics struct{ Client cmclient.CustomMetricsClient }

var (
	deploymentGK = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	podGK        = schema.GroupKind{Kind: "Pod"}
)

// DeploymentMetric implements MetricsSource.
func (c CustomMetrics) DeploymentMetric(ctx context.Context, namespace, deployment, metric string) (float64, error) {
	v, err := withContext(ctx, func() (*cmv1beta2.MetricValue, error) {
		return c.Client.NamespacedMetrics(namespace).GetForObject(deploymentGK, deployment, metric, labels.Everything())
	})
	if err != nil {
		return 0, fmt.Errorf("%s of deployment %s/%s: %w", metric, namespace, deployment, err)
	}
	return float64(v.Value.MilliValue()) / 1000, nil
}

// DeploymentMetricFor implements SelectedMetricsSource, at the precision
// the adapter serves (micro for the attainment).
func (c CustomMetrics) DeploymentMetricFor(ctx context.Context, namespace, deployment, metric string, metricSelector labels.Selector) (float64, error) {
	v, err := withContext(ctx, func() (*cmv1beta2.MetricValue, error) {
		return c.Client.NamespacedMetrics(namespace).GetForObject(deploymentGK, deployment, metric, metricSelector)
	})
	if err != nil {
		return 0, fmt.Errorf("%s{%s} of deployment %s/%s: %w", metric, metricSelector, namespace, deployment, err)
	}
	return v.Value.AsApproximateFloat64(), nil
}

// PodMetrics implements MetricsSource with one list request,
// pods/*/<metric> with selector.
func (c CustomMetrics) PodMetrics(ctx context.Context, namespace string, selector labels.Selector, metric string) (map[string]float64, error) {
	list, err := withContext(ctx, func() (*cmv1beta2.MetricValueList, error) {
		return c.Client.NamespacedMetrics(namespace).GetForObjects(podGK, selector, metric, labels.Everything())
	})
	if err != nil {
		return nil, fmt.Errorf("%s of pods %s in %s: %w", metric, selector, namespace, err)
	}
	out := make(map[string]float64, len(list.Items))
	for _, v := range list.Items {
		out[v.DescribedObject.Name] = float64(v.Value.MilliValue()) / 1000
	}
	return out, nil
}

// withContext runs get, which takes no context (the custom metrics
// client's calls do not), and returns its result, or ctx's error as soon
// as ctx is done. The request itself ends at the REST config's Timeout
// (NewManager sets it to --metrics-timeout), so an abandoned get does not
// linger.
func withContext[T any](ctx context.Context, get func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1) // buffered: an abandoned get still exits
	go func() {
		v, err := get()
		done <- result{v, err}
	}()
	select {
	case res := <-done:
		return res.v, res.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// PrometheusMetrics reads the metrics from Prometheus itself, with the
// metrics adapter's Prometheus backend and provider: the same PromQL, and
// the same values and rules (a Deployment has no value while any of its
// serving pods has no data) as custom.metrics.k8s.io would serve, without
// the APIService (--metrics-backend=prometheus).
type PrometheusMetrics struct{ p *provider.Provider }

// NewPrometheusMetrics returns a MetricsSource querying Prometheus as opts
// say, reading pods and Deployments from r (the manager's cache). Errors:
// invalid options (prometheus.Options.Validate).
func NewPrometheusMetrics(opts prometheus.Options, r client.Reader) (*PrometheusMetrics, error) {
	src, err := prometheus.New(opts)
	if err != nil {
		return nil, err
	}
	return &PrometheusMetrics{p: provider.New(src, podLister{r: r}, deploymentLister{r: r})}, nil
}

// DeploymentMetric implements MetricsSource.
func (m *PrometheusMetrics) DeploymentMetric(ctx context.Context, namespace, deployment, metric string) (float64, error) {
	v, err := withContext(ctx, func() (float64, error) {
		return m.p.DeploymentValue(ctx, types.NamespacedName{Namespace: namespace, Name: deployment}, metric)
	})
	if err != nil {
		return 0, fmt.Errorf("%s of deployment %s/%s from Prometheus: %w", metric, namespace, deployment, err)
	}
	return v, nil
}

// DeploymentMetricFor implements SelectedMetricsSource: the adapter's
// provider reduces the bucket increases Prometheus returns with
// adapter.HistogramQuantile or adapter.HistogramFractionAtMost, as the
// adapter serving custom.metrics.k8s.io would.
func (m *PrometheusMetrics) DeploymentMetricFor(ctx context.Context, namespace, deployment, metric string, metricSelector labels.Selector) (float64, error) {
	v, err := withContext(ctx, func() (float64, error) {
		return m.p.DeploymentValueFor(ctx, types.NamespacedName{Namespace: namespace, Name: deployment}, metric, metricSelector)
	})
	if err != nil {
		return 0, fmt.Errorf("%s{%s} of deployment %s/%s from Prometheus: %w", metric, metricSelector, namespace, deployment, err)
	}
	return v, nil
}

// PodMetrics implements MetricsSource.
func (m *PrometheusMetrics) PodMetrics(ctx context.Context, namespace string, selector labels.Selector, metric string) (map[string]float64, error) {
	v, err := withContext(ctx, func() (map[string]float64, error) {
		return m.p.PodValues(ctx, namespace, selector, metric)
	})
	if err != nil {
		return nil, fmt.Errorf("%s of pods %s in %s from Prometheus: %w", metric, selector, namespace, err)
	}
	return v, nil
}
