package scaler

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/traffic"
)

// DefaultServicePort is Triton's HTTP port.
const DefaultServicePort = v1alpha1.DefaultServicePort

func ownerRef(ms *v1alpha1.ModelService) metav1.OwnerReference {
	isController := true
	return metav1.OwnerReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.Kind, Name: ms.Name, UID: ms.UID, Controller: &isController}
}

// ensureService creates the Service that fronts every GPU type's pods of a
// ModelService when it is missing; the VirtualService splits its traffic.
// Services are read from the manager's cache, which holds only those
// labelled hetsev.io/modelservice (see ServiceCacheSelector), and a deleted
// one triggers a reconcile (the controller owns Services), so it is
// recreated.
func (r *Reconciler) ensureService(ctx context.Context, ms *v1alpha1.ModelService) error {
	key := types.NamespacedName{Namespace: ms.Namespace, Name: ms.Name}
	err := r.Client.Get(ctx, key, &v1.Service{})
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading service %s: %w", key, err)
	}
	port := ms.Spec.ServicePort
	if port == 0 {
		port = DefaultServicePort
	}
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ms.Name, Namespace: ms.Namespace, OwnerReferences: []metav1.OwnerReference{ownerRef(ms)},
			Labels: map[string]string{v1alpha1.LabelModelService: ms.Name}},
		Spec: v1.ServiceSpec{
			Selector: map[string]string{v1alpha1.LabelModelService: ms.Name},
			Ports:    []v1.ServicePort{{Name: "http", Port: port, TargetPort: intstr.FromInt32(port)}},
		},
	}
	// AlreadyExists: one without the label (the cache does not hold it),
	// or one not in the cache yet.
	if err := r.Client.Create(ctx, svc); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating service %s: %w", key, err)
	}
	return nil
}

// splitTraffic writes capacity-weighted routes: each GPU type gets requests
// in proportion to T_i times its ready instances (its desired instances
// while none is ready yet), and records the outcome in status.
func (r *Reconciler) splitTraffic(ctx context.Context, svc *service, deps []*appsv1.Deployment, st *v1alpha1.ModelServiceStatus) {
	if r.Traffic == nil {
		return
	}
	ms := svc.obj
	if err := r.ensureService(ctx, ms); err != nil {
		setCondition(st, v1alpha1.ConditionTrafficSplit, metav1.ConditionFalse, "ServiceError", err.Error(), ms.Generation)
		return
	}
	ready := int32(0)
	for _, d := range deps {
		ready += d.Status.ReadyReplicas
	}
	shares := make([]traffic.Share, len(svc.types))
	for i, p := range svc.types {
		n := deps[i].Status.ReadyReplicas
		if ready == 0 {
			n = replicasOf(deps[i])
		}
		shares[i] = traffic.Share{GPUType: p.gpuType.Name, Labels: deps[i].Spec.Selector.MatchLabels, CapacityRPS: p.spec.ThroughputRPS * float64(n)}
	}
	host := fmt.Sprintf("%s.%s.svc.cluster.local", ms.Name, ms.Namespace)
	weights, err := r.Traffic.Apply(ctx, ms.Namespace, ms.Name, host, ownerRef(ms), shares)
	switch {
	case errors.Is(err, traffic.ErrIstioMissing):
		setCondition(st, v1alpha1.ConditionTrafficSplit, metav1.ConditionFalse, "IstioNotInstalled", err.Error(), ms.Generation)
		return
	case err != nil:
		klog.FromContext(ctx).Error(err, "writing traffic split", "modelservice", klog.KObj(ms))
		setCondition(st, v1alpha1.ConditionTrafficSplit, metav1.ConditionFalse, "WriteFailed", err.Error(), ms.Generation)
		return
	case weights == nil:
		setCondition(st, v1alpha1.ConditionTrafficSplit, metav1.ConditionFalse, "NoCapacity", "no instance of any GPU type yet", ms.Generation)
		return
	}
	st.TrafficWeights = map[string]int32{}
	var parts []string
	for i, p := range svc.types {
		st.TrafficWeights[p.gpuType.Name] = weights[i]
		parts = append(parts, fmt.Sprintf("%s %d%%", p.gpuType.Name, weights[i]))
	}
	sort.Strings(parts)
	setCondition(st, v1alpha1.ConditionTrafficSplit, metav1.ConditionTrue, "CapacityWeighted", "VirtualService "+ms.Name+": "+strings.Join(parts, ", "), ms.Generation)
}
