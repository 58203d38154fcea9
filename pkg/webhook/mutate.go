package webhook

import (
	"fmt"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"

	v1 "k8s.io/api/core/v1"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// DefaultSchedulerName is what the API server defaults an empty
// spec.schedulerName to, before mutating webhooks run; a pod that names it
// explicitly cannot be told apart from one that names none.
const DefaultSchedulerName = v1.DefaultSchedulerName

// PatchOp is one RFC 6902 JSON patch operation.
type PatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// MutatePod returns the patch that opts pod into hetsev-scheduler: for a pod
// annotated hetsev.io/model whose schedulerName is empty or the default
// scheduler, schedulerName becomes hetsev-scheduler and every container that
// does not set NVIDIA_VISIBLE_DEVICES gets it from hetsev.io/gpu-index
// through the downward API. Pods without the annotation, or naming another
// scheduler, get no patch. A container that sets NVIDIA_VISIBLE_DEVICES
// itself is left as it is: the admission policy then refuses a literal with
// a message, rather than the webhook silently overriding the user.
// The second result says why, for logs.
func MutatePod(pod *v1.Pod) ([]PatchOp, string) {
	if _, ok := pod.Annotations[v1alpha1.AnnotationModel]; !ok {
		return nil, "no " + v1alpha1.AnnotationModel + " annotation"
	}
	switch pod.Spec.SchedulerName {
	case "", DefaultSchedulerName:
	default:
		return nil, fmt.Sprintf("names scheduler %q", pod.Spec.SchedulerName)
	}
	ops := []PatchOp{{Op: "replace", Path: "/spec/schedulerName", Value: v1alpha1.SchedulerName}}
	if pod.Spec.SchedulerName == "" {
		ops[0].Op = "add"
	}
	for i, c := range pod.Spec.Containers {
		switch {
		case gpuinventory.VisibleDevicesIndex(c.Env) >= 0:
		case len(c.Env) == 0:
			ops = append(ops, PatchOp{Op: "add", Path: fmt.Sprintf("/spec/containers/%d/env", i), Value: []v1.EnvVar{gpuinventory.VisibleDevicesEnv()}})
		default:
			ops = append(ops, PatchOp{Op: "add", Path: fmt.Sprintf("/spec/containers/%d/env/-", i), Value: gpuinventory.VisibleDevicesEnv()})
		}
	}
	return ops, "opted into " + v1alpha1.SchedulerName
}
