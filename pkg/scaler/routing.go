package scaler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	networkingapi "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/traffic"
)

// DefaultServicePort is Triton's HTTP port.
const DefaultServicePort = v1alpha1.DefaultServicePort

func ownerRef(ms *v1alpha1.ModelService) metav1.OwnerReference {
	isController := true
	return metav1.OwnerReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.Kind, Name: ms.Name, UID: ms.UID, Controller: &isController}
}

// ensureService keeps the Service that fronts every GPU type's pods of a
// ModelService (ensureOwned); the VirtualService splits its traffic. Its
// one port is spec.servicePort, named and with the appProtocol of
// spec.protocol ("http" or "grpc": Istio reads the protocol from them).
// Services are read from the manager's cache, which holds only those
// labelled hetsev.io/modelservice (RoutingCacheSelector), and a deleted or
// edited one triggers a reconcile (the controller owns Services), so it is
// recreated or restored.
//
// A Service whose ports differ from that one port (spec.servicePort or
// spec.protocol changed) gets its port list replaced first, by a merge
// patch: a server-side apply would keep the old port beside the new one,
// as the Service was created by an update of the scaler (Create), which
// owns it, not by its apply.
func (r *Reconciler) ensureService(ctx context.Context, ms *v1alpha1.ModelService) error {
	spec := corev1ac.ServiceSpec().
		WithSelector(map[string]string{v1alpha1.LabelModelService: ms.Name}).
		WithPorts(servicePort(ms))
	want, err := r.desiredOwned(ms, &v1.Service{}, spec)
	if err != nil {
		return err
	}
	if err := r.replacePorts(ctx, ms, want); err != nil {
		return err
	}
	return r.ensureOwned(ctx, ms, &v1.Service{}, want)
}

// servicePort is the one port of ms's Service: spec.servicePort (default
// DefaultServicePort) to the same target port, named and with the
// appProtocol of spec.protocol (default http).
func servicePort(ms *v1alpha1.ModelService) *corev1ac.ServicePortApplyConfiguration {
	port := ms.Spec.ServicePort
	if port == 0 {
		port = DefaultServicePort
	}
	proto := ms.Spec.Protocol
	if proto == "" {
		proto = v1alpha1.ProtocolHTTP
	}
	return corev1ac.ServicePort().WithName(proto).WithAppProtocol(proto).WithProtocol(v1.ProtocolTCP).WithPort(port).WithTargetPort(intstr.FromInt32(port))
}

// replacePorts sets the ports of ms's Service, when it exists, is
// controlled by ms and has ports other than want's, to want's with a JSON
// merge patch (which replaces the list). A missing or foreign Service is
// left to ensureOwned.
func (r *Reconciler) replacePorts(ctx context.Context, ms *v1alpha1.ModelService, want *unstructured.Unstructured) error {
	cur := &v1.Service{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), cur); err != nil {
		return client.IgnoreNotFound(err)
	}
	if controlledBy(cur, ms) != nil {
		return nil
	}
	ports, _, _ := unstructured.NestedSlice(want.Object, "spec", "ports")
	// Compared as JSON values, as holds compares (numbers as float64).
	b, err := json.Marshal(cur.Spec.Ports)
	if err != nil {
		return err
	}
	var have []any
	if err := json.Unmarshal(b, &have); err != nil {
		return err
	}
	if contains(have, ports) {
		return nil
	}
	b, err = json.Marshal(map[string]any{"spec": map[string]any{"ports": ports}})
	if err != nil {
		return err
	}
	if err := r.Client.Patch(ctx, cur, client.RawPatch(types.MergePatchType, b), client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("replacing the ports of service %s/%s: %w", cur.Namespace, cur.Name, err)
	}
	return nil
}

// ensureRoutes keeps the VirtualService and DestinationRule of a
// ModelService (ensureOwned) with the specs traffic.Routes gives: the
// DestinationRule first, as the VirtualService names its subsets, and
// neither past one that is not the ModelService's.
func (r *Reconciler) ensureRoutes(ctx context.Context, ms *v1alpha1.ModelService, vs *networkingapi.VirtualService, dr *networkingapi.DestinationRule) error {
	want, err := r.desiredOwned(ms, &networkingv1.DestinationRule{}, dr)
	if err != nil {
		return err
	}
	if err := r.ensureOwned(ctx, ms, &networkingv1.DestinationRule{}, want); err != nil {
		return err
	}
	if want, err = r.desiredOwned(ms, &networkingv1.VirtualService{}, vs); err != nil {
		return err
	}
	return r.ensureOwned(ctx, ms, &networkingv1.VirtualService{}, want)
}

