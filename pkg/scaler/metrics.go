package scaler

import (
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	cmclient "k8s.io/metrics/pkg/client/custom_metrics"
)

// Metric names served by hetsev-metrics-adapter that the scaler reads.
const (
	MetricRequestsPerSecond = "requests_per_second"
	MetricLatencyP98        = "request_latency_p98_ms"
)

// MetricsSource returns a Deployment's metric value; an error means the
// value is unknown, never zero.
type MetricsSource interface {
	DeploymentMetric(namespace, deployment, metric string) (float64, error)
}

// CustomMetrics reads custom.metrics.k8s.io with the standard client.
type CustomMetrics struct{ Client cmclient.CustomMetricsClient }

var deploymentGK = schema.GroupKind{Group: "apps", Kind: "Deployment"}

// DeploymentMetric implements MetricsSource.
func (c CustomMetrics) DeploymentMetric(namespace, deployment, metric string) (float64, error) {
	v, err := c.Client.NamespacedMetrics(namespace).GetForObject(deploymentGK, deployment, metric, labels.Everything())
	if err != nil {
		return 0, fmt.Errorf("%s of deployment %s/%s: %w", metric, namespace, deployment, err)
	}
	return float64(v.Value.MilliValue()) / 1000, nil
}
