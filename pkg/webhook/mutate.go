package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

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
	ops, why, ok := schedulerOps(pod)
	if !ok {
		return nil, why
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

// schedulerOps is the patch that makes a pod annotated hetsev.io/model name
// hetsev-scheduler; ok is false (with why) for a pod the webhook leaves
// alone: not annotated, or naming another scheduler.
func schedulerOps(pod *v1.Pod) (ops []PatchOp, why string, ok bool) {
	if _, ok := pod.Annotations[v1alpha1.AnnotationModel]; !ok {
		return nil, "no " + v1alpha1.AnnotationModel + " annotation", false
	}
	switch pod.Spec.SchedulerName {
	case "":
		ops = append(ops, PatchOp{Operation: "add", Path: "/spec/schedulerName", Value: v1alpha1.SchedulerName})
	case DefaultSchedulerName:
		ops = append(ops, PatchOp{Operation: "replace", Path: "/spec/schedulerName", Value: v1alpha1.SchedulerName})
	case v1alpha1.SchedulerName:
	default:
		return nil, fmt.Sprintf("names scheduler %q", pod.Spec.SchedulerName), false
	}
	return ops, "", true
}

// GPUPoolOps is the patch that keeps an opted-in pod on hetsev's GPU pool
// (hetsev-scheduler's arg gpuPool): a toleration of the pool taint
// v1alpha1.TaintGPUPool=v1alpha1.GPUPoolValue:NoSchedule unless the pod
// tolerates it already, and the node selector
// v1alpha1.LabelGPUPool=v1alpha1.GPUPoolValue unless the pod selects that
// label already (a value of its own is left for the scheduler to refuse).
func GPUPoolOps(pod *v1.Pod) []PatchOp {
	var ops []PatchOp
	if !gpuinventory.ToleratesGPUPool(pod.Spec.Tolerations) {
		if len(pod.Spec.Tolerations) == 0 {
			ops = append(ops, PatchOp{Operation: "add", Path: "/spec/tolerations", Value: []v1.Toleration{gpuinventory.GPUPoolToleration()}})
		} else {
			ops = append(ops, PatchOp{Operation: "add", Path: "/spec/tolerations/-", Value: gpuinventory.GPUPoolToleration()})
		}
	}
	if _, ok := pod.Spec.NodeSelector[v1alpha1.LabelGPUPool]; !ok {
		if len(pod.Spec.NodeSelector) == 0 {
			ops = append(ops, PatchOp{Operation: "add", Path: "/spec/nodeSelector", Value: map[string]string{v1alpha1.LabelGPUPool: v1alpha1.GPUPoolValue}})
		} else {
			// JSON pointer (RFC 6901): "/" in the key is written "~1".
			ops = append(ops, PatchOp{Operation: "add", Path: "/spec/nodeSelector/" + strings.ReplaceAll(v1alpha1.LabelGPUPool, "/", "~1"), Value: v1alpha1.GPUPoolValue})
		}
	}
	return ops
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
	// runtimeClassName alone. Annotation mode only.
	RuntimeClassName string
	// GPUMode is v1alpha1.GPUModeAnnotations ("" too: MutatePod) or
	// v1alpha1.GPUModeDRA (MutatePodDRA, with a template from Templates).
	GPUMode string
	// Templates makes sure the per-namespace ResourceClaimTemplate a pod is
	// referred to exists (DRA mode; nil: refer without making sure).
	Templates ClaimTemplateEnsurer
	// GPUPool is hetsev-scheduler's arg gpuPool: the pods the webhook opts
	// in also get GPUPoolOps (the pool taint's toleration and the pool
	// label as a node selector), in both GPU modes.
	GPUPool bool
}

var _ admission.Handler = PodMutator{}

// Handle implements admission.Handler. It needs no server: tests call it
// directly. In DRA mode a hetsev pod whose hetsev.io/gpu-memory cannot be
// read is refused (code 400, naming the annotation): it could not be given
// a claim, and without one it would run without its GPU; so is one whose
// template cannot be made sure of (code 500: the controller creating the
// pod retries).
func (m PodMutator) Handle(ctx context.Context, req admission.Request) admission.Response {
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
	name := pod.Name
	if name == "" {
		name = pod.GenerateName + "*"
	}
	var ops []PatchOp
	var why string
	if m.GPUMode == v1alpha1.GPUModeDRA {
		var refuse *metav1.Status
		ops, why, refuse = m.mutateDRA(ctx, req, &pod)
		if refuse != nil {
			klog.V(2).InfoS("admission review refused", "pod", klog.KRef(req.Namespace, name), "why", refuse.Message)
			resp.Allowed, resp.Result = false, refuse
			return resp
		}
	} else {
		ops, why = MutatePod(&pod, m.RuntimeClassName)
	}
	if _, _, optedIn := schedulerOps(&pod); optedIn && m.GPUPool {
		if pool := GPUPoolOps(&pod); len(pool) > 0 {
			ops = append(ops, pool...)
			why += "; placed on the GPU pool"
		}
	}
	klog.V(2).InfoS("admission review", "pod", klog.KRef(req.Namespace, name), "patched", len(ops) > 0, "why", why)
	resp.Patches = ops
	return resp
}

// mutateDRA is Handle's work in DRA mode: MutatePodDRA, after making sure
// of the pod's template (not on a dry run, which must have no side
// effects); refuse is the status of a refusal.
func (m PodMutator) mutateDRA(ctx context.Context, req admission.Request, pod *v1.Pod) (ops []PatchOp, why string, refuse *metav1.Status) {
	if _, why, ok := schedulerOps(pod); !ok {
		return nil, why, nil
	}
	if hasPodClaim(pod) {
		ops, why = MutatePodDRA(pod, 0)
		return ops, why, nil
	}
	d, _, err := gpuinventory.ParseDemand(pod.Annotations)
	if d.MemoryMiB <= 0 {
		return nil, "", &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest,
			Message: fmt.Sprintf("hetsev admission (GPU mode %s): %v; the pod's ResourceClaim requests that GPU memory, so it must be a positive quantity such as 2Gi", v1alpha1.GPUModeDRA, err)}
	}
	if m.Templates != nil && (req.DryRun == nil || !*req.DryRun) {
		if err := m.Templates.Ensure(ctx, req.Namespace, d.MemoryMiB); err != nil {
			return nil, "", &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Reason: metav1.StatusReasonInternalError,
				Message: "hetsev admission: the pod's GPU claim template: " + err.Error()}
		}
	}
	ops, why = MutatePodDRA(pod, d.MemoryMiB)
	return ops, why, nil
}
