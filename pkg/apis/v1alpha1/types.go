// Package v1alpha1 holds the hetsev.io/v1alpha1 API: ModelService, one
// inference service with a latency SLO that hetsev-scaler serves from one
// Deployment per GPU type. The CRD is manifests/crd-modelservice.yaml; the
// scaler reads objects through the dynamic client and converts them to these
// types.
package v1alpha1

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group, version and resource of ModelService.
var (
	GroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}
	Resource     = GroupVersion.WithResource("modelservices")
)

// Kind is ModelService's kind.
const Kind = "ModelService"

// ModelService is an inference service with a latency SLO.
type ModelService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ModelServiceSpec   `json:"spec"`
	Status            ModelServiceStatus `json:"status,omitempty"`
}

// ModelServiceSpec says what to serve, how fast, and on which GPU types.
type ModelServiceSpec struct {
	// Model is the model's identity (hetsev.io/model on its pods): two
	// instances of one model never share a GPU.
	Model string `json:"model"`
	// SLO: at least ServiceLevel of requests within ResponseTimeMs.
	SLO SLO `json:"slo"`
	// BatchSize is the server's maximum batch (HetSev 6: 8 for ResNet-50,
	// 4 for SSD).
	BatchSize int `json:"batchSize"`
	// Profiles lists the GPU types this model may run on, with their offline
	// profile; one Deployment is kept per entry.
	Profiles []GPUProfile `json:"profiles"`
	// Scaling holds the scaler's knobs.
	Scaling Scaling `json:"scaling,omitempty"`
	// ServicePort is the model server's HTTP port; the scaler creates a
	// Service of the ModelService's name on it, which the VirtualService
	// routes (default 8000, Triton's HTTP port).
	ServicePort int32 `json:"servicePort,omitempty"`
	// Template is the pod template of the model-server instances; the scaler
	// adds the GPU type's nodeSelector, schedulerName, hetsev annotations and
	// NVIDIA_VISIBLE_DEVICES.
	Template v1.PodTemplateSpec `json:"template"`
}

// SLO is HetSev's service-level objective (section 4): RT_max and SL_min.
type SLO struct {
	// ResponseTimeMs is RT_max, ms.
	ResponseTimeMs float64 `json:"responseTimeMs"`
	// ServiceLevel is SL_min, a fraction (0.98 = 98 % of requests).
	ServiceLevel float64 `json:"serviceLevel"`
}

// GPUProfile is one model instance's offline profile on one GPU type.
type GPUProfile struct {
	// GPUType names a type of the scaler's GPU catalog, e.g. "T4".
	GPUType string `json:"gpuType"`
	// ThroughputRPS is T_i: one instance's maximum throughput, requests/s.
	ThroughputRPS float64 `json:"throughputRPS"`
	// LatencyMs is L_i: one batch's latency when running alone, ms.
	LatencyMs float64 `json:"latencyMs"`
	// GPUMemory is the GPU memory one instance needs (a quantity).
	GPUMemory string `json:"gpuMemory"`
	// CPU and Memory are the instance container's requests (quantities).
	CPU    string `json:"cpu,omitempty"`
	Memory string `json:"memory,omitempty"`
	// LaunchSeconds is O_i: the time from creating an instance to serving.
	LaunchSeconds float64 `json:"launchSeconds,omitempty"`
	// PriceUSDPerHour is C_i; when empty the scaler's GPU catalog is used.
	PriceUSDPerHour float64 `json:"priceUSDPerHour,omitempty"`
}

// Scaling holds the scaler's knobs for one service (HetSev 4.1).
type Scaling struct {
	// SaturationThreshold: scale out when W / sum T_i N_i stays above it
	// (default 0.8, HetSev 4.1).
	SaturationThreshold float64 `json:"saturationThreshold,omitempty"`
	// IntervalSeconds between decisions (default 15).
	IntervalSeconds float64 `json:"intervalSeconds,omitempty"`
	// ScaleOutPeriodSeconds the saturation must stay above the threshold
	// before scaling out (default 30).
	ScaleOutPeriodSeconds *float64 `json:"scaleOutPeriodSeconds,omitempty"`
	// ScaleInIntervalSeconds between two scale-ins (default 60).
	ScaleInIntervalSeconds float64 `json:"scaleInIntervalSeconds,omitempty"`
	// ScaleInCoolDownSeconds after a scale-out before any scale-in
	// (default 300).
	ScaleInCoolDownSeconds float64 `json:"scaleInCoolDownSeconds,omitempty"`
	// ScaleInHysteresis: scale in only when the load fits under
	// saturationThreshold minus this margin without one instance (default
	// 0.1; 0 is the paper's rule).
	ScaleInHysteresis *float64 `json:"scaleInHysteresis,omitempty"`
	// Lambda weighs launch latency against cost, per second (default 0.01).
	Lambda *float64 `json:"lambda,omitempty"`
	// Solver computes the amount of a scaling action: "exact" (the ILP of
	// HetSev 4.1 solved exactly) or "heuristic" (the paper's greedy
	// selection); empty uses the scaler's --solver.
	Solver string `json:"solver,omitempty"`
	// MinReplicas over all GPU types (default 1: never zero).
	MinReplicas int `json:"minReplicas,omitempty"`
	// MaxReplicas over all GPU types (0: no cap).
	MaxReplicas int `json:"maxReplicas,omitempty"`
}

// ModelServiceStatus is what the scaler observed and decided.
type ModelServiceStatus struct {
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Replicas per GPU type (the Deployments' desired replicas).
	Replicas map[string]int32 `json:"replicas,omitempty"`
	// ArrivalRate is W, requests/s, as a decimal string.
	ArrivalRate string `json:"arrivalRate,omitempty"`
	// Saturation is W / sum T_i N_i, as a decimal string.
	Saturation string `json:"saturation,omitempty"`
	// LatencyP98Ms is the highest p98 latency among the Deployments, ms.
	LatencyP98Ms string `json:"latencyP98Ms,omitempty"`
	// TrafficWeights is the percent of requests routed to each GPU type
	// (VirtualService weights, proportional to T_i N_i).
	TrafficWeights map[string]int32 `json:"trafficWeights,omitempty"`
	// LastDecision is the scaler's latest decision.
	LastDecision *Decision `json:"lastDecision,omitempty"`
	// Conditions: Ready, MetricsUnavailable, NoFeasibleType.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Decision records one scaling decision.
type Decision struct {
	Time   metav1.Time      `json:"time"`
	Action string           `json:"action"`
	Delta  map[string]int32 `json:"delta,omitempty"`
	Reason string           `json:"reason"`
}

// Condition types.
const (
	ConditionReady              = "Ready"
	ConditionMetricsUnavailable = "MetricsUnavailable"
	ConditionNoFeasibleType     = "NoFeasibleType"
	ConditionTrafficSplit       = "TrafficSplit"
)

// DeepCopyStatus returns a copy of the status that shares nothing with s.
func (s ModelServiceStatus) DeepCopyStatus() ModelServiceStatus {
	out := s
	if s.Replicas != nil {
		out.Replicas = make(map[string]int32, len(s.Replicas))
		for k, v := range s.Replicas {
			out.Replicas[k] = v
		}
	}
	if s.TrafficWeights != nil {
		out.TrafficWeights = make(map[string]int32, len(s.TrafficWeights))
		for k, v := range s.TrafficWeights {
			out.TrafficWeights[k] = v
		}
	}
	if s.LastDecision != nil {
		d := *s.LastDecision
		out.LastDecision = &d
	}
	out.Conditions = append([]metav1.Condition(nil), s.Conditions...)
	return out
}
