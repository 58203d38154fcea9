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
// Its scale subresource (`kubectl scale`, a HorizontalPodAutoscaler)
// works on the total of replicas over all GPU types, since a ModelService
// has no one replicas field: spec.replicas is spec.scaling.minReplicas, the
// floor hetsev-scaler never scales in below (it still scales out above it,
// and picks the GPU types itself), status.replicas is status.totalReplicas
// and the selector (status.selector) matches the pods of every GPU type.
// So `kubectl scale --replicas=N` means "at least N instances", an HPA on
// a ModelService raises or lowers that floor, and the CRD's rules refuse
// N < 1 or N above a spec.scaling.maxReplicas cap.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=msvc
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.scaling.minReplicas,statuspath=.status.totalReplicas,selectorpath=.status.selector
// +kubebuilder:printcolumn:name="Model",type=string,JSONPath=`.spec.model`
// +kubebuilder:printcolumn:name="Replicas",type=string,JSONPath=`.status.replicas`,description="Desired replicas per GPU type"
// +kubebuilder:printcolumn:name="Total",type=integer,JSONPath=`.status.totalReplicas`,priority=1
// +kubebuilder:printcolumn:name="RT_max(ms)",type=number,JSONPath=`.spec.slo.responseTimeMs`,priority=1
// +kubebuilder:printcolumn:name="W(req/s)",type=string,JSONPath=`.status.arrivalRate`
// +kubebuilder:printcolumn:name="Saturation",type=string,JSONPath=`.status.saturation`
// +kubebuilder:printcolumn:name="Attainment",type=string,JSONPath=`.status.attainment`,description="Fraction of requests within RT_max over the rate window"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ModelService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ModelServiceSpec `json:"spec"`
	// Status is written by hetsev-scaler only.
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
	// Model is the model's name (hetsev.io/model on its pods). Identical
	// models are those with the same model in the same namespace, or
	// cluster-wide with modelScope Cluster: two instances of one never
	// share a GPU. A label value's syntax (letters, digits, '-', '_', '.';
	// no "/"), so that "a/resnet50" cannot pose as namespace a's resnet50.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	Model string `json:"model"`
	// SLO: at least ServiceLevel of requests within ResponseTimeMs.
	SLO SLO `json:"slo"`
	// BatchSize is the server's maximum batch (HetSev 6: 8 for ResNet-50,
	// 4 for SSD).
	//
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4096
	BatchSize int `json:"batchSize"`
	// MaxBatchDelayMs is how long, in ms, the model server waits for more
	// requests to join a batch when the GPU is idle (Triton's
	// max_queue_delay_microseconds / 1000, TorchServe's maxBatchDelay,
	// KServe's batcher maxLatency). The SLO latency model adds up to this
	// to a request's response time. 0 (the default, Triton's): the server
	// runs what waits at once.
	//
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=60000
	// +optional
	MaxBatchDelayMs float64 `json:"maxBatchDelayMs,omitempty"`
	// Profiles lists the GPU types this model may run on, with their offline
	// profile; one Deployment is kept per entry and flavor. At most 8: with
	// at most 8 flavors each (MaxFlavors) a decision's columns stay within
	// status's 64 (Decision.Types).
	//
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=gpuType
	Profiles []GPUProfile `json:"profiles"`
	// Scaling holds the scaler's knobs.
	//
	// +kubebuilder:default={}
	Scaling Scaling `json:"scaling,omitempty"`
	// ServicePort is the model server's port; the scaler creates a
	// Service of the ModelService's name on it, which the VirtualService
	// routes (default 8000, Triton's HTTP port).
	//
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=8000
	ServicePort int32 `json:"servicePort,omitempty"`
	// Protocol is the model server's protocol on servicePort: "http"
	// (default; HTTP/1.1 or HTTP/2, e.g. Triton's HTTP/REST port 8000) or
	// "grpc" (e.g. Triton's gRPC port 8001). It names the Service's port
	// and sets its appProtocol, by which Istio picks the protocol of the
	// port's traffic.
	//
	// +kubebuilder:validation:Enum=http;grpc
	// +kubebuilder:default=http
	Protocol string `json:"protocol,omitempty"`
	// ModelScope is where the model's identity (hetsev.io/model) holds for
	// hetsev-scheduler's anti-affinity: "Namespace" (default) keeps two
	// instances of the model in the ModelService's namespace off one GPU,
	// and lets a model of the same name in another namespace share it;
	// "Cluster" keeps every instance of the name cluster-wide apart (the
	// scaler annotates its pods hetsev.io/model-scope=cluster).
	//
	// +kubebuilder:validation:Enum=Namespace;Cluster
	// +kubebuilder:default=Namespace
	ModelScope string `json:"modelScope,omitempty"`
	// Template is the pod template of the model-server instances; the scaler
	// adds the GPU type's nodeSelector, schedulerName, hetsev annotations and
	// NVIDIA_VISIBLE_DEVICES. Its schema is the PodTemplateSpec's: a field
	// unknown to it (a typo, "containerz") is rejected with strict field
	// validation (kubectl's default) and pruned otherwise; the Deployments'
	// own validation checks the values.
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
	// Overrides change the pod template for this GPU type's Deployments
	// (its own and those of its light flavors): a model server built for
	// the type, its arguments, variables and resources.
	Overrides *TemplateOverrides `json:"overrides,omitempty"`
	// SmallBatches are the same measurement at batch sizes below
	// spec.batchSize, ascending. With flavors on, a flavor (the type's own
	// column included) whose batch of spec.batchSize would not fit RT_max
	// (3 L_i / f) runs at the largest of them that does; its pods get
	// EnvMaxBatchSize, which the model server must honour.
	//
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	SmallBatches []BatchPoint `json:"smallBatches,omitempty"`
}

