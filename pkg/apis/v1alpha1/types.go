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

// ModelService is an inference service with a latency SLO, served by
// hetsev-scaler from one Deployment per GPU type.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=msvc
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Model",type=string,JSONPath=`.spec.model`
// +kubebuilder:printcolumn:name="RT_max(ms)",type=number,JSONPath=`.spec.slo.responseTimeMs`
// +kubebuilder:printcolumn:name="W(req/s)",type=string,JSONPath=`.status.arrivalRate`
// +kubebuilder:printcolumn:name="Saturation",type=string,JSONPath=`.status.saturation`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ModelService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ModelServiceSpec `json:"spec"`
	// Status is written by hetsev-scaler only. Its schema is left open, so
	// the API server neither prunes nor validates what the scaler writes.
	//
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Status ModelServiceStatus `json:"status,omitempty"`
}

// ModelServiceList is a list of ModelServices.
//
// +kubebuilder:object:root=true
type ModelServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ModelService `json:"items"`
}

// ModelServiceSpec says what to serve, how fast, and on which GPU types.
type ModelServiceSpec struct {
	// Model is the model's identity (hetsev.io/model on its pods): two
	// instances of one model never share a GPU.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Model string `json:"model"`
	// SLO: at least ServiceLevel of requests within ResponseTimeMs.
	SLO SLO `json:"slo"`
	// BatchSize is the server's maximum batch (HetSev 6: 8 for ResNet-50,
	// 4 for SSD).
	//
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4096
	BatchSize int `json:"batchSize"`
	// Profiles lists the GPU types this model may run on, with their offline
	// profile; one Deployment is kept per entry.
	//
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=gpuType
	Profiles []GPUProfile `json:"profiles"`
	// Scaling holds the scaler's knobs.
	Scaling Scaling `json:"scaling,omitempty"`
	// ServicePort is the model server's HTTP port; the scaler creates a
	// Service of the ModelService's name on it, which the VirtualService
	// routes (default 8000, Triton's HTTP port).
	//
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	ServicePort int32 `json:"servicePort,omitempty"`
	// Template is the pod template of the model-server instances; the scaler
	// adds the GPU type's nodeSelector, schedulerName, hetsev annotations and
	// NVIDIA_VISIBLE_DEVICES. Its schema is left open: the API server keeps
	// it as written, and the Deployments' own validation checks it.
	//
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Template v1.PodTemplateSpec `json:"template"`
}

// SLO is HetSev's service-level objective (section 4): RT_max and SL_min.
type SLO struct {
	// ResponseTimeMs is RT_max, ms.
	//
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	ResponseTimeMs float64 `json:"responseTimeMs"`
	// ServiceLevel is SL_min, the fraction of requests within RT_max
	// (0.98 = 98 % of requests).
	//
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	ServiceLevel float64 `json:"serviceLevel"`
}

// GPUProfile is one model instance's offline profile on one GPU type.
type GPUProfile struct {
	// GPUType names a type of the scaler's GPU catalog, e.g. "T4".
	//
	// +kubebuilder:validation:MinLength=1
	GPUType string `json:"gpuType"`
	// ThroughputRPS is T_i: one instance's maximum throughput, requests/s.
	//
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	ThroughputRPS float64 `json:"throughputRPS"`
	// LatencyMs is L_i: one batch's latency when running alone, ms.
	//
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	LatencyMs float64 `json:"latencyMs"`
	// GPUMemory is the GPU memory one instance needs (a quantity).
	//
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|k|M|G|T)?$`
	GPUMemory string `json:"gpuMemory"`
	// CPU is the instance container's CPU request (a quantity).
	CPU string `json:"cpu,omitempty"`
	// Memory is the instance container's memory request (a quantity).
	Memory string `json:"memory,omitempty"`
	// LaunchSeconds is O_i: the time from creating an instance to serving,
	// seconds.
	//
	// +kubebuilder:validation:Minimum=0
	LaunchSeconds float64 `json:"launchSeconds,omitempty"`
	// PriceUSDPerHour is C_i, USD/h; when empty the scaler's GPU catalog is
	// used.
	//
	// +kubebuilder:validation:Minimum=0
	PriceUSDPerHour float64 `json:"priceUSDPerHour,omitempty"`
}

// Scaling holds the scaler's knobs for one service (HetSev 4.1).
//
// +kubebuilder:validation:XValidation:rule="!has(self.maxReplicas) || self.maxReplicas == 0 || self.maxReplicas >= (has(self.minReplicas) ? self.minReplicas : 1)",message="maxReplicas must be 0 (no cap) or at least minReplicas (default 1)"
type Scaling struct {
	// SaturationThreshold: scale out when W / sum T_i N_i stays above it
	// (default 0.8, HetSev 4.1).
	//
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	SaturationThreshold float64 `json:"saturationThreshold,omitempty"`
	// IntervalSeconds between decisions (default 15).
	//
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	IntervalSeconds float64 `json:"intervalSeconds,omitempty"`
	// ScaleOutPeriodSeconds the saturation must stay above the threshold
	// before scaling out (default 30).
	//
	// +kubebuilder:validation:Minimum=0
	ScaleOutPeriodSeconds *float64 `json:"scaleOutPeriodSeconds,omitempty"`
	// ScaleInIntervalSeconds between two scale-ins (default 60).
	//
	// +kubebuilder:validation:Minimum=0
	ScaleInIntervalSeconds float64 `json:"scaleInIntervalSeconds,omitempty"`
	// ScaleInCoolDownSeconds after a scale-out before any scale-in
	// (default 300).
	//
	// +kubebuilder:validation:Minimum=0
	ScaleInCoolDownSeconds float64 `json:"scaleInCoolDownSeconds,omitempty"`
	// ScaleInHysteresis: scale in only when the load fits under
	// saturationThreshold minus this margin without one instance (default
	// 0.1; 0 is the paper's rule).
	//
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	ScaleInHysteresis *float64 `json:"scaleInHysteresis,omitempty"`
	// Lambda weighs launch latency against cost, per second (default 0.01).
	//
	// +kubebuilder:validation:Minimum=0
	Lambda *float64 `json:"lambda,omitempty"`
	// Solver computes the amount of a scaling action: "exact" (the ILP of
	// HetSev 4.1 solved exactly) or "heuristic" (the paper's greedy
	// selection); empty uses the scaler's --solver.
	//
	// +kubebuilder:validation:Enum=exact;heuristic
	Solver string `json:"solver,omitempty"`
	// MinReplicas over all GPU types (default 1: never zero).
	//
	// +kubebuilder:validation:Minimum=1
	MinReplicas int `json:"minReplicas,omitempty"`
	// MaxReplicas over all GPU types (0: no cap).
	//
	// +kubebuilder:validation:Minimum=0
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
