package gpuinventory

// Node labels of NVIDIA GPU Feature Discovery that hetsev reads; hetsev's own
// annotations are in pkg/apis/v1alpha1 (wellknown.go).
const (
	// LabelGPUProduct, LabelGPUCount and LabelGPUMemory are NVIDIA GPU Feature
	// Discovery's node labels; LabelGPUMemory is MiB per GPU.
	LabelGPUProduct = "nvidia.com/gpu.product"
	LabelGPUCount   = "nvidia.com/gpu.count"
	LabelGPUMemory  = "nvidia.com/gpu.memory"
)