// BatchPoint is one measured batch size of a GPU profile.
type BatchPoint struct {
	// BatchSize is the largest batch the server forms, requests.
	//
	// +kubebuilder:validation:Minimum=1
	BatchSize int `json:"batchSize"`
	// ThroughputRPS is one instance's maximum throughput at BatchSize,
	// requests/s.
	//
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	ThroughputRPS float64 `json:"throughputRPS"`
	// LatencyMs is one batch's latency at BatchSize when running alone, ms.
	//
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	LatencyMs float64 `json:"latencyMs"`
}

// TemplateOverrides change one container of spec.template for one GPU
// type; what they leave unset stays as the template has it.
type TemplateOverrides struct {
	// Container names the container they change (the model server);
	// empty: the template's first container. A name the template lacks
	// makes the spec invalid (condition Ready False, reason InvalidSpec)
	// and changes nothing.
	Container string `json:"container,omitempty"`
	// Image replaces the container's image.
	Image string `json:"image,omitempty"`
	// Args replace the container's args when not empty.
	Args []string `json:"args,omitempty"`
	// Env is merged by name over the container's env: a variable of the
	// same name is replaced in place, others are appended.
	//
	// +listType=map
	// +listMapKey=name
	Env []v1.EnvVar `json:"env,omitempty"`
	// Resources are merged by resource name over the container's requests
	// and limits; they are applied after the profile's cpu and memory. The
	// scaler's free-slot count reads the container's CPU and memory
	// requests they give.
	Resources *v1.ResourceRequirements `json:"resources,omitempty"`
}

