package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// DefaultSchedulerName is what the API server defaults an empty
// spec.schedulerName to, before mutating webhooks run; a pod that names it
// explicitly cannot be told apart from one that names none.
const DefaultSchedulerName = v1.DefaultSchedulerName

// PatchOp is one RFC 6902 JSON patch operation, as controller-runtime's
// admission.Response carries them.
type PatchOp = jsonpatch.Operation

// MutatePod returns the patch that opts pod into hetsev-scheduler and gives
// it its GPU, for a pod annotated hetsev.io/model whose schedulerName is
// empty, the default scheduler or hetsev-scheduler:
//   - schedulerName becomes hetsev-scheduler;
//   - every container and init container (sidecars included) that does not
//     set NVIDIA_VISIBLE_DEVICES gets it from hetsev.io/gpu-index through
//     the downward API: a container without it would see what its image's
//     environment names, with the NVIDIA runtime often every GPU;
//   - spec.runtimeClassName becomes runtimeClass when the pod names none
//     and runtimeClass is not empty (the NVIDIA runtime, which reads the
//     variable, is not the node's default under CDI).
//
// Pods without the annotation, or naming another scheduler, get no patch. A
// container that sets NVIDIA_VISIBLE_DEVICES itself is left as it is: the
// admission policy then refuses a literal with a message, rather than the
// webhook silently overriding the user. The webhook is called again after
// later webhooks (reinvocationPolicy IfNeeded), so a sidecar injected after
// it (Istio's) gets the variable too. The second result says why, for logs.
func MutatePod(pod *v1.Pod, runtimeClass string) ([]PatchOp, string) {
	if _, ok := pod.Annotations[v1alpha1.AnnotationModel]; !ok {
		return nil, "no " + v1alpha1.AnnotationModel + " annotation"
	}
	var ops []PatchOp
	switch pod.Spec.SchedulerName {
	case "":
		ops = append(ops, PatchOp{Operation: "add", Path: "/spec/schedulerName", Value: v1alpha1.SchedulerName})
	case DefaultSchedulerName:
		ops = append(ops, PatchOp{Operation: "replace", Path: "/spec/schedulerName", Value: v1alpha1.SchedulerName})
	case v1alpha1.SchedulerName:
	default:
		return nil, fmt.Sprintf("names scheduler %q", pod.Spec.SchedulerName)
	}
	ops = append(ops, visibleDevicesOps("initContainers", pod.Spec.InitContainers)...)
	ops = append(ops, visibleDevicesOps("containers", pod.Spec.Containers)...)
	if runtimeClass != "" && (pod.Spec.RuntimeClassName == nil || *pod.Spec.RuntimeClassName == "") {
		op := "add"
		if pod.Spec.RuntimeClassName != nil {
			op = "replace"
		}
		ops = append(ops, PatchOp{Operation: op, Path: "/spec/runtimeClassName", Value: runtimeClass})
	}
	if len(ops) == 0 {
		return nil, "already opted in, with " + gpuinventory.EnvVisibleDevices + " in every container"
	}
	return ops, "opted into " + v1alpha1.SchedulerName
}

// visibleDevicesOps adds NVIDIA_VISIBLE_DEVICES from the GPU index to each
// of containers (at /spec/<field>) that does not set it.
func visibleDevicesOps(field string, containers []v1.Container) []PatchOp {
	var ops []PatchOp
	for i, c := range containers {
		switch {
		case gpuinventory.VisibleDevicesIndex(c.Env) >= 0:
		case len(c.Env) == 0:
			ops = append(ops, PatchOp{Operation: "add", Path: fmt.Sprintf("/spec/%s/%d/env", field, i), Value: []v1.EnvVar{gpuinventory.VisibleDevicesEnv()}})
		default:
			ops = append(ops, PatchOp{Operation: "add", Path: fmt.Sprintf("/spec/%s/%d/env/-", field, i), Value: gpuinventory.VisibleDevicesEnv()})
		}
	}
	return ops
}

// PodMutator is the webhook's controller-runtime admission.Handler: allowed,
// with MutatePod's JSON patch for pods it opts in. A request whose object is
// not a pod (a misconfigured rule) is allowed unchanged, so that a
// misconfiguration never blocks unrelated objects; a pod that cannot be
// decoded is refused with code 400.
type PodMutator struct {
	// RuntimeClassName is given to opted-in pods that name none; "" leaves
	// runtimeClassName alone.
	RuntimeClassName string
}

var _ admission.Handler = PodMutator{}

// Handle implements admission.Handler. It needs no server: tests call it
// directly.
func (m PodMutator) Handle(_ context.Context, req admission.Request) admission.Response {
	resp := admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}}
	if req.Kind.Kind != "Pod" || req.Kind.Group != "" {
		return resp
	}
	var pod v1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		resp.Allowed = false
		resp.Result = &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest,
			Message: "hetsev admission: decoding the pod: " + err.Error()}
		return resp
	}
	ops, why := MutatePod(&pod, m.RuntimeClassName)
	name := pod.Name
	if name == "" {
		name = pod.GenerateName + "*"
	}
	klog.V(2).InfoS("admission review", "pod", klog.KRef(req.Namespace, name), "patched", len(ops) > 0, "why", why)
	resp.Patches = ops
	return resp
}
