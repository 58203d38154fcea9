package v1alpha1

// Well-known names of the hetsev.io API: every annotation, label and name
// that more than one hetsev program reads or writes is defined here, once.
const (
	// GroupName is hetsev's API group.
	GroupName = "hetsev.io"

	// SystemNamespace is the namespace hetsev's programs and their objects
	// (leases, the webhook's Secret) live in by default.
	SystemNamespace = "hetsev-system"

	// SchedulerName is hetsev-scheduler's profile name; pods opt in with
	// spec.schedulerName set to it.
	SchedulerName = "hetsev-scheduler"
	// ScalerName is hetsev-scaler's name: its leader-election Lease (in
	// --leader-elect-namespace, named in its RBAC) and the source of the
	// Events it records.
	ScalerName = "hetsev-scaler"

	// AnnotationModel names the model a pod serves (no "/":
	// gpuinventory.CheckModel). Identical models are those with the same
	// model in the same namespace, or cluster-wide with
	// AnnotationModelScope "cluster"; two pods of one identical model
	// never share a GPU (HetSev 4.2 anti-affinity, gpuinventory.Demand.
	// Identity).
	AnnotationModel = GroupName + "/model"
	// AnnotationModelScope, "cluster" (ModelScopeClusterValue), makes a
	// pod's hetsev.io/model one identity cluster-wide for the
	// anti-affinity. Absent (or any other value): the identity is the
	// pod's namespace and model, so models of one name in two namespaces
	// (two teams' "resnet50") may share a GPU. Cluster-wide pods keep
	// apart from the cluster-wide pods of their model only: a namespaced
	// pod of the same name is another identity. Fixed once the pod exists
	// (the admission policy), like the model.
	AnnotationModelScope = GroupName + "/model-scope"
	// ModelScopeClusterValue is AnnotationModelScope's cluster-wide value.
	ModelScopeClusterValue = "cluster"
	// AnnotationGPUMemory is the GPU memory one instance needs, as a
	// resource.Quantity ("3Gi", "2048Mi").
	AnnotationGPUMemory = GroupName + "/gpu-memory"
	// AnnotationBusyShare is the fraction of time, in (0, 1], one instance
	// is expected to keep its GPU busy at its service's target load, as a
	// decimal ("0.35"). Absent means unknown, counted as 1 (busy all the
	// time, the worst case). hetsev-scheduler refuses a GPU whose summed
	// busy share would exceed its cap, and predicts co-location latency
	// inflation with it.
	AnnotationBusyShare = GroupName + "/busy-share"
	// AnnotationMaxInflation is the latency inflation, a decimal >= 1
	// ("1.8"), one instance's SLO allows beside its GPU neighbours: its
	// RT_max over its solo latency. hetsev-scheduler refuses a GPU where the
	// co-location model predicts a larger inflation for it, or for a
	// neighbour a larger one than the neighbour allows. Absent: no check.
	AnnotationMaxInflation = GroupName + "/max-inflation"
	// AnnotationMaxBatchSize is the largest batch, a positive integer
	// ("1"), the pod's model server may form: set by hetsev-scaler on a
	// flavor column that runs below spec.batchSize (spec.profiles[].
	// smallBatches), and passed to the server as EnvMaxBatchSize. Absent:
	// spec.batchSize.
	AnnotationMaxBatchSize = GroupName + "/max-batch-size"
	// EnvMaxBatchSize is the variable hetsev-scaler sets on the model
	// server's container (the one spec.profiles[].overrides names, else
	// the first) of a pod with AnnotationMaxBatchSize, to the same value;
	// the model server must cap its batches at it. Triton and TF Serving
	// read max_batch_size from their model configuration, not from the
	// environment: their entrypoint must write it there.
	EnvMaxBatchSize = "HETSEV_MAX_BATCH_SIZE"
	// AnnotationGPUIndex is the index, on the pod's node, of the GPU that
	// hetsev-scheduler chose; written before binding, read through the
	// downward API into NVIDIA_VISIBLE_DEVICES, and used by the metrics
	// adapter to join DCGM series (per GPU) to pods (in GPU mode dra, a
	// pod without it is joined through its ResourceClaims).
	AnnotationGPUIndex = GroupName + "/gpu-index"
	// AnnotationGPUUUID is the UUID of the GPU hetsev-scheduler chose in
	// GPU mode dra (the device's uuid attribute, "GPU-..."), written in the
	// binding beside AnnotationGPUIndex: dcgm-exporter labels its series
	// by UUID, which names the GPU whatever order a node lists its GPUs
	// in, so the metrics adapter joins by it first.
	AnnotationGPUUUID = GroupName + "/gpu-uuid"
	// AnnotationPredictedInflation is the latency inflation, a decimal >= 1
	// with two digits ("1.18"), that hetsev-scheduler's co-location model
	// predicted for the pod on its GPU beside the neighbours it had at
	// placement: the factor its rating and its inflation-limit check use
	// (its batch latency over its solo batch latency). "1.00" on a GPU of
	// its own. Written by hetsev-scheduler in the binding, with
	// AnnotationGPUIndex; informational, read by nothing that decides.
	AnnotationPredictedInflation = GroupName + "/predicted-inflation"
	// AnnotationGPUNeighbours lists the instances of the pod's own
	// namespace that shared its GPU at placement: "ns/name model
	// busy-share" entries joined by ", " ("default/r0 resnet50 0.3,
	// default/s1 ssd 1"), sorted by name, at most MaxListedNeighbours of
	// them and then "+N more"; a model is "-" when the pod names none, and
	// a busy share is the one the model assumed (1 when the pod declares
	// none). Instances of other namespaces are only counted, last ("+2 in
	// other namespaces"): a tenant does not learn another's pod names or
	// models. Empty on a GPU of its own. Written by hetsev-scheduler in the binding, with
	// AnnotationGPUIndex; not updated when neighbours come or go.
	AnnotationGPUNeighbours = GroupName + "/gpu-neighbours"
	// MaxListedNeighbours bounds AnnotationGPUNeighbours' entries.
	MaxListedNeighbours = 8

	// AnnotationTemplateHash is the hash of the pod template hetsev-scaler
	// last wrote into a Deployment it keeps.
	AnnotationTemplateHash = GroupName + "/template-hash"

	// LabelModelService names a pod's (and a Deployment's) ModelService;
	// hetsev-scaler writes it on every Deployment it keeps and its pods.
	LabelModelService = GroupName + "/modelservice"
	// LabelGPUType names the GPU type (catalog name, e.g. "t4") a Deployment
	// kept by hetsev-scaler serves on, followed for the Deployment of a
	// light instance flavor by its busy share (e.g. "t4-busy0.25"), so that
	// no two Deployments of a ModelService select each other's pods.
	LabelGPUType = GroupName + "/gpu-type"

	// LabelGPUPool and TaintGPUPool mark the nodes whose GPUs hetsev
	// manages, its GPU pool: the label LabelGPUPool=GPUPoolValue, and the
	// taint LabelGPUPool=GPUPoolValue:NoSchedule that keeps other pods (and
	// the default scheduler's nvidia.com/gpu pods) off them. With
	// HetsevGPUShare's arg gpuPool on, hetsev-scheduler places hetsev pods
	// only on labelled nodes, and hetsev-scaler and the webhook give the
	// pods they make or opt in a toleration of the taint. Operators label
	// and taint the nodes (docs/gpu-modes.md, GPU pool).
	LabelGPUPool = GroupName + "/gpu-pool"
	// TaintGPUPool is the pool taint's key (LabelGPUPool's name).
	TaintGPUPool = LabelGPUPool
	// GPUPoolValue is the pool label's and taint's value.
	GPUPoolValue = "true"

	// GPU modes: how a hetsev pod reaches its GPU, chosen per cluster
	// (hetsev-scheduler's HetsevGPUShare arg gpuMode, hetsev-scaler's,
	// hetsev-metrics-adapter's and the demo's --gpu-mode). In GPUModeAnnotations the scheduler writes
	// AnnotationGPUIndex and the container gets NVIDIA_VISIBLE_DEVICES from
	// it; in GPUModeDRA the pod carries a ResourceClaim of DeviceClassName
	// that hetsev-scheduler allocates (GPU memory as consumable capacity),
	// and the DRA driver injects the device through CDI.
	GPUModeAnnotations = "annotations"
	GPUModeDRA         = "dra"

	// DRADriver is the DRA driver that publishes GPUs in ResourceSlices:
	// NVIDIA's DRA driver for GPUs.
	DRADriver = "gpu.nvidia.com"
	// DRADriverHAMi is HAMi's DRA driver (Project-HAMi/k8s-dra-driver).
	DRADriverHAMi = "hami-core-gpu.project-hami.io"
	// DRAProfileNVIDIA and DRAProfileHAMi name the DRA driver profiles
	// (pkg/dra.Profile): DRADriver's and DRADriverHAMi's.
	DRAProfileNVIDIA = "nvidia"
	DRAProfileHAMi   = "hami"
	// DeviceClassName is hetsev's DeviceClass: GPUs of DRADriver that allow
	// multiple allocations (consumable capacity, KEP-5075).
	DeviceClassName = "shared-gpu.hetsev.io"
	// DRAMemoryCapacity is the device capacity, in bytes, that a hetsev
	// claim consumes: the GPU memory one instance needs.
	DRAMemoryCapacity = "memory"
	// PodClaimName is the name of a hetsev pod's entry in
	// spec.resourceClaims and of the container claim that refers to it.
	PodClaimName = "gpu"
	// ClaimRequestName is the name of the one request in a hetsev
	// ResourceClaim.
	ClaimRequestName = "gpu"
)

// GPUModes are the GPU modes, the default first.
func GPUModes() []string { return []string{GPUModeAnnotations, GPUModeDRA} }

// IsGPUMode reports whether mode is one of GPUModes.
func IsGPUMode(mode string) bool { return mode == GPUModeAnnotations || mode == GPUModeDRA }