// Scaling holds the scaler's knobs for one service (HetSev 4.1).
//
// +kubebuilder:validation:XValidation:rule="!has(self.maxReplicas) || self.maxReplicas == 0 || self.maxReplicas >= (has(self.minReplicas) ? self.minReplicas : 1)",message="maxReplicas must be 0 (no cap) or at least minReplicas (default 1)"
// +kubebuilder:validation:XValidation:rule="!has(self.scaleInHysteresis) || self.scaleInHysteresis < (has(self.saturationThreshold) ? self.saturationThreshold : 0.8)",message="scaleInHysteresis must be below saturationThreshold (default 0.8)"
type Scaling struct {
	// SaturationThreshold: scale out when W / sum T_i N_i stays above it.
	// Unset: 0.8 (HetSev 4.1), or, with hetsev-scaler's
	// --model-thresholds, the highest threshold at which the SLO latency
	// model meets RT_max at SL_min on every GPU type of the service.
	//
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	SaturationThreshold float64 `json:"saturationThreshold,omitempty"`
	// IntervalSeconds between decisions (default 5, at least 0.1: a
	// shorter interval would load the API server with a status write per
	// decision, and below 1 ns it would round to no interval at all;
	// `make demo` runs its ModelServices on a clock 26x faster, at 0.57 s).
	// The launch-time forecast of a scale-out fits the rise of the arrival
	// rate to the rates of the last 15 s and one interval.
	//
	// +kubebuilder:validation:Minimum=0.1
	// +kubebuilder:default=5
	IntervalSeconds float64 `json:"intervalSeconds,omitempty"`
	// ScaleOutPeriodSeconds the saturation must stay above the threshold
	// before scaling out (default 30).
	//
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=30
	ScaleOutPeriodSeconds *float64 `json:"scaleOutPeriodSeconds,omitempty"`
	// ScaleInIntervalSeconds between two scale-ins (default 60).
	//
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=60
	ScaleInIntervalSeconds float64 `json:"scaleInIntervalSeconds,omitempty"`
	// ScaleInCoolDownSeconds after a scale-out before any scale-in
	// (default 300). Also the scale-in stabilization window: one scale-in
	// removes only what the highest arrival rate of this window leaves
	// spare; below that, one instance per scaleInIntervalSeconds.
	//
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=300
	ScaleInCoolDownSeconds float64 `json:"scaleInCoolDownSeconds,omitempty"`
	// ScaleInHysteresis: scale in only when the load fits under
	// saturationThreshold minus this margin without one instance (default
	// 0, the paper's rule).
	//
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	// +kubebuilder:default=0
	ScaleInHysteresis *float64 `json:"scaleInHysteresis,omitempty"`
	// Lambda weighs launch latency against cost, per second (default 0.01).
	//
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=0.01
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
	// +kubebuilder:default=1
	MinReplicas int `json:"minReplicas,omitempty"`
	// MaxReplicas over all GPU types and flavors (0: the scaler's
	// --max-replicas ceiling, 100 by default; the ceiling also bounds a
	// larger value).
	//
	// +kubebuilder:validation:Minimum=0
	MaxReplicas int `json:"maxReplicas,omitempty"`
	// BusyShare, in (0, 1], is the share of time each instance may keep its
	// GPU busy, so that others can share the GPU's time. The scaler counts
	// an instance at the arrival rate that keeps it busy that share
	// (busyShare / L_i requests/s, dynamic batching without delay, at most
	// T_i) and declares it in hetsev.io/busy-share, which hetsev-scheduler
	// caps per GPU. Unset: the busy share at the saturation threshold, about
	// 1 for a batching server (a GPU's time of its own when busy).
	//
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	BusyShare float64 `json:"busyShare,omitempty"`
	// Flavors are the busy shares, comma-separated and ascending in
	// (0, 1], that the scaler may run instances of on each GPU type, e.g.
	// "0.1,0.25,0.5,1". An instance of a flavor f below 1 declares busy
	// share f, shares a GPU in use and is counted at f x T_i requests/s,
	// a batch taking L_i / f, for f times the GPU's price; it is offered
	// only where 3 L_i / f <= RT_max, L_i at spec.batchSize or at the
	// largest of spec.profiles[].smallBatches that fits (its pods then
	// carry hetsev.io/max-batch-size). Each such flavor has a Deployment of
	// its own. The decision runs light instances while the
	// service is quiet and whole GPUs when it is busy. With busyShare set,
	// flavors above it are not offered and busyShare is the largest.
	// Empty: the scaler's --flavors; "1": whole GPUs only. At most 8
	// flavors (MaxFlavors): each is a Deployment per GPU type and a column
	// of status.
	//
	// +kubebuilder:validation:Pattern=`^[0-9.]+(,[0-9.]+){0,7}$`
	Flavors string `json:"flavors,omitempty"`
}

