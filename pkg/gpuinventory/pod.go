package gpuinventory

import (
	"fmt"
	"strconv"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

const mib = 1024 * 1024

// MaxGPUMemoryMiB bounds hetsev.io/gpu-memory and nvidia.com/gpu.memory
// (1 TiB, far above any GPU's), so that sums over a GPU's pods cannot
// overflow.
const MaxGPUMemoryMiB = 1 << 20

// Demand is what one model instance asks of a GPU.
type Demand struct {
	Model     string // hetsev.io/model; empty means no anti-affinity identity
	MemoryMiB int64  // hetsev.io/gpu-memory rounded up to MiB
}

// ParseDemand reads a pod's hetsev annotations. ok is false for pods that do
// not ask for a GPU share (no hetsev.io/gpu-memory and no hetsev.io/model).
// A malformed, zero or negative hetsev.io/gpu-memory, or a hetsev.io/model
// without it, is an error that names the annotation.
func ParseDemand(annotations map[string]string) (d Demand, ok bool, err error) {
	memStr, hasMem := annotations[v1alpha1.AnnotationGPUMemory]
	model, hasModel := annotations[v1alpha1.AnnotationModel]
	if !hasMem && !hasModel {
		return Demand{}, false, nil
	}
	if !hasMem {
		return Demand{}, true, fmt.Errorf("annotation %s is required on pods with %s", v1alpha1.AnnotationGPUMemory, v1alpha1.AnnotationModel)
	}
	q, err := resource.ParseQuantity(memStr)
	if err != nil {
		return Demand{}, true, fmt.Errorf("annotation %s=%q is not a quantity: %v", v1alpha1.AnnotationGPUMemory, memStr, err)
	}
	if q.Sign() <= 0 {
		return Demand{}, true, fmt.Errorf("annotation %s=%q must be positive", v1alpha1.AnnotationGPUMemory, memStr)
	}
	if q.Cmp(*resource.NewQuantity(MaxGPUMemoryMiB*mib, resource.BinarySI)) > 0 {
		return Demand{}, true, fmt.Errorf("annotation %s=%q exceeds %d MiB", v1alpha1.AnnotationGPUMemory, memStr, MaxGPUMemoryMiB)
	}
	bytes := q.Value() // rounds up to whole bytes
	return Demand{Model: model, MemoryMiB: (bytes + mib - 1) / mib}, true, nil
}

// DemandOf is ParseDemand for a pod.
func DemandOf(pod *v1.Pod) (Demand, bool, error) { return ParseDemand(pod.Annotations) }

// ParseGPUIndex reads hetsev.io/gpu-index; ok is false when it is absent.
func ParseGPUIndex(annotations map[string]string) (idx int, ok bool, err error) {
	s, present := annotations[v1alpha1.AnnotationGPUIndex]
	if !present {
		return 0, false, nil
	}
	idx, err = strconv.Atoi(s)
	if err != nil || idx < 0 {
		return 0, true, fmt.Errorf("annotation %s=%q: want a non-negative integer", v1alpha1.AnnotationGPUIndex, s)
	}
	return idx, true, nil
}
