package gpuinventory

// Pod annotations and node labels hetsev reads and writes.
const (
	// AnnotationModel names the model a pod serves; two pods with the same
	// value never share a GPU (HetSev 4.2 anti-affinity).
	AnnotationModel = "hetsev.io/model"
	// AnnotationGPUMemory is the GPU memory one instance needs, as a
	// resource.Quantity ("3Gi", "2048Mi").
	AnnotationGPUMemory = "hetsev.io/gpu-memory"
	// AnnotationGPUIndex is the index of the GPU on the node that the
	// scheduler chose; written before binding, read through the downward API
	// into NVIDIA_VISIBLE_DEVICES.
	AnnotationGPUIndex = "hetsev.io/gpu-index"

	// LabelGPUProduct, LabelGPUCount and LabelGPUMemory are NVIDIA GPU Feature
	// Discovery's node labels; LabelGPUMemory is MiB per GPU.
	LabelGPUProduct = "nvidia.com/gpu.product"
	LabelGPUCount   = "nvidia.com/gpu.count"
	LabelGPUMemory  = "nvidia.com/gpu.memory"
)