// ModelServiceStatus is what the scaler observed and decided. The scaler
// writes it when something in it changed: at once, or, when only the
// measured fields (measuredAt and what it dates, latencyMeasuredAt and
// what it dates, rateHistory) changed, at most every --status-refresh.
type ModelServiceStatus struct {
	// ObservedGeneration is the metadata.generation of the spec this status
	// was computed from.
	//
	// +kubebuilder:validation:Minimum=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Replicas per GPU type (the Deployments' desired replicas), and per
	// light instance flavor of one (e.g. "T4-busy0.25", spec.scaling.flavors).
	Replicas map[string]int32 `json:"replicas,omitempty"`
	// TotalReplicas is the sum of Replicas over the GPU types: the scale
	// subresource's status.replicas.
	//
	// +kubebuilder:validation:Minimum=0
	TotalReplicas int32 `json:"totalReplicas,omitempty"`
	// CostUSDPerHour is what the desired replicas cost per hour, USD/h as a
	// decimal string, at the prices the decision plans with: each GPU
	// type's (spec.profiles[].priceUSDPerHour or the scaler's catalog), a
	// light flavor f at f times it. A GPU is billed whole while it hosts
	// anything, so this is a lower bound of the GPU bill. The gauge
	// hetsev_scaler_cost_usd_per_hour has it per GPU type.
	//
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	CostUSDPerHour string `json:"costUSDPerHour,omitempty"`
	// Selector matches the pods of every GPU type of the ModelService
	// (hetsev.io/modelservice=<name>): the scale subresource's selector.
	Selector string `json:"selector,omitempty"`
	// MeasuredAt is when arrivalRate and saturation were measured (the
	// decision that read them). While nothing else in the status changes,
	// the scaler rewrites the measured fields at most every
	// --status-refresh (default 30 s), so they can be that much older than
	// the last decision.
	MeasuredAt *metav1.Time `json:"measuredAt,omitempty"`
	// ArrivalRate is W, requests/s, as a decimal string.
	//
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	ArrivalRate string `json:"arrivalRate,omitempty"`
	// Saturation is W / sum T_i N_i, as a decimal string ("+Inf" when W > 0
	// and no instance serves).
	//
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?|\+Inf)$`
	Saturation string `json:"saturation,omitempty"`
	// LatencyMeasuredAt is when latencyP98Ms, attainment and
	// latencyAtServiceLevelMs were last measured; they are kept as they were
	// while the adapter gives none, so this can be older than measuredAt.
	LatencyMeasuredAt *metav1.Time `json:"latencyMeasuredAt,omitempty"`
	// LatencyP98Ms is the highest p98 latency among the Deployments, ms, as
	// a decimal string. Kept as it was while the adapter gives none (no
	// requests in the window).
	//
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	LatencyP98Ms string `json:"latencyP98Ms,omitempty"`
	// Attainment is the fraction of requests answered within RT_max
	// (spec.slo.responseTimeMs) over the metrics adapter's rate window, as
	// a decimal string with 4 decimals: the Deployments' fractions
	// (request_slo_attainment{le=RT_max}) weighted by their requests/s.
	// It is an estimate, interpolated inside a histogram bucket, when
	// RT_max is no bucket bound. Kept as it was while the adapter gives
	// none (no requests in the window).
	//
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	Attainment string `json:"attainment,omitempty"`
	// LatencyPercentile names the percentile of latencyAtServiceLevelMs:
	// spec.slo.serviceLevel as a percentile ("p98"; "p99.9" for a service
	// level of 0.999, and of 1, which is read as 0.999).
	//
	// +kubebuilder:validation:Pattern=`^p[0-9]+(\.[0-9]+)?$`
	LatencyPercentile string `json:"latencyPercentile,omitempty"`
	// LatencyAtServiceLevelMs is the highest latency at latencyPercentile
	// among the Deployments (request_latency_ms{quantile=SL_min}), ms, as a
	// decimal string; the service meets its SLO while it is at most
	// RT_max. Kept as it was while the adapter gives none.
	//
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	LatencyAtServiceLevelMs string `json:"latencyAtServiceLevelMs,omitempty"`
	// TrafficWeights is the percent of requests routed to each GPU type
	// and light instance flavor (VirtualService weights, proportional to
	// the capacity of their instances: T_i N_i, or f T_i N for a flavor
	// f).
	TrafficWeights map[string]int32 `json:"trafficWeights,omitempty"`
	// LastDecision is the scaler's latest decision that differed from the
	// one before it (another action, or one that changed replicas); a
	// decision repeating the previous no-op is counted in the scaler's
	// hetsev_scaler_decisions_total, not written here.
	LastDecision *Decision `json:"lastDecision,omitempty"`
	// Decisions are the scaler's latest decisions that differed from the
	// one before them (the rule of lastDecision), oldest first, newest
	// last (the newest is lastDecision); at most hetsev-scaler's
	// --decision-history of them (default 10), none when it is 0.
	//
	// +kubebuilder:validation:MaxItems=100
	Decisions []Decision `json:"decisions,omitempty"`
	// ScalingState is the timing state of the scaling triggers (HetSev
	// 4.1's scale-out period, scale-in interval and cool-down) and the
	// replacement in flight, kept here so that a new hetsev-scaler leader
	// honours the cool-down its predecessor started and finishes its
	// replacement.
	ScalingState *ScalingState `json:"scalingState,omitempty"`
	// RateHistory is the arrival-rate history the scaling rules read, kept
	// here so that a new hetsev-scaler leader forecasts and stabilizes
	// scale-in as its predecessor would have; written with the measured
	// fields (measuredAt).
	RateHistory *RateHistory `json:"rateHistory,omitempty"`
	// Conditions: Ready, MetricsUnavailable, NoFeasibleType, TrafficSplit,
	// NoCapacity (True while a GPU type has replicas the scheduler found no
	// room for), Replacement (True while a replacement is in flight).
	//
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ScalingState is when the triggers of the scaling decision last fired;
// times are kept to the second.
type ScalingState struct {
	// AboveThresholdSince is when the saturation went above the threshold;
	// absent while it is not above.
	AboveThresholdSince *metav1.Time `json:"aboveThresholdSince,omitempty"`
	// LastScaleOut is the time of the latest scale-out; the scale-in
	// cool-down runs from it.
	LastScaleOut *metav1.Time `json:"lastScaleOut,omitempty"`
	// LastScaleIn is the time of the latest scale-in; the scale-in interval
	// runs from it.
	LastScaleIn *metav1.Time `json:"lastScaleIn,omitempty"`
	// LastReplacement is when the latest make-before-break replacement
	// ended; the replacement interval (--replacement-interval) runs from
	// it.
	LastReplacement *metav1.Time `json:"lastReplacement,omitempty"`
	// Replacement is the make-before-break replacement in flight (its phase
	// empty); absent when none. Kept here as well as in the decision that
	// started it, which a later decision (a Hold) replaces as lastDecision.
	Replacement *Replacement `json:"replacement,omitempty"`
}

// RateHistory is what the scaler remembers of a ModelService's arrival
// rate.
type RateHistory struct {
	// Rates are the arrival rates observed that the launch-time forecast
	// (its span and one decision interval) and the stabilized scale-in
	// (the highest rate of its window) can still read, oldest first: a rate
	// that a later, higher one outlasts in the window is left out.
	//
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=512
	Rates []RateSample `json:"rates,omitempty"`
	// MinutesFrom is the start of the first minute of minutePeaks.
	MinutesFrom *metav1.Time `json:"minutesFrom,omitempty"`
	// MinutePeaks is the highest arrival rate of each minute from
	// minutesFrom, requests/s as comma-separated decimals, empty for a
	// minute without an observation: the seasonal forecast's history (at
	// most 180 minutes), kept only while it is on.
	//
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^[0-9.,]*$`
	MinutePeaks string `json:"minutePeaks,omitempty"`
}

