package scaler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/dra"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// The GPU pool in DRA mode. The pool's NoSchedule node taint keeps pods
// off its nodes, but a ResourceClaim is allocated from the ResourceSlices
// whatever pod it is for: the default scheduler can give a claim of
// NVIDIA's own DeviceClass a GPU that hetsev shares. A DeviceTaintRule per
// pool node (resource.k8s.io/v1beta2, Kubernetes 1.36 with the rules
// enabled) taints that node's devices of NVIDIA's driver with
// gpuinventory.PoolDeviceTaint, which only hetsev's claims tolerate
// (gpuinventory.GPUClaimSpec).

// LabelPoolDeviceTaint marks the DeviceTaintRules hetsev-scaler keeps; its
// value is the node's name when it fits a label value.
const LabelPoolDeviceTaint = v1alpha1.GroupName + "/pool-device-taint"

// PoolTaintRuleName is the DeviceTaintRule of pool node node:
// "hetsev-gpu-pool-<node>", or a hash of the node's name when that would
// exceed a name's 253 characters.
func PoolTaintRuleName(node string) string {
	name := "hetsev-gpu-pool-" + node
	if len(name) <= 253 {
		return name
	}
	sum := sha256.Sum256([]byte(node))
	return "hetsev-gpu-pool-" + hex.EncodeToString(sum[:16])
}

// desiredPoolTaintRule taints every device the DRA driver named driver
// publishes in node's pool (NVIDIA's and HAMi's drivers name a node's pool
// after the node) with the pool's device taint. The node owns it, so it
// goes with the node.
func desiredPoolTaintRule(node *v1.Node, driver string) *resourcev1beta2.DeviceTaintRule {
	pool := node.Name
	t := gpuinventory.PoolDeviceTaint()
	lbl := map[string]string{"app.kubernetes.io/managed-by": v1alpha1.ScalerName, "app.kubernetes.io/part-of": "hetsev", LabelPoolDeviceTaint: ""}
	if len(node.Name) <= 63 {
		lbl[LabelPoolDeviceTaint] = node.Name
	}
	return &resourcev1beta2.DeviceTaintRule{
		TypeMeta: metav1.TypeMeta{APIVersion: resourcev1beta2.SchemeGroupVersion.String(), Kind: "DeviceTaintRule"},
		ObjectMeta: metav1.ObjectMeta{Name: PoolTaintRuleName(node.Name), Labels: lbl,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}},
		Spec: resourcev1beta2.DeviceTaintRuleSpec{
			DeviceSelector: &resourcev1beta2.DeviceTaintSelector{Driver: &driver, Pool: &pool},
			Taint:          resourcev1beta2.DeviceTaint{Key: t.Key, Value: t.Value, Effect: resourcev1beta2.DeviceTaintEffect(t.Effect)},
		},
	}
}

// PoolTaintReconciler keeps a DeviceTaintRule for every node of the GPU
// pool (gpuinventory.InGPUPool) and none for other nodes. It runs in
// hetsev-scaler in GPU mode dra with the pool on, when the API server
// serves DeviceTaintRules.
type PoolTaintReconciler struct {
	Client client.Client
	// Driver is the DRA driver whose devices the rules taint; the zero
	// Driver is dra.NVIDIA.
	Driver dra.Driver
}

// Reconcile implements reconcile.Reconciler for one node: server-side
// apply of its rule while it is in the pool, deletion of the rule
// otherwise (a node that left the pool or is gone).
func (r *PoolTaintReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &v1.Node{}
	err := r.Client.Get(ctx, req.NamespacedName, node)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	if err == nil && node.DeletionTimestamp.IsZero() && gpuinventory.InGPUPool(node) {
		rule := desiredPoolTaintRule(node, r.Driver.WithDefault().Name)
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rule)
		if err != nil {
			return reconcile.Result{}, err
		}
		u := &unstructured.Unstructured{Object: obj}
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(u.Object, "status")
		if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
			return reconcile.Result{}, fmt.Errorf("applying deviceTaintRule %s: %w", rule.Name, err)
		}
		return reconcile.Result{}, nil
	}
	rule := &resourcev1beta2.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: PoolTaintRuleName(req.Name)}}
	if err := r.Client.Delete(ctx, rule); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("deleting deviceTaintRule %s: %w", rule.Name, err)
	}
	klog.FromContext(ctx).V(4).Info("node outside the GPU pool: no device taint rule", "node", req.Name)
	return reconcile.Result{}, nil
}

// SetupWithManager registers r: every node event, and every change to a
// rule it keeps (mapped back to its node), reconciles that node.
func (r *PoolTaintReconciler) SetupWithManager(mgr manager.Manager) error {
	toNode := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		for _, ref := range o.GetOwnerReferences() {
			if ref.Kind == "Node" && ref.APIVersion == "v1" {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: ref.Name}}}
			}
		}
		return nil
	})
	return builder.ControllerManagedBy(mgr).
		Named("gpu-pool-device-taints").
		For(&v1.Node{}).
		Watches(&resourcev1beta2.DeviceTaintRule{}, toNode).
		Complete(r)
}

// PoolTaintRuleSelector selects the DeviceTaintRules the scaler caches:
// those it keeps.
func PoolTaintRuleSelector() labels.Selector {
	req, err := labels.NewRequirement(LabelPoolDeviceTaint, "exists", nil)
	if err != nil {
		panic(err) // a constant, valid label key
	}
	return labels.NewSelector().Add(*req)
}
