package scaler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// DeploymentName is the Deployment serving ms on one GPU type, e.g.
// "resnet50-t4" or "resnet50-v100-32gb".
func DeploymentName(ms, gpuType string) string {
	return strings.ToLower(ms + "-" + strings.NewReplacer(" ", "-", "_", "-", ".", "-").Replace(gpuType))
}

// deploymentLabels are the labels of the Deployment (its selector and its
// pods') and of the ResourceClaimTemplate of ModelService ms on gpuType.
func deploymentLabels(ms, gpuType string) map[string]string {
	return map[string]string{v1alpha1.LabelModelService: ms, v1alpha1.LabelGPUType: strings.ToLower(strings.ReplaceAll(gpuType, " ", "-"))}
}

// desiredDeployment builds the Deployment of one GPU type: the service's pod
// template, pinned to the type's nodes by GFD's product label, scheduled by
// hetsev-scheduler, with the hetsev annotations the scheduler needs (model,
// GPU memory, busy share and inflation limit: service.demand; the model
// scope when spec.modelScope is Cluster), after the profile's cpu and
// memory and its overrides (spec.profiles[].overrides, applyOverrides), with
// hetsev-scheduler's arg gpuPool on also pinned to the GPU pool (node
// selector hetsev.io/gpu-pool=true) and tolerating the pool taint
// (gpuinventory.WithGPUPoolToleration), and its GPU:
//   - annotation mode: NVIDIA_VISIBLE_DEVICES read from the GPU index the
//     scheduler writes in every container and init container, and the
//     NVIDIA runtime class (Defaults.RuntimeClassName) unless the template
//     names one;
//   - DRA mode: the pod claim v1alpha1.PodClaimName from the type's
//     ResourceClaimTemplate (desiredClaimTemplate, named like the
//     Deployment) in every container (claimPodSpec), and neither variable
//     nor runtime class: the DRA driver injects the allocated device
//     through CDI. The claim's selector pins the device to the type (a node
//     may have GPUs of several types); the node selector stays, as the
//     scaler counts free GPUs per type on nodes by that label and the GPU
//     Operator's GFD publishes it beside the DRA driver.
func desiredDeployment(s *service, p gpuProfile, replicas int32) *appsv1.Deployment {
	ms := s.obj
	name := DeploymentName(ms.Name, p.column())
	sel := deploymentLabels(ms.Name, p.column())
	tpl := *ms.Spec.Template.DeepCopy()
	// The type's own settings first, so that the hetsev fields below
	// (scheduler, annotations, GPU access) are never overridden.
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
	applyOverrides(&tpl.Spec, p.spec.Overrides)
	if p.batchSize > 0 && len(tpl.Spec.Containers) > 0 {
		// The model server's container: the one the overrides change
		// (validated with the spec), else the first.
		i := 0
		if p.spec.Overrides != nil {
			i, _ = overrideTarget(&tpl.Spec, p.spec.Overrides, "")
		}
		setEnv(&tpl.Spec.Containers[i], v1.EnvVar{Name: v1alpha1.EnvMaxBatchSize, Value: strconv.Itoa(p.batchSize)})
	}
	if tpl.Labels == nil {
		tpl.Labels = map[string]string{}
	}
	for k, v := range sel {
		tpl.Labels[k] = v
	}
	if tpl.Annotations == nil {
		tpl.Annotations = map[string]string{}
	}
	d := s.demand(p)
	tpl.Annotations[v1alpha1.AnnotationModel] = d.Model
	if ms.Spec.ModelScope == v1alpha1.ModelScopeCluster {
		tpl.Annotations[v1alpha1.AnnotationModelScope] = v1alpha1.ModelScopeClusterValue
	} else {
		delete(tpl.Annotations, v1alpha1.AnnotationModelScope)
	}
	tpl.Annotations[v1alpha1.AnnotationGPUMemory] = fmt.Sprintf("%dMi", d.MemoryMiB)
	tpl.Annotations[v1alpha1.AnnotationBusyShare] = strconv.FormatFloat(d.BusyShare, 'f', -1, 64)
	tpl.Annotations[v1alpha1.AnnotationMaxInflation] = strconv.FormatFloat(d.MaxInflation, 'f', -1, 64)
	if p.batchSize > 0 {
		tpl.Annotations[v1alpha1.AnnotationMaxBatchSize] = strconv.Itoa(p.batchSize)
	} else {
		delete(tpl.Annotations, v1alpha1.AnnotationMaxBatchSize)
	}
	tpl.Spec.SchedulerName = v1alpha1.SchedulerName
	if tpl.Spec.NodeSelector == nil {
		tpl.Spec.NodeSelector = map[string]string{}
	}
	tpl.Spec.NodeSelector[gpuinventory.LabelGPUProduct] = p.gpuType.ProductLabel
	if s.pool {
		tpl.Spec.NodeSelector[v1alpha1.LabelGPUPool] = v1alpha1.GPUPoolValue
		tpl.Spec.Tolerations = gpuinventory.WithGPUPoolToleration(tpl.Spec.Tolerations)
	}
	if s.dra {
		claimPodSpec(&tpl.Spec, name)
	} else {
		gpuinventory.SetGPUAccess(&tpl.Spec, s.runtimeClass)
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
// order, creating or updating them as ensureDeployment does; a
// *NotControlledError when one exists that svc does not control.
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

// NotControlledError: the Deployment (or, in DRA mode, the
// ResourceClaimTemplate) a ModelService would keep for a GPU type, or the
// Service, VirtualService or DestinationRule of its traffic split, exists
// but is not controlled by that ModelService (someone's own, or one of
// another owner); hetsev-scaler neither adopts nor changes it.
type NotControlledError struct {
	Deployment string // the object's namespace/name
	Controller string // its controller's kind/name, "" when it has none
	// Kind is the object's kind in lower case; "" is "deployment".
	Kind string
}

func (e *NotControlledError) Error() string {
	by := "no controller"
	if e.Controller != "" {
		by = "controller " + e.Controller
	}
	kind := e.Kind
	if kind == "" {
		kind = "deployment"
	}
	held := "holds the service's replicas"
	if e.routing() {
		held = "writes no traffic split for the service"
	}
	return fmt.Sprintf("%s %s exists and is not controlled by this ModelService (%s): hetsev-scaler leaves it alone and %s; delete or rename it", kind, e.Deployment, by, held)
}

// routing says whether the object is one of the traffic split's.
func (e *NotControlledError) routing() bool {
	return e.Kind == "service" || e.Kind == "virtualservice" || e.Kind == "destinationrule"
}

// reason is the condition reason and event reason of a traffic-split
// object in the way, e.g. "VirtualServiceNotControlled".
func (e *NotControlledError) reason() string {
	switch e.Kind {
	case "service":
		return "ServiceNotControlled"
	case "virtualservice":
		return "VirtualServiceNotControlled"
	case "destinationrule":
		return "DestinationRuleNotControlled"
	}
	return "DeploymentNotControlled"
}

// controlledBy says whether obj's controller is ms, or returns why not.
func controlledBy(obj client.Object, ms *v1alpha1.ModelService) error {
	ref := metav1.GetControllerOf(obj)
	if ref != nil && ref.UID == ms.UID {
		return nil
	}
	e := &NotControlledError{Deployment: obj.GetNamespace() + "/" + obj.GetName()}
	switch obj.(type) {
	case *resourcev1.ResourceClaimTemplate:
		e.Kind = "resourceclaimtemplate"
	case *v1.Service:
		e.Kind = "service"
	case *networkingv1.VirtualService:
		e.Kind = "virtualservice"
	case *networkingv1.DestinationRule:
		e.Kind = "destinationrule"
	}
	if ref != nil {
		e.Controller = ref.Kind + "/" + ref.Name
	}
	return e
}

// ensureDeployment creates the GPU type's Deployment with zero replicas when
// missing (the decision then scales it; in DRA mode its
// ResourceClaimTemplate first, ensureClaimTemplate) and keeps its pod template in line
// with the spec without touching replicas: a hash of the desired template,
// kept in an annotation, tells when the spec changed. A Deployment of that
// name the ModelService does not control is a *NotControlledError. A
// template update that fails is logged and retried by the next reconcile;
// the decision goes on with the Deployment as it is.
func (r *Reconciler) ensureDeployment(ctx context.Context, svc *service, p gpuProfile) (*appsv1.Deployment, error) {
	if svc.dra {
		// Before the pod template that names it.
		if err := r.ensureClaimTemplate(ctx, svc, p); err != nil {
			return nil, err
		}
	}
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
			if err := r.apiReader().Get(ctx, key, cur); err != nil {
				return nil, err
			}
			return cur, controlledBy(cur, svc.obj)
		}
		if err != nil {
			return nil, fmt.Errorf("creating deployment %s: %w", key, err)
		}
		return want, nil
	}
	if err != nil {
		return nil, err
	}
	if err := controlledBy(cur, svc.obj); err != nil {
		return nil, err
	}
	if cur.Annotations[v1alpha1.AnnotationTemplateHash] == hash {
		return cur, nil
	}
	// The Deployment controller writes the object too (status, revision
	// annotations): on a conflict, read it afresh and apply the template
	// again.
	fresh := cur.DeepCopy()
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if fresh == nil {
			fresh = &appsv1.Deployment{}
			if err := r.apiReader().Get(ctx, key, fresh); err != nil {
				return err
			}
			if err := controlledBy(fresh, svc.obj); err != nil {
				return err
			}
		}
		fresh.Spec.Template = want.Spec.Template
		if fresh.Annotations == nil {
			fresh.Annotations = map[string]string{}
		}
		fresh.Annotations[v1alpha1.AnnotationTemplateHash] = hash
		err := r.Client.Update(ctx, fresh)
		if err == nil {
			cur = fresh
		}
		fresh = nil
		return err
	})
	var nc *NotControlledError
	if errors.As(err, &nc) {
		return nil, err
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "updating the pod template; the next reconcile retries", "deployment", klog.KObj(cur))
		r.Recorder.Eventf(svc.obj, v1.EventTypeWarning, "TemplateUpdateFailed", "updating the pod template of deployment %s: %v", key.Name, err)
	}
	return cur, nil
}

