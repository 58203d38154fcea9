package scaler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// DeploymentName is the Deployment serving ms on one GPU type, e.g.
// "resnet50-t4" or "resnet50-v100-32gb".
func DeploymentName(ms, gpuType string) string {
	return strings.ToLower(ms + "-" + strings.NewReplacer(" ", "-", "_", "-", ".", "-").Replace(gpuType))
}

// desiredDeployment builds the Deployment of one GPU type: the service's pod
// template, pinned to the type's nodes by GFD's product label, scheduled by
// hetsev-scheduler, with the hetsev annotations the scheduler needs,
// NVIDIA_VISIBLE_DEVICES read from the GPU index the scheduler writes in
// every container and init container, and the NVIDIA runtime class
// (Defaults.RuntimeClassName) unless the template names one.
func desiredDeployment(s *service, p gpuProfile, replicas int32) *appsv1.Deployment {
	ms := s.obj
	name := DeploymentName(ms.Name, p.gpuType.Name)
	sel := map[string]string{v1alpha1.LabelModelService: ms.Name, v1alpha1.LabelGPUType: strings.ToLower(strings.ReplaceAll(p.gpuType.Name, " ", "-"))}
	tpl := *ms.Spec.Template.DeepCopy()
	if tpl.Labels == nil {
		tpl.Labels = map[string]string{}
	}
	for k, v := range sel {
		tpl.Labels[k] = v
	}
	if tpl.Annotations == nil {
		tpl.Annotations = map[string]string{}
	}
	tpl.Annotations[v1alpha1.AnnotationModel] = ms.Spec.Model
	tpl.Annotations[v1alpha1.AnnotationGPUMemory] = fmt.Sprintf("%dMi", p.gpuMemMiB)
	tpl.Spec.SchedulerName = v1alpha1.SchedulerName
	if tpl.Spec.NodeSelector == nil {
		tpl.Spec.NodeSelector = map[string]string{}
	}
	tpl.Spec.NodeSelector[gpuinventory.LabelGPUProduct] = p.gpuType.ProductLabel
	gpuinventory.SetGPUAccess(&tpl.Spec, s.runtimeClass)
	for i := range tpl.Spec.Containers {
		c := &tpl.Spec.Containers[i]
		if i == 0 {
			if c.Resources.Requests == nil {
				c.Resources.Requests = v1.ResourceList{}
			}
			if p.spec.CPU != "" {
				c.Resources.Requests[v1.ResourceCPU] = resource.MustParse(p.spec.CPU)
			}
			if p.spec.Memory != "" {
				c.Resources.Requests[v1.ResourceMemory] = resource.MustParse(p.spec.Memory)
			}
		}
	}
	isController := true
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: ms.Namespace,
			Labels:    sel,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.Kind,
				Name: ms.Name, UID: ms.UID, Controller: &isController,
			}},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: tpl,
		},
	}
}

// ensureDeployments returns svc's Deployments, one per GPU type in spec
// order, creating or updating them as ensureDeployment does.
func (r *Reconciler) ensureDeployments(ctx context.Context, svc *service) ([]*appsv1.Deployment, error) {
	deps := make([]*appsv1.Deployment, len(svc.types))
	for i, p := range svc.types {
		d, err := r.ensureDeployment(ctx, svc, p)
		if err != nil {
			return nil, err
		}
		deps[i] = d
	}
	return deps, nil
}

// ensureDeployment creates the GPU type's Deployment with zero replicas when
// missing (the decision then scales it) and keeps its pod template in line
// with the spec without touching replicas: a hash of the desired template,
// kept in an annotation, tells when the spec changed.
func (r *Reconciler) ensureDeployment(ctx context.Context, svc *service, p gpuProfile) (*appsv1.Deployment, error) {
	want := desiredDeployment(svc, p, 0)
	key := client.ObjectKeyFromObject(want)
	hash, err := templateHash(want)
	if err != nil {
		return nil, err
	}
	want.Annotations = map[string]string{v1alpha1.AnnotationTemplateHash: hash}
	cur := &appsv1.Deployment{}
	err = r.Client.Get(ctx, key, cur)
	if apierrors.IsNotFound(err) {
		err = r.Client.Create(ctx, want)
		if apierrors.IsAlreadyExists(err) { // not in the cache yet
			return cur, r.apiReader().Get(ctx, key, cur)
		}
		if err != nil {
			return nil, fmt.Errorf("creating deployment %s: %w", key.Name, err)
		}
		return want, nil
	}
	if err != nil {
		return nil, err
	}
	if cur.Annotations[v1alpha1.AnnotationTemplateHash] == hash {
		return cur, nil
	}
	cur.Spec.Template = want.Spec.Template
	if cur.Annotations == nil {
		cur.Annotations = map[string]string{}
	}
	cur.Annotations[v1alpha1.AnnotationTemplateHash] = hash
	if err := r.Client.Update(ctx, cur); err != nil {
		return nil, fmt.Errorf("updating the template of deployment %s: %w", key.Name, err)
	}
	return cur, nil
}

func templateHash(d *appsv1.Deployment) (string, error) {
	b, err := json.Marshal(d.Spec.Template)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8]), nil
}

// setReplicas sets d's replicas with a merge patch, leaving the rest of
// the Deployment to whoever else writes it.
func (r *Reconciler) setReplicas(ctx context.Context, d *appsv1.Deployment, n int32) error {
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)))
	if err := r.Client.Patch(ctx, d.DeepCopy(), patch); err != nil {
		return fmt.Errorf("scaling deployment %s to %d: %w", d.Name, n, err)
	}
	return nil
}

func replicasOf(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

func ptr[T any](v T) *T { return &v }
