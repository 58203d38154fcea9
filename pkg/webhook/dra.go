package webhook

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/dra"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// DRA mode (hetsev-scaler's --gpu-mode=dra).
//
// A pod reaches a DRA device only through a ResourceClaim, and a pod
// cannot create one: it names an existing claim or a ResourceClaimTemplate
// from which the resourceclaim controller creates the pod's own claim. A
// pod opted in by annotation has no Deployment of hetsev-scaler's, so no
// per-Deployment template; the webhook therefore refers it to a template
// per namespace and GPU memory size, ClaimTemplateName ("hetsev-gpu-2048mi"),
// which it creates itself when the first such pod is admitted
// (ClaimTemplates.Ensure; none on a dry run, hence the configuration's
// sideEffects NoneOnDryRun). The template requests the pod's
// hetsev.io/gpu-memory of any GPU of hetsev's DeviceClass, like the
// annotation mode, which pins no GPU type either (a node selector on the
// pod does). Templates are immutable and named by their content, so one is
// shared by every pod of that size in the namespace and never changes; they
// are small and left in place (labelled app.kubernetes.io/managed-by:
// hetsev-webhook) when no pod uses them any more.
//
// Simpler alternatives were weighed: naming a user-provided template in an
// annotation gains nothing over writing spec.resourceClaims directly, and
// refusing annotated pods would drop the opt-in by annotation in DRA mode.

// ClaimTemplateName is the per-namespace ResourceClaimTemplate the webhook
// gives pods that ask for memoryMiB MiB of GPU memory.
func ClaimTemplateName(memoryMiB int64) string {
	return fmt.Sprintf("hetsev-gpu-%dmi", memoryMiB)
}

// ManagedByWebhook is the app.kubernetes.io/managed-by value of the
// templates the webhook creates.
const ManagedByWebhook = "hetsev-webhook"

// ClaimTemplateEnsurer makes sure the template ClaimTemplateName(memoryMiB)
// exists in namespace and requests that memory; PodMutator calls it before
// it refers a pod to the template.
type ClaimTemplateEnsurer interface {
	Ensure(ctx context.Context, namespace string, memoryMiB int64) error
}

// ClaimTemplates is the ClaimTemplateEnsurer on the API server: a get, and
// a create when the template is missing (two webhook replicas racing both
// succeed). A template of that name that requests anything else (made by
// hand) is an error that says so: the pod would get other than it asked.
type ClaimTemplates struct {
	Client kubernetes.Interface
	// Driver's ClaimRequests are requested by every template besides the
	// memory (HAMi's cores); the zero Driver is dra.NVIDIA.
	Driver dra.Driver
}

// Ensure implements ClaimTemplateEnsurer.
func (c ClaimTemplates) Ensure(ctx context.Context, namespace string, memoryMiB int64) error {
	name := ClaimTemplateName(memoryMiB)
	api := c.Client.ResourceV1().ResourceClaimTemplates(namespace)
	cur, err := api.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cur, err = api.Create(ctx, desiredNamespaceTemplate(namespace, memoryMiB, c.Driver.WithDefault()), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			cur, err = api.Get(ctx, name, metav1.GetOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("resourceclaimtemplate %s/%s: %w", namespace, name, err)
	}
	d := c.Driver.WithDefault()
	if got, ok := gpuinventory.ClaimMemoryMiB(cur.Spec.Spec); !ok || got != memoryMiB || !gpuinventory.ClaimRequestsMatch(cur.Spec.Spec, d.ClaimRequests) {
		return fmt.Errorf("resourceclaimtemplate %s/%s exists but does not request %d MiB of capacity %q of DeviceClass %s and exactly the claim requests of DRA driver %s: delete it, the webhook then recreates it",
			namespace, name, memoryMiB, v1alpha1.DRAMemoryCapacity, v1alpha1.DeviceClassName, d)
	}
	return nil
}

func desiredNamespaceTemplate(namespace string, memoryMiB int64, driver dra.Driver) *resourcev1.ResourceClaimTemplate {
	labels := map[string]string{"app.kubernetes.io/managed-by": ManagedByWebhook, "app.kubernetes.io/part-of": "hetsev"}
	return &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: ClaimTemplateName(memoryMiB), Namespace: namespace, Labels: labels},
		Spec: resourcev1.ResourceClaimTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec:       gpuinventory.GPUClaimSpec(memoryMiB, driver.ClaimRequests),
		},
	}
}

// hasPodClaim says whether pod already has the pod claim
// v1alpha1.PodClaimName (its own, or one the webhook added).
func hasPodClaim(pod *v1.Pod) bool {
	for _, c := range pod.Spec.ResourceClaims {
		if c.Name == v1alpha1.PodClaimName {
			return true
		}
	}
	return false
}

// MutatePodDRA is MutatePod in DRA mode, for a pod annotated
// hetsev.io/model whose GPU memory is memoryMiB: schedulerName as in
// MutatePod, and, unless the pod already has a pod claim named
// v1alpha1.PodClaimName (then its claims are the user's and left alone),
// that claim from template ClaimTemplateName(memoryMiB) and a reference to
// it in every container (not the init containers: sidecars get no GPU; the
// DRA driver's CDI edits reach only the containers that name the claim).
// No NVIDIA_VISIBLE_DEVICES and no runtime class: CDI injects the device.
func MutatePodDRA(pod *v1.Pod, memoryMiB int64) ([]PatchOp, string) {
	ops, why, ok := schedulerOps(pod)
	if !ok {
		return nil, why
	}
	if hasPodClaim(pod) {
		if len(ops) == 0 {
			return nil, "already opted in, with pod claim " + v1alpha1.PodClaimName
		}
		return ops, "opted into " + v1alpha1.SchedulerName + " with the pod's own claim " + v1alpha1.PodClaimName
	}
	tpl := ClaimTemplateName(memoryMiB)
	claim := v1.PodResourceClaim{Name: v1alpha1.PodClaimName, ResourceClaimTemplateName: &tpl}
	if len(pod.Spec.ResourceClaims) == 0 {
		ops = append(ops, PatchOp{Operation: "add", Path: "/spec/resourceClaims", Value: []v1.PodResourceClaim{claim}})
	} else {
		ops = append(ops, PatchOp{Operation: "add", Path: "/spec/resourceClaims/-", Value: claim})
	}
	ref := v1.ResourceClaim{Name: v1alpha1.PodClaimName}
	for i, c := range pod.Spec.Containers {
		if len(c.Resources.Claims) == 0 {
			ops = append(ops, PatchOp{Operation: "add", Path: fmt.Sprintf("/spec/containers/%d/resources/claims", i), Value: []v1.ResourceClaim{ref}})
		} else {
			ops = append(ops, PatchOp{Operation: "add", Path: fmt.Sprintf("/spec/containers/%d/resources/claims/-", i), Value: ref})
		}
	}
	return ops, "opted into " + v1alpha1.SchedulerName + " with a claim from resourceclaimtemplate " + tpl
}