// retireRemoved retires the Deployments svc controls whose GPU type or
// instance flavor is no longer offered (spec.profiles, flavors): scaled to
// zero first (it is already out of W and of the traffic split, as it is
// not in svc), then deleted once the
// Deployment controller reports no pod left; the change of its status
// triggers the reconcile that deletes it.
func (r *Reconciler) retireRemoved(ctx context.Context, svc *service) error {
	ms := svc.obj
	var list appsv1.DeploymentList
	if err := r.Client.List(ctx, &list, client.InNamespace(ms.Namespace), client.MatchingLabels{v1alpha1.LabelModelService: ms.Name}); err != nil {
		return fmt.Errorf("listing the deployments of modelservice %s/%s: %w", ms.Namespace, ms.Name, err)
	}
	keep := map[string]bool{}
	for _, p := range svc.types {
		keep[DeploymentName(ms.Name, p.column())] = true
	}
	if svc.dra {
		left := map[string]bool{}
		for _, d := range list.Items {
			left[d.Name] = true
		}
		if err := r.retireClaimTemplates(ctx, svc, left); err != nil {
			return err
		}
	}
	for i := range list.Items {
		d := &list.Items[i]
		if keep[d.Name] || controlledBy(d, ms) != nil || !d.DeletionTimestamp.IsZero() {
			continue
		}
		switch {
		case replicasOf(d) > 0:
			if err := r.setReplicas(ctx, d, 0); err != nil {
				return err
			}
			r.Recorder.Eventf(ms, v1.EventTypeNormal, "RetiringDeployment", "GPU type %s is no longer offered (spec.profiles, flavors): scaled deployment %s to 0; it is deleted once its pods are gone", d.Labels[v1alpha1.LabelGPUType], d.Name)
		case d.Status.ObservedGeneration >= d.Generation && d.Status.Replicas == 0:
			uid := d.UID
			err := r.Client.Delete(ctx, d, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting deployment %s/%s of a removed GPU type: %w", d.Namespace, d.Name, err)
			}
			r.Recorder.Eventf(ms, v1.EventTypeNormal, "DeletedDeployment", "deleted deployment %s of GPU type %s, no longer offered (spec.profiles, flavors)", d.Name, d.Labels[v1alpha1.LabelGPUType])
		}
	}
	return nil
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