// RateSample is one observed arrival rate.
type RateSample struct {
	// Time of the observation.
	Time metav1.MicroTime `json:"time"`
	// RPS is W, requests/s, as a decimal string.
	//
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	RPS string `json:"rps"`
	// LowerBound is true when W was only a lower bound (a serving pod
	// unmeasured).
	LowerBound bool `json:"lowerBound,omitempty"`
}

// Decision records one scaling decision.
type Decision struct {
	// Time the decision was made.
	Time metav1.Time `json:"time"`
	// Action is the decision's kind: Hold when the arrival rate could not
	// be read, Replace for a step of a make-before-break replacement.
	//
	// +kubebuilder:validation:Enum=None;ScaleOut;ScaleIn;NoFeasibleType;Hold;Replace
	Action string `json:"action"`
	// Delta is the change of replicas per GPU type.
	Delta map[string]int32 `json:"delta,omitempty"`
	// Reason explains the decision.
	Reason string `json:"reason"`
	// Replacement is the make-before-break replacement in flight at this
	// decision, or the one it ended; absent when none.
	Replacement *Replacement `json:"replacement,omitempty"`
	// Types is what the decision saw and left per column (a GPU type, or a
	// light flavor of one, as status.replicas names it).
	//
	// +listType=map
	// +listMapKey=gpuType
	// +kubebuilder:validation:MaxItems=64
	Types []TypeDecision `json:"types,omitempty"`
	// Objective is the HetSev 4.1 objective of the action, USD/h as a
	// decimal string (negative for a scale-in: the cost saved); absent when
	// the decision changed nothing.
	//
	// +kubebuilder:validation:Pattern=`^-?[0-9]+(\.[0-9]+)?$`
	Objective string `json:"objective,omitempty"`
	// Alternative is the best scale-out the solver considered and did not
	// choose: the heuristic's best other single-type choice, or, for the
	// exact solver, also the optimum without one of the chosen types;
	// absent when there was none.
	Alternative *DecisionAlternative `json:"alternative,omitempty"`
}

