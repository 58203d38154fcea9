package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// HetsevFairQueueArgs are the HetsevFairQueue plugin's arguments, e.g.
//
//	pluginConfig:
//	  - name: HetsevFairQueue
//	    args:
//	      k: 3
//	      beta: 16
//
// A zero or missing field takes its default (SetDefaults_HetsevFairQueueArgs).
type HetsevFairQueueArgs struct {
	metav1.TypeMeta `json:",inline"`

	// K is the number of classes k-means groups pending pods into, by GPU
	// memory and model (1..16; default DefaultFairQueueK).
	K int32 `json:"k,omitempty"`
	// Beta is the length of a round in pods (1..10000; default
	// DefaultFairQueueBeta): classes and their median waits are recomputed
	// every Beta pods taken from the queue.
	Beta int32 `json:"beta,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// HetsevGPUShareArgs are the HetsevGPUShare plugin's arguments, e.g.
//
//	pluginConfig:
//	  - name: HetsevGPUShare
//	    args:
//	      antiAffinity: Hard   # or Soft
//	      fit: WorstFit        # or BestFit
//	      interferenceWeight: 0.5
//	      interferenceModelFile: /etc/hetsev/interference.yaml  # default: fitted
//	      maxBusyShare: 1.0    # summed hetsev.io/busy-share per GPU; 0: no cap
//	      consolidate: true    # declared busy share: a GPU in use first
//	      gpuMode: annotations # or dra: allocate ResourceClaims
//	      gpuPool: true        # only nodes labelled hetsev.io/gpu-pool=true
//
// A missing field takes its default (SetDefaults_HetsevGPUShareArgs), which
// is the paper's behaviour except for interferenceWeight.
type HetsevGPUShareArgs struct {
	metav1.TypeMeta `json:",inline"`

	// AntiAffinity is Hard (default; never two instances of one model on a
	// GPU, HetSev 4.2) or Soft (only when no GPU without the model fits).
	AntiAffinity string `json:"antiAffinity,omitempty"`
	// Fit is WorstFit (default; the GPU with the most free GPU memory,
	// HetSev 4.2) or BestFit (the least free GPU memory that fits).
	Fit string `json:"fit,omitempty"`
	// InterferenceWeight (0..1, dimensionless; default
	// DefaultGPUShareInterferenceWeight) is the share of a GPU's rating that
	// comes from the predicted latency inflation (pkg/interference) rather
	// than from the fit; 0 is the paper's pure fit. A pointer, so an explicit
	// 0 is kept.
	InterferenceWeight *float64 `json:"interferenceWeight,omitempty"`
	// InterferenceModelFile is the path of a co-location model file
	// (pkg/interference ColocationFile, YAML or JSON: version
	// hetsev.io/interference/v1, the time-slicing and MPS coefficients and
	// an occupancy table) the rating predicts latency inflation with. Empty
	// (default) is the model fitted to the H100 measurements in
	// data/measurements (interference.FittedColocation).
	InterferenceModelFile string `json:"interferenceModelFile,omitempty"`
	// MaxBusyShare (dimensionless, >= 0; default DefaultGPUShareMaxBusyShare,
	// 1) is the most summed busy share (hetsev.io/busy-share, absent = 1)
	// the instances on one GPU may carry: a GPU is busy at most all the
	// time, and time-slicing does not raise summed throughput, so shares
	// summing past 1 queue. 0 is no cap (GPU memory alone decides, as
	// before busy shares). A pointer, so an explicit 0 is kept.
	MaxBusyShare *float64 `json:"maxBusyShare,omitempty"`
	// Consolidate (default DefaultGPUShareConsolidate, true) puts an
	// instance that declares hetsev.io/busy-share on a GPU already in use
	// where its share fits under maxBusyShare and every instance's
	// hetsev.io/max-inflation holds, before an empty GPU (worst fit within
	// each group): GPUs cost while they host an instance. Instances that
	// declare no busy share are placed by worst fit over all GPUs, as in
	// HetSev 4.2. A pointer, so an explicit false is kept.
	Consolidate *bool `json:"consolidate,omitempty"`
	// GPUMode (default "annotations") is how pods reach their GPU:
	// "annotations" (the plugin writes hetsev.io/gpu-index, the container
	// reads NVIDIA_VISIBLE_DEVICES from it) or "dra" (every hetsev pod
	// carries a ResourceClaim of DeviceClass shared-gpu.hetsev.io, entry
	// "gpu" of spec.resourceClaims; the plugin allocates it on one GPU's
	// memory capacity, published in ResourceSlices by the DRA driver
	// draDriver names, and the driver injects the device). In "dra" the
	// profile must disable the upstream DynamicResources plugin and enable
	// HetsevGPUShare at preBind.
	GPUMode string `json:"gpuMode,omitempty"`
	// GPUPool (default DefaultGPUSharePool, false) places hetsev pods only
	// on the GPU pool: nodes labelled hetsev.io/gpu-pool=true. A node
	// without the label is refused (Unschedulable, with a reason naming
	// the label), so hetsev never places beside another GPU allocator
	// (the NVIDIA GPU Operator's device plugin) on nodes it does not
	// manage. Off by default so that clusters whose nodes predate the
	// label keep their placements on upgrade; manifests/scheduler-config.yaml
	// turns it on. A pointer, so an explicit false is kept.
	GPUPool *bool `json:"gpuPool,omitempty"`
	// DRADriver (default "nvidia") is the profile of the DRA driver whose
	// GPUs gpuMode "dra" shares: "nvidia" (NVIDIA's dra-driver-nvidia-gpu,
	// driver gpu.nvidia.com, full GPUs of type "gpu") or "hami" (HAMi's
	// k8s-dra-driver, driver hami-core-gpu.project-hami.io, full GPUs of
	// type "hami-gpu", claims requesting cores "0": no compute cap). It
	// must agree with hetsev-scaler's --dra-driver, which writes the
	// claims, and the DeviceClass.
	DRADriver string `json:"draDriver,omitempty"`
	// DRADriverName, when set, replaces the profile's driver name (the
	// ResourceSlices' spec.driver).
	DRADriverName string `json:"draDriverName,omitempty"`
	// DRAGPUType, when set, replaces the profile's value of the device
	// attribute "type" of a full GPU; devices of other types (MIG, VFIO)
	// are not shared.
	DRAGPUType string `json:"draGPUType,omitempty"`
	// DRAClaimRequests, when set, replace the profile's capacities other
	// than memory that every hetsev claim requests, capacity name to
	// quantity (e.g. {cores: "0"}).
	DRAClaimRequests map[string]string `json:"draClaimRequests,omitempty"`
}