// istioMissing says whether err means the Istio networking CRDs are not
// installed: no REST mapping for the kind, or a 404 that names no object
// (the API itself is not served).
func istioMissing(err error) bool {
	if meta.IsNoMatchError(err) {
		return true
	}
	var st apierrors.APIStatus
	if apierrors.IsNotFound(err) && errors.As(err, &st) {
		d := st.Status().Details
		return d == nil || d.Name == ""
	}
	return false
}

// splitTraffic writes capacity-weighted routes: each column (a GPU type,
// or a light flavor of one) gets requests in proportion to its capacity
// per instance (routedRPS) times its ready instances (its desired
// instances while none is ready yet), and records the outcome in status. A Service,
// VirtualService or DestinationRule of the ModelService's name that it
// does not control is left alone: TrafficSplit is False naming it, with a
// Warning event when that is news.
func (r *Reconciler) splitTraffic(ctx context.Context, svc *service, deps []*appsv1.Deployment, st *v1alpha1.ModelServiceStatus) {
	if !r.TrafficSplit {
		return
	}
	ms := svc.obj
	if err := r.ensureService(ctx, ms); err != nil {
		if !r.reportNotControlled(ms, st, err) {
			setCondition(st, v1alpha1.ConditionTrafficSplit, metav1.ConditionFalse, "ServiceError", err.Error(), ms.Generation)
		}
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
		shares[i] = traffic.Share{GPUType: p.column(), Labels: deps[i].Spec.Selector.MatchLabels, CapacityRPS: p.routedRPS() * float64(n)}
	}
	host := fmt.Sprintf("%s.%s.svc.%s", ms.Name, ms.Namespace, r.clusterDomain())
	vs, dr, weights, ok := traffic.Routes(host, shares)
	if !ok {
		// Nothing serves yet: the routes stay as they are.
		setCondition(st, v1alpha1.ConditionTrafficSplit, metav1.ConditionFalse, "NoCapacity", "no instance of any GPU type yet", ms.Generation)
		return
	}
	err := r.ensureRoutes(ctx, ms, vs, dr)
	switch {
	case r.reportNotControlled(ms, st, err):
		return
	case istioMissing(err):
		setCondition(st, v1alpha1.ConditionTrafficSplit, metav1.ConditionFalse, "IstioNotInstalled", fmt.Sprintf("Istio networking CRDs are not installed: %v", err), ms.Generation)
		return
	case err != nil:
		klog.FromContext(ctx).Error(err, "writing traffic split", "modelservice", klog.KObj(ms))
		setCondition(st, v1alpha1.ConditionTrafficSplit, metav1.ConditionFalse, "WriteFailed", err.Error(), ms.Generation)
		return
	}
	st.TrafficWeights = map[string]int32{}
	var parts []string
	for i, p := range svc.types {
		st.TrafficWeights[p.column()] = weights[i]
		parts = append(parts, fmt.Sprintf("%s %d%%", p.column(), weights[i]))
	}
	sort.Strings(parts)
	setCondition(st, v1alpha1.ConditionTrafficSplit, metav1.ConditionTrue, "CapacityWeighted", "VirtualService "+ms.Name+": "+strings.Join(parts, ", "), ms.Generation)
}

// routedRPS is the capacity per instance, in requests/s, by which the
// traffic split weighs p's column: the throughput the decision counts for
// it, T_i, or busyShare / L_i for a declared busy share, f x T_i for a
// light flavor f. Every column is weighed by the same measure, so an
// instance gets the load its busy share was planned for.
func (p gpuProfile) routedRPS() float64 {
	return p.throughputRPS
}

// reportNotControlled, when err is a *NotControlledError, sets
// TrafficSplit False naming the object (reason e.g.
// ServiceNotControlled), records a Warning event when that is news, and
// says it did.
func (r *Reconciler) reportNotControlled(ms *v1alpha1.ModelService, st *v1alpha1.ModelServiceStatus, err error) bool {
	var nc *NotControlledError
	if !errors.As(err, &nc) {
		return false
	}
	reason := nc.reason()
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionTrafficSplit); c == nil || c.Reason != reason || c.Message != nc.Error() {
		r.Recorder.Eventf(ms, v1.EventTypeWarning, reason, "%s", nc.Error())
	}
	setCondition(st, v1alpha1.ConditionTrafficSplit, metav1.ConditionFalse, reason, nc.Error(), ms.Generation)
	return true
}

// DefaultClusterDomain is --cluster-domain's default, the kubelet's
// default clusterDomain.
const DefaultClusterDomain = "cluster.local"

func (r *Reconciler) clusterDomain() string {
	if r.ClusterDomain == "" {
		return DefaultClusterDomain
	}
	return r.ClusterDomain
}