// TypeDecision is one column of a decision: a GPU type, or a light flavor
// of one.
type TypeDecision struct {
	// GPUType is the column, as status.replicas names it, e.g. "T4" or
	// "T4-busy0.25".
	GPUType string `json:"gpuType"`
	// Replicas is the Deployment's desired replicas after the decision.
	//
	// +kubebuilder:validation:Minimum=0
	Replicas int32 `json:"replicas"`
	// CapacityRPS is the capacity the decision plans with on this column,
	// T_i (N_i + X_i) with T_i over the co-location inflation the scaler
	// applies and N_i the replicas it counts (unschedulable and
	// not-starting ones left out), requests/s as a decimal string.
	//
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	CapacityRPS string `json:"capacityRPS,omitempty"`
	// FreeSlots is how many more instances of this service fit on free
	// GPUs of the type at the decision (HetSev 4.1 constraint 2, by
	// hetsev-scheduler's admission rule); 0 when the type is full.
	//
	// +kubebuilder:validation:Minimum=0
	FreeSlots int32 `json:"freeSlots"`
	// CostRatio is the column's price per request/s, C_i / T_i, over the
	// lowest of the decision's columns, as a decimal string ("1.00" for
	// the cheapest, "7.40" for one that costs 7.4 times as much per
	// request).
	//
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	CostRatio string `json:"costRatio,omitempty"`
}

// DecisionAlternative is a scale-out a decision's solver considered and
// rejected.
type DecisionAlternative struct {
	// Delta is the replicas it would have added per column.
	Delta map[string]int32 `json:"delta,omitempty"`
	// Objective is its HetSev 4.1 objective, USD/h as a decimal string;
	// never below the decision's objective.
	//
	// +kubebuilder:validation:Pattern=`^-?[0-9]+(\.[0-9]+)?$`
	Objective string `json:"objective"`
	// Why it lost, e.g. "V100-32GB costs 7.4x per request (objective 9.36
	// > 1.89 USD/h)".
	Why string `json:"why,omitempty"`
}

