package config

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// HetsevFairQueueArgs are the arguments of the HetsevFairQueue plugin
// (pkg/plugins/fairqueue), HetSev 4.2 Algorithm 1 steps 1-2. The paper
// names k and beta but gives no values; see v1 for the defaults.
type HetsevFairQueueArgs struct {
	metav1.TypeMeta

	// K is the number of classes k-means groups pending pods into, by GPU
	// memory and model (1..16).
	K int32
	// Beta is the length of a round in pods (1..10000): classes and their
	// median waits are recomputed every Beta pods taken from the queue, and
	// each waiting class gets at least one pod per round.
	Beta int32
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// HetsevGPUShareArgs are the arguments of the HetsevGPUShare plugin
// (pkg/plugins/gpushare), HetSev 4.2 Algorithm 1 step 3.
type HetsevGPUShareArgs struct {
	metav1.TypeMeta

	// AntiAffinity is AntiAffinityHard (HetSev 4.2) or AntiAffinitySoft.
	AntiAffinity string
	// Fit is FitWorst (the GPU with the most free GPU memory; HetSev 4.2)
	// or FitBest (the least free GPU memory that fits).
	Fit string
	// InterferenceWeight (0..1, dimensionless) is the share of a GPU's
	// rating that comes from the predicted latency inflation
	// (pkg/interference) rather than from the fit; 0 is the paper's pure
	// fit. A pointer, so that an explicit 0 is told apart from unset; after
	// defaulting it is never nil.
	InterferenceWeight *float64
	// InterferenceModelFile is the path of a co-location model file
	// (interference.ColocationFile, YAML or JSON) the rating predicts
	// latency inflation with; empty is the model fitted to the H100
	// measurements (interference.FittedColocation). The plugin's factory
	// reads it; validation does not.
	InterferenceModelFile string
	// MaxBusyShare (dimensionless, >= 0) is the most summed busy share
	// (hetsev.io/busy-share, absent = 1) the instances on one GPU may
	// carry; 0 is no cap (GPU memory alone decides). A pointer, so that an
	// explicit 0 is told apart from unset; after defaulting it is never nil.
	MaxBusyShare *float64
	// Consolidate puts an instance that declares hetsev.io/busy-share on a
	// GPU already in use where it fits before an empty one
	// (gpuinventory.Choice.Consolidate). After defaulting never nil.
	Consolidate *bool
	// GPUMode is how pods reach their GPU: v1alpha1.GPUModeAnnotations
	// (hetsev.io/gpu-index and NVIDIA_VISIBLE_DEVICES) or
	// v1alpha1.GPUModeDRA (the plugin allocates the pod's ResourceClaim of
	// v1alpha1.DeviceClassName on a shared GPU's memory capacity).
	GPUMode string
	// GPUPool places hetsev pods only on nodes labelled
	// v1alpha1.LabelGPUPool=true, the GPU pool hetsev manages; a node
	// without the label is refused with a reason naming it. After
	// defaulting never nil.
	GPUPool *bool
	// DRADriver is the profile of the DRA driver whose GPUs gpuMode dra
	// shares (dra.Profiles: "nvidia", "hami"; "" is dra.DefaultProfile).
	DRADriver string
	// DRADriverName and DRAGPUType, when not empty, replace the profile's
	// driver name and the type attribute of a full GPU.
	DRADriverName, DRAGPUType string
	// DRAClaimRequests, when not empty, replace the profile's capacities
	// other than memory that hetsev's claims request (capacity name to
	// quantity, e.g. cores: "0").
	DRAClaimRequests map[string]string
}

// Anti-affinity modes of HetsevGPUShareArgs.AntiAffinity.
const (
	// AntiAffinityHard never puts two instances of one model (the
	// hetsev.io/model annotation) on a GPU (HetSev 4.2).
	AntiAffinityHard = "Hard"
	// AntiAffinitySoft does so only when no GPU without the model fits.
	AntiAffinitySoft = "Soft"
)

// Fits of HetsevGPUShareArgs.Fit, the names gpuinventory.Fit takes
// (gpuinventory.FitWorst, gpuinventory.FitBest; the plugin converts, and a
// test of pkg/plugins/gpushare keeps them equal).
const (
	// FitWorst prefers the GPU with the most free GPU memory (HetSev 4.2).
	FitWorst = "WorstFit"
	// FitBest prefers the GPU with the least free GPU memory that fits.
	FitBest = "BestFit"
)
