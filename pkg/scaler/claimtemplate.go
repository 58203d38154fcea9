package scaler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/dra"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// desiredClaimTemplate builds the ResourceClaimTemplate of one GPU type's
// Deployment (DRA mode), named after the Deployment and controlled by the
// ModelService: one request, v1alpha1.ClaimRequestName, for one device of
// hetsev's DeviceClass (v1alpha1.DeviceClassName) of the type's product
// (dra.ProductSelector), requesting the driver's extra capacities and consuming the instance's GPU memory as the capacity
// v1alpha1.DRAMemoryCapacity, the same quantity as the pods'
// hetsev.io/gpu-memory annotation (gpuinventory.GPUClaimSpec).
func desiredClaimTemplate(s *service, p gpuProfile) *resourcev1.ResourceClaimTemplate {
	ms := s.obj
	isController := true
	return &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{
			Name:      DeploymentName(ms.Name, p.column()),
			Namespace: ms.Namespace,
			Labels:    deploymentLabels(ms.Name, p.column()),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.Kind,
				Name: ms.Name, UID: ms.UID, Controller: &isController,
			}},
		},
		Spec: resourcev1.ResourceClaimTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: deploymentLabels(ms.Name, p.column())},
			Spec:       gpuinventory.GPUClaimSpec(s.demand(p).MemoryMiB, s.driver.ClaimRequests, dra.ProductSelector(s.driver.Name, p.gpuType.ProductLabel)),
		},
	}
}

// claimPodSpec gives spec, in DRA mode, the pod claim v1alpha1.PodClaimName
// from the ResourceClaimTemplate template, and gives every container (not
// the init containers) that claim: the DRA driver's CDI edits then inject
// the device into each container that names it, and only those. Claims the
// template already has are kept; one named PodClaimName is replaced.
func claimPodSpec(spec *v1.PodSpec, template string) {
	claims := []v1.PodResourceClaim{{Name: v1alpha1.PodClaimName, ResourceClaimTemplateName: &template}}
	for _, c := range spec.ResourceClaims {
		if c.Name != v1alpha1.PodClaimName {
			claims = append(claims, c)
		}
	}
	spec.ResourceClaims = claims
	for i := range spec.Containers {
		r := &spec.Containers[i].Resources
		has := false
		for _, c := range r.Claims {
			has = has || c.Name == v1alpha1.PodClaimName
		}
		if !has {
			r.Claims = append(r.Claims, v1.ResourceClaim{Name: v1alpha1.PodClaimName})
		}
	}
}

// ensureClaimTemplate creates the GPU type's ResourceClaimTemplate when
// missing and replaces it when the desired one changed: a template's spec
// is immutable, so a change (another GPU memory, another product) deletes
// it and creates it anew; claims made from the old one stay with their
// pods, and a pod created in between gets its claim once the new template
// exists (the resourceclaim controller retries). A hash of the desired
// spec, kept in an annotation, tells when it changed. A template of that
// name the ModelService does not control is a *NotControlledError.
func (r *Reconciler) ensureClaimTemplate(ctx context.Context, svc *service, p gpuProfile) error {
	want := desiredClaimTemplate(svc, p)
	b, err := json.Marshal(want.Spec)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(b)
	hash := hex.EncodeToString(sum[:8])
	want.Annotations = map[string]string{v1alpha1.AnnotationTemplateHash: hash}
	key := client.ObjectKeyFromObject(want)
	cur := &resourcev1.ResourceClaimTemplate{}
	err = r.Client.Get(ctx, key, cur)
	switch {
	case apierrors.IsNotFound(err):
		return r.createClaimTemplate(ctx, svc, want)
	case err != nil:
		return fmt.Errorf("reading resourceclaimtemplate %s: %w", key, err)
	}
	if err := controlledBy(cur, svc.obj); err != nil {
		return err
	}
	if cur.Annotations[v1alpha1.AnnotationTemplateHash] == hash {
		return nil
	}
	uid := cur.UID
	if err := r.Client.Delete(ctx, cur, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting resourceclaimtemplate %s to replace it: %w", key, err)
	}
	if err := r.createClaimTemplate(ctx, svc, want); err != nil {
		return err
	}
	mem := want.Spec.Spec.Devices.Requests[0].Exactly.Capacity.Requests[v1alpha1.DRAMemoryCapacity]
	r.Recorder.Eventf(svc.obj, v1.EventTypeNormal, "ReplacedClaimTemplate", "replaced resourceclaimtemplate %s: the GPU demand of type %s changed; new pods claim %s of GPU memory on a %s", key.Name, p.gpuType.Name, mem.String(), p.gpuType.ProductLabel)
	return nil
}

func (r *Reconciler) createClaimTemplate(ctx context.Context, svc *service, want *resourcev1.ResourceClaimTemplate) error {
	key := client.ObjectKeyFromObject(want)
	err := r.Client.Create(ctx, want)
	if apierrors.IsAlreadyExists(err) { // not in the cache yet, or not ours
		cur := &resourcev1.ResourceClaimTemplate{}
		if err := r.apiReader().Get(ctx, key, cur); err != nil {
			return err
		}
		return controlledBy(cur, svc.obj)
	}
	if err != nil {
		return fmt.Errorf("creating resourceclaimtemplate %s: %w", key, err)
	}
	return nil
}

// retireClaimTemplates deletes the ResourceClaimTemplates svc controls
// whose GPU type is no longer in its spec, once no Deployment of that name
// is left (retireRemoved deletes it when its pods are gone): existing
// claims belong to their pods, so only new pods would need the template.
func (r *Reconciler) retireClaimTemplates(ctx context.Context, svc *service, deployments map[string]bool) error {
	ms := svc.obj
	var list resourcev1.ResourceClaimTemplateList
	if err := r.Client.List(ctx, &list, client.InNamespace(ms.Namespace), client.MatchingLabels{v1alpha1.LabelModelService: ms.Name}); err != nil {
		return fmt.Errorf("listing the resourceclaimtemplates of modelservice %s/%s: %w", ms.Namespace, ms.Name, err)
	}
	keep := map[string]bool{}
	for _, p := range svc.types {
		keep[DeploymentName(ms.Name, p.column())] = true
	}
	for i := range list.Items {
		t := &list.Items[i]
		if keep[t.Name] || deployments[t.Name] || controlledBy(t, ms) != nil || !t.DeletionTimestamp.IsZero() {
			continue
		}
		uid := t.UID
		if err := r.Client.Delete(ctx, t, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting resourceclaimtemplate %s/%s of a removed GPU type: %w", t.Namespace, t.Name, err)
		}
		r.Recorder.Eventf(ms, v1.EventTypeNormal, "DeletedClaimTemplate", "deleted resourceclaimtemplate %s of GPU type %s, no longer offered (spec.profiles, flavors)", t.Name, t.Labels[v1alpha1.LabelGPUType])
	}
	return nil
}
