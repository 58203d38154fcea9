package gpuinventory

import (
	"fmt"
	"math"
	"strconv"
	"strings"

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
	Model string // hetsev.io/model; empty means no anti-affinity identity
	// Scope is the namespace the model's identity holds in for the
	// anti-affinity (the pod's), or empty for a cluster-wide identity
	// (hetsev.io/model-scope=cluster); see Identity.
	Scope     string
	MemoryMiB int64 // hetsev.io/gpu-memory rounded up to MiB
	// BusyShare is hetsev.io/busy-share: the fraction of time, in (0, 1],
	// the instance keeps its GPU busy at its service's target load. 0 (the
	// zero value, annotation absent) is unknown and counts as 1; read it
	// with Busy.
	BusyShare float64
	// MaxInflation is hetsev.io/max-inflation: the latency inflation (>= 1)
	// the instance's SLO allows beside its neighbours; 0 (absent) is no
	// limit.
	MaxInflation float64
}

// Identity is the anti-affinity identity of d's model: "namespace/model"
// for a namespace-scoped model (Scope set), the model name for a
// cluster-wide one, and empty when d names no model. Two instances of one
// identity never share a GPU (HetSev 4.2); two teams' "resnet50" in two
// namespaces are two identities.
func (d Demand) Identity() string {
	if d.Model == "" || d.Scope == "" {
		return d.Model
	}
	return d.Scope + "/" + d.Model
}

// SplitIdentity is the model and scope of an identity (Demand.Identity):
// "namespace/model" is scope namespace, anything without "/" a
// cluster-wide model (empty scope). Namespaces and model names hold no
// "/" (DNS labels; ModelService spec.model's pattern), so the split is
// unambiguous.
func SplitIdentity(identity string) (model, scope string) {
	if ns, m, ok := strings.Cut(identity, "/"); ok {
		return m, ns
	}
	return identity, ""
}

// ModelOf is the model part of a pod's demand: hetsev.io/model and its
// scope (ModelScope), read even when the pod's other hetsev annotations
// are malformed. Anti-affinity and Placer.Inflation match on its
// Identity.
func ModelOf(pod *v1.Pod) Demand {
	d := Demand{Model: pod.Annotations[v1alpha1.AnnotationModel]}
	if d.Model != "" {
		d.Scope = ModelScope(pod)
	}
	return d
}

// CheckModelName reports a model name that holds "/": identities are
// namespace/model (Demand.Identity), so a cluster-wide "a/resnet50" would
// be namespace a's resnet50. ModelService spec.model's schema pattern
// refuses the same names.
func CheckModelName(model string) error {
	if strings.Contains(model, "/") {
		return fmt.Errorf("%q must not contain \"/\": a model's identity is namespace/model", model)
	}
	return nil
}

// CheckModel is CheckModelName for a hetsev.io/model value, naming the
// annotation.
func CheckModel(model string) error {
	if err := CheckModelName(model); err != nil {
		return fmt.Errorf("annotation %s=%w (%s)", v1alpha1.AnnotationModel, err, v1alpha1.AnnotationModelScope)
	}
	return nil
}

// ModelScope is the Demand.Scope of a pod: its namespace, or empty when it
// is annotated hetsev.io/model-scope=cluster.
func ModelScope(pod *v1.Pod) string {
	if pod.Annotations[v1alpha1.AnnotationModelScope] == v1alpha1.ModelScopeClusterValue {
		return ""
	}
	return pod.Namespace
}

// Busy is d's busy share in (0, 1]: BusyShare, or 1 when it is unknown
// (<= 0, NaN) or above 1.
func (d Demand) Busy() float64 {
	if !(d.BusyShare > 0) || d.BusyShare > 1 {
		return 1
	}
	return d.BusyShare
}

// ParseDemand reads a pod's hetsev annotations. ok is false for pods that do
// not ask for a GPU share (no hetsev.io/gpu-memory and no hetsev.io/model).
// A malformed, zero or negative hetsev.io/gpu-memory, a hetsev.io/model
// without it, or a hetsev.io/model holding "/" (Demand.Identity) is an
// error that names the annotation.
func ParseDemand(annotations map[string]string) (d Demand, ok bool, err error) {
	memStr, hasMem := annotations[v1alpha1.AnnotationGPUMemory]
	model, hasModel := annotations[v1alpha1.AnnotationModel]
	if !hasMem && !hasModel {
		return Demand{}, false, nil
	}
	if err := CheckModel(model); err != nil {
		return Demand{}, true, err
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
	d = Demand{Model: model, MemoryMiB: (bytes + mib - 1) / mib}
	d.BusyShare, err = ParseBusyShare(annotations)
	if err != nil {
		// The memory is readable: keep it, with the worst-case busy share.
		d.BusyShare = 0
		return d, true, err
	}
	d.MaxInflation, err = ParseMaxInflation(annotations)
	if err != nil {
		return d, true, err // no limit: a neighbour is never refused for it
	}
	return d, true, nil
}

// ParseBusyShare reads hetsev.io/busy-share: a decimal in (0, 1]. Absent is
// 0 (unknown, Demand.Busy counts it as 1). A value that is not a number, is
// NaN or lies outside (0, 1] is an error that names the annotation.
func ParseBusyShare(annotations map[string]string) (float64, error) {
	s, ok := annotations[v1alpha1.AnnotationBusyShare]
	if !ok {
		return 0, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, &GPUTimeError{fmt.Sprintf("annotation %s=%q is not a number", v1alpha1.AnnotationBusyShare, s)}
	}
	if !(f > 0 && f <= 1) {
		return 0, &GPUTimeError{fmt.Sprintf("annotation %s=%q must be in (0, 1]", v1alpha1.AnnotationBusyShare, s)}
	}
	return f, nil
}

// GPUTimeError is a malformed or out-of-range hetsev.io/busy-share or
// hetsev.io/max-inflation. The pod's GPU memory is readable: ParseDemand
// returns the demand with the busy share unknown (counted as 1) and no
// inflation limit.
type GPUTimeError struct{ msg string }

func (e *GPUTimeError) Error() string { return e.msg }

// DemandOf is ParseDemand for a pod, with the scope of its model
// (ModelScope).
func DemandOf(pod *v1.Pod) (Demand, bool, error) {
	d, ok, err := ParseDemand(pod.Annotations)
	if d.Model != "" {
		d.Scope = ModelScope(pod)
	}
	return d, ok, err
}

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

// ParseMaxInflation reads hetsev.io/max-inflation: a finite decimal >= 1.
// Absent is 0 (no limit). Anything else is an error that names the
// annotation.
func ParseMaxInflation(annotations map[string]string) (float64, error) {
	s, ok := annotations[v1alpha1.AnnotationMaxInflation]
	if !ok {
		return 0, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, &GPUTimeError{fmt.Sprintf("annotation %s=%q is not a number", v1alpha1.AnnotationMaxInflation, s)}
	}
	if !(f >= 1) || math.IsInf(f, 1) {
		return 0, &GPUTimeError{fmt.Sprintf("annotation %s=%q must be a finite number >= 1", v1alpha1.AnnotationMaxInflation, s)}
	}
	return f, nil
}
