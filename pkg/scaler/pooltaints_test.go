package scaler

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// TestPoolNodesGetADeviceTaintRule: a node of the GPU pool gets a
// DeviceTaintRule tainting its pool of NVIDIA's driver with the pool's
// device taint, owned by the node; the rule goes when the node leaves the
// pool and when it is gone. hetsev's claims tolerate the taint, a claim
// of another DeviceClass without the toleration does not.
func TestPoolNodesGetADeviceTaintRule(t *testing.T) {
	ctx := context.Background()
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-7", UID: "n7", Labels: map[string]string{v1alpha1.LabelGPUPool: v1alpha1.GPUPoolValue}}}
	c := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(n).Build()
	r := &PoolTaintReconciler{Client: c}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: n.Name}}
	rule := func() (*resourcev1beta2.DeviceTaintRule, error) {
		got := &resourcev1beta2.DeviceTaintRule{}
		return got, c.Get(ctx, types.NamespacedName{Name: PoolTaintRuleName(n.Name)}, got)
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	got, err := rule()
	if err != nil {
		t.Fatalf("no rule for a pool node: %v", err)
	}
	sel, taint := got.Spec.DeviceSelector, got.Spec.Taint
	if sel == nil || sel.Driver == nil || *sel.Driver != v1alpha1.DRADriver || sel.Pool == nil || *sel.Pool != n.Name || sel.Device != nil {
		t.Errorf("selector %+v, want driver %s pool %s", sel, v1alpha1.DRADriver, n.Name)
	}
	if taint.Key != v1alpha1.TaintGPUPool || taint.Value != v1alpha1.GPUPoolValue || taint.Effect != resourcev1beta2.DeviceTaintEffectNoSchedule {
		t.Errorf("taint %+v, want %s=%s:NoSchedule", taint, v1alpha1.TaintGPUPool, v1alpha1.GPUPoolValue)
	}
	if refs := got.OwnerReferences; len(refs) != 1 || refs[0].Kind != "Node" || refs[0].UID != n.UID {
		t.Errorf("owner references %+v, want the node", refs)
	}
	if !PoolTaintRuleSelector().Matches(labels.Set(got.Labels)) {
		t.Errorf("labels %v: the scaler's cache would not see the rule", got.Labels)
	}

	// Who tolerates it.
	pt := gpuinventory.PoolDeviceTaint()
	hetsev := gpuinventory.GPUClaimSpec(2048, nil).Devices.Requests[0].Exactly.Tolerations
	if len(hetsev) != 1 || !resourceclaim.ToleratesTaint(hetsev[0], pt) {
		t.Errorf("hetsev's claim tolerations %+v do not tolerate %+v", hetsev, pt)
	}
	other := resourcev1.DeviceToleration{Key: "example.com/other", Operator: resourcev1.DeviceTolerationOpExists}
	if resourceclaim.ToleratesTaint(other, pt) {
		t.Errorf("a toleration of another key tolerates the pool's taint")
	}

	// The node leaves the pool.
	delete(n.Labels, v1alpha1.LabelGPUPool)
	if err := c.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := rule(); !apierrors.IsNotFound(err) {
		t.Errorf("rule of a node outside the pool: %v, want NotFound", err)
	}
	// A node that is gone keeps none either (and reconciling it again is no error).
	if err := c.Delete(ctx, n); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Errorf("reconciling a deleted node: %v", err)
	}
	if name := PoolTaintRuleName(strings.Repeat("n", 250)); len(name) > 253 {
		t.Errorf("rule name of a long node name: %d characters", len(name))
	}
}
