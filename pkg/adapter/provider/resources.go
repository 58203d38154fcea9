package provider

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
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
	case gr.Group == v1alpha1.GroupName && (res == v1alpha1.Resource.Resource || res == "modelservice"):
		return kindModelService
	}
	return kindUnknown
}

func (k objectKind) resource() schema.GroupResource {
	switch k {
	case kindDeployment:
		return adapter.DeploymentsResource
	case kindModelService:
		return adapter.ModelServicesResource
	}
	return adapter.PodsResource
}

// served says which metric is served for which kind.
var served = map[string][]objectKind{
	adapter.MetricRequestsPerSecond: {kindPod, kindDeployment, kindModelService},
	adapter.MetricLatencyP50:        {kindPod, kindDeployment, kindModelService},
	adapter.MetricLatencyP98:        {kindPod, kindDeployment, kindModelService},
	adapter.MetricLatencyP99:        {kindPod, kindDeployment, kindModelService},
	adapter.MetricLatency:           {kindPod, kindDeployment, kindModelService},
	adapter.MetricSLOAttainment:     {kindPod, kindDeployment, kindModelService},
	adapter.MetricGPUUtilization:    {kindPod, kindDeployment, kindModelService},
	adapter.MetricGPUMemoryUsed:     {kindPod},
}

var latencyQuantile = map[string]float64{
	adapter.MetricLatencyP50: 0.50,
	adapter.MetricLatencyP98: 0.98,
	adapter.MetricLatencyP99: 0.99,
}

func serves(k objectKind, metric string) bool {
	for _, sk := range served[metric] {
		if sk == k && k != kindUnknown {
			return true
		}
	}
	return false
}