// Replacement is a make-before-break replacement of instances of one
// column (a GPU type, or a light flavor of one) by instances of another:
// the new replicas are added first, the old ones removed only as new ones
// are Ready and weighted in the traffic split.
type Replacement struct {
	// From is the column whose replicas are replaced, e.g. "V100-32GB".
	// From equal to To is a consolidation move: a replica of the column
	// alone on its GPU replaced by a new one on a GPU in use.
	From string `json:"from"`
	// To is the column of the new replicas, e.g. "T4".
	To string `json:"to"`
	// Add is how many replicas of To the replacement added.
	//
	// +kubebuilder:validation:Minimum=0
	Add int32 `json:"add"`
	// Remove is how many replicas of From they replace; Removed of them
	// are gone.
	//
	// +kubebuilder:validation:Minimum=0
	Remove int32 `json:"remove"`
	// +kubebuilder:validation:Minimum=0
	Removed int32 `json:"removed,omitempty"`
	// ToBefore is To's replicas when it started: the replacement's are
	// those beyond it.
	//
	// +kubebuilder:validation:Minimum=0
	ToBefore int32 `json:"toBefore,omitempty"`
	// Started is when the replicas of To were added.
	Started metav1.Time `json:"started"`
	// FloorRPS is the least capacity of the ready replicas, requests/s as
	// a decimal string, that the replacement leaves while it runs: the
	// capacity before it within the scale-in cool-down or interval, else
	// the scale-in bar at the highest arrival rate of the stabilization
	// window; for a consolidation move, the forecast arrival rate over
	// the saturation threshold (at most the capacity before it).
	//
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	FloorRPS string `json:"floorRPS,omitempty"`
	// Phase is what the decision did to it: ReplacementStarted,
	// ReplacementProgressed, ReplacementCompleted, ReplacementTimedOut or
	// ReplacementAbandoned; empty while it waits.
	Phase string `json:"phase,omitempty"`
}

// Protocols of spec.protocol.
const (
	ProtocolHTTP = "http"
	ProtocolGRPC = "grpc"
)

// Model scopes of spec.modelScope.
const (
	ModelScopeNamespace = "Namespace"
	ModelScopeCluster   = "Cluster"
)

// Condition types of status.conditions.
const (
	ConditionReady              = "Ready"
	ConditionMetricsUnavailable = "MetricsUnavailable"
	ConditionNoFeasibleType     = "NoFeasibleType"
	ConditionTrafficSplit       = "TrafficSplit"
	// ConditionNoCapacity is True while a GPU type has replicas the
	// scheduler found no room for (PodScheduled False, reason
	// Unschedulable), naming the types and the scheduler's message.
	ConditionNoCapacity = "NoCapacity"
	// ConditionNotStarting is True while a GPU type has replicas bound to
	// a node that cannot start: a container waiting with an image, config
	// or crash reason (ErrImageNeverPull, CrashLoopBackOff, ...), or not
	// Ready 2 x launchSeconds + 30 s after the pod was scheduled. The
	// reason is the first such pod's waiting reason (or
	// NotReadyAfterLaunch), the message names the types, pods and nodes.
	// Such replicas are not counted as capacity.
	ConditionNotStarting = "NotStarting"
	// ConditionReplacement is True while a make-before-break replacement
	// is in flight, False with the reason it ended (ReplacementCompleted,
	// ReplacementTimedOut, ReplacementAbandoned).
	ConditionReplacement = "Replacement"
	// ConditionDegraded is True while the ModelService's decisions fail
	// (an API error, a write the API server refuses), with the error; the
	// scaler retries with a backoff of at most 30 s. False once a decision
	// succeeds again.
	ConditionDegraded = "Degraded"
)
