package provider

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/dra"
)

// objectNames lists the objects of kind k that selector selects in
// namespace (all namespaces when empty), sorted by namespace and name.
func (p *Provider) objectNames(k objectKind, namespace string, selector labels.Selector) ([]types.NamespacedName, error) {
	var (
		names []types.NamespacedName
		err   error
	)
	switch {
	case k == kindPod && p.pods != nil:
		names, err = listNames(namespace == "", func() ([]*corev1.Pod, error) { return p.pods.List(selector) },
			func() ([]*corev1.Pod, error) { return p.pods.Pods(namespace).List(selector) })
	case k == kindDeployment && p.deployments != nil:
		names, err = listNames(namespace == "", func() ([]*appsv1.Deployment, error) { return p.deployments.List(selector) },
			func() ([]*appsv1.Deployment, error) { return p.deployments.Deployments(namespace).List(selector) })
	case k == kindModelService && p.services != nil:
		names, err = listNames(namespace == "", func() ([]*metav1.PartialObjectMetadata, error) { return p.services.List(selector) },
			func() ([]*metav1.PartialObjectMetadata, error) { return p.services.Namespace(namespace).List(selector) })
	}
	if err != nil {
		return nil, err
	}
	sort.Slice(names, func(i, j int) bool { return names[i].String() < names[j].String() })
	return names, nil
}

// listNames lists objects from all namespaces or from one, and returns
// their names.
func listNames[T metav1.Object](allNamespaces bool, all, one func() ([]T, error)) ([]types.NamespacedName, error) {
	list := one
	if allNamespaces {
		list = all
	}
	objs, err := list()
	if err != nil {
		return nil, err
	}
	names := make([]types.NamespacedName, 0, len(objs))
	for _, o := range objs {
		names = append(names, types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()})
	}
	return names, nil
}

// podGPU returns the GPU of a pod, the keys of its DCGM series: its node
// (spec.nodeName), and the hetsev.io/gpu-index and hetsev.io/gpu-uuid
// annotations hetsev-scheduler writes (the UUID in GPU mode dra). Without
// the index annotation, and only with WithDRA (GPU mode dra), the GPU is
// read from the pod's ResourceClaims through dra.PodGPU: the claims of all
// the pod's spec.resourceClaims entries, their allocation results of
// driver v1alpha1.DRADriver, and the index and uuid attributes of that
// device in the ResourceSlice of the pod's node; a pod whose claims hold
// several GPUs gets the lowest index. An annotation that is present but
// unreadable is an error, not a reason to read the claims. Every failure
// wraps adapter.ErrNoData. The sources join by the UUID first.
func (p *Provider) podGPU(name types.NamespacedName) (adapter.GPU, error) {
	if p.pods == nil {
		return adapter.GPU{}, fmt.Errorf("no pod lister: %w", adapter.ErrNoData)
	}
	pod, err := p.pods.Pods(name.Namespace).Get(name.Name)
	if apierrors.IsNotFound(err) {
		return adapter.GPU{}, fmt.Errorf("pod %s not found: %w", name, adapter.ErrNoData)
	}
	if err != nil {
		return adapter.GPU{}, err
	}
	if pod.Spec.NodeName == "" {
		return adapter.GPU{}, fmt.Errorf("pod %s is not bound to a node: %w", name, adapter.ErrNoData)
	}
	raw, ok := pod.Annotations[v1alpha1.AnnotationGPUIndex]
	if !ok {
		if p.claims == nil || p.slices == nil {
			return adapter.GPU{}, fmt.Errorf("pod %s has no %s annotation: %w", name, v1alpha1.AnnotationGPUIndex, adapter.ErrNoData)
		}
		id, err := p.claimedGPU(pod)
		if err != nil {
			return adapter.GPU{}, fmt.Errorf("pod %s has no %s annotation, and its GPU cannot be read from its ResourceClaims: %v: %w",
				name, v1alpha1.AnnotationGPUIndex, err, adapter.ErrNoData)
		}
		return adapter.GPU{Node: pod.Spec.NodeName, Index: id.Index, UUID: id.UUID}, nil
	}
	gpu, err := strconv.Atoi(strings.TrimSpace(raw))
	if err != nil || gpu < 0 {
		return adapter.GPU{}, fmt.Errorf("pod %s: bad %s %q: %w", name, v1alpha1.AnnotationGPUIndex, raw, adapter.ErrNoData)
	}
	return adapter.GPU{Node: pod.Spec.NodeName, Index: gpu, UUID: pod.Annotations[v1alpha1.AnnotationGPUUUID]}, nil
}

// claimedGPU is the GPU the pod holds through its ResourceClaims
// (dra.PodGPU) on its node.
func (p *Provider) claimedGPU(pod *corev1.Pod) (dra.GPUID, error) {
	if p.draSynced != nil && !p.draSynced() {
		return dra.GPUID{}, errors.New("the ResourceClaim and ResourceSlice caches have not synced yet")
	}
	slices, err := p.slices.List(labels.Everything())
	if err != nil {
		return dra.GPUID{}, fmt.Errorf("listing ResourceSlices: %w", err)
	}
	getClaim := func(namespace, name string) (*resourceapi.ResourceClaim, error) {
		c, err := p.claims.ResourceClaims(namespace).Get(name)
		if apierrors.IsNotFound(err) {
			return nil, errors.New("not found")
		}
		return c, err
	}
	return dra.PodGPU(pod, getClaim, slices, p.draDriver)
}

// deploymentPods returns the pods a Deployment's selector selects in its
// namespace, sorted by name.
func (p *Provider) deploymentPods(name types.NamespacedName) ([]*corev1.Pod, error) {
	if p.deployments == nil || p.pods == nil {
		return nil, fmt.Errorf("no listers: %w", adapter.ErrNoData)
	}
	d, err := p.deployments.Deployments(name.Namespace).Get(name.Name)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("deployment %s not found: %w", name, adapter.ErrNoData)
	}
	if err != nil {
		return nil, err
	}
	if d.Spec.Selector == nil {
		return nil, fmt.Errorf("deployment %s has no selector: %w", name, adapter.ErrNoData)
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || sel.Empty() {
		return nil, fmt.Errorf("deployment %s: unusable selector: %w", name, adapter.ErrNoData)
	}
	return p.podsMatching(name.Namespace, sel)
}

// modelServicePods returns the pods labelled hetsev.io/modelservice=<name>
// in the ModelService's namespace, sorted by name.
func (p *Provider) modelServicePods(name types.NamespacedName) ([]*corev1.Pod, error) {
	if p.pods == nil {
		return nil, fmt.Errorf("no pod lister: %w", adapter.ErrNoData)
	}
	if p.services != nil && (p.servicesSynced == nil || p.servicesSynced()) {
		if _, err := p.services.Namespace(name.Namespace).Get(name.Name); apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("modelservice %s not found: %w", name, adapter.ErrNoData)
		} else if err != nil {
			return nil, err
		}
	}
	return p.podsMatching(name.Namespace, labels.SelectorFromSet(labels.Set{v1alpha1.LabelModelService: name.Name}))
}

// podsMatching lists the pods sel selects in namespace, sorted by name. The
// pods are the lister's: read only.
func (p *Provider) podsMatching(namespace string, sel labels.Selector) ([]*corev1.Pod, error) {
	pods, err := p.pods.Pods(namespace).List(sel)
	if err != nil {
		return nil, err
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	return pods, nil
}
