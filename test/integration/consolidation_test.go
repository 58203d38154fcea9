package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/scaler"
)

// bindTo writes the GPU index the scheduler would choose into pod name
// and binds it to node, as hetsev-scheduler does (annotation, then
// Binding).
func (b *reconcileBed) bindTo(t *testing.T, name, node string, gpu int) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"%d"}}}`, v1alpha1.AnnotationGPUIndex, gpu)
	if _, err := b.cp.Client.CoreV1().Pods("default").Patch(b.ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := b.cp.Client.CoreV1().Pods("default").Bind(b.ctx, &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Target:     v1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// tenant creates a pod of another model bound to node's GPU gpu,
// declaring busy share busy.
func (b *reconcileBed) tenant(t *testing.T, name, model, node string, gpu int, busy string) {
	t.Helper()
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: map[string]string{
			v1alpha1.AnnotationModel: model, v1alpha1.AnnotationGPUMemory: "3Gi",
			v1alpha1.AnnotationBusyShare: busy, v1alpha1.AnnotationGPUIndex: fmt.Sprint(gpu),
		}},
		Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "c", Image: "none"}}},
	}
	if _, err := b.cp.Client.CoreV1().Pods("default").Create(b.ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// consolidationBed is the set-up of the consolidation tests on the real
// control plane (kube-apiserver, etcd, kube-controller-manager's
// ReplicaSet controller): resnet50 declares busy share 0.25 on T4 (0.25
// / 22.41 ms = 11.16 requests/s a replica) and keeps MinReplicas 2 at 5
// requests/s. Its first replica (lone) is alone on t4-2's GPU 0; its
// second (shared) shares t4-0's GPU 1 with an SSD; a BERT-large busy 0.5
// holds t4-0's GPU 0. Both replicas are Ready; the scaler runs with
// --consolidation.
func consolidationBed(t *testing.T) (b *reconcileBed, r *scaler.Reconciler, rec *record.FakeRecorder, dep, lone, shared string) {
	b = newReconcileBed(t)
	b.modelService(t, "resnet50", func(ms *v1alpha1.ModelService) {
		ms.Spec.Scaling.BusyShare = 0.25
		ms.Spec.Scaling.MinReplicas = 2
	})
	dep = scaler.DeploymentName("resnet50", "T4")
	rec = record.NewFakeRecorder(1000)
	r = b.reconciler(rec)
	r.Defaults = scaler.DefaultDefaults
	r.Defaults.Consolidation = true
	b.metrics.set(dep, 5)
	b.reconcile(t, r, "resnet50") // creates the Deployment, scales out to 2
	waitFor(b.ctx, t, 60*time.Second, "two resnet50 pods", func(context.Context) (bool, error) {
		return len(b.podsOf(t, dep)) == 2, nil
	})
	pods := b.podsOf(t, dep)
	lone, shared = pods[0].Name, pods[1].Name
	b.bindTo(t, lone, "t4-2", 0)
	b.bindTo(t, shared, "t4-0", 1)
	b.tenant(t, "ssd", "ssd", "t4-0", 1, "0.5")
	b.tenant(t, "bert", "bert-large", "t4-0", 0, "0.5")
	b.makeReady(t, dep, 2)
	return b, r, rec, dep, lone, shared
}

// startMove runs the decision that starts the move: a third replica, and
// the lone one marked with pod-deletion-cost. It returns the new pod,
// bound beside BERT-large as the scheduler would place it.
func startMove(t *testing.T, b *reconcileBed, r *scaler.Reconciler, rec *record.FakeRecorder, dep, lone, shared string) string {
	t.Helper()
	b.decide(t, r, "resnet50")
	if n := b.replicas(t, dep); n != 3 {
		t.Fatalf("move start: %d replicas, want 3 (decision %+v)", n, b.get(t, "resnet50").Status.LastDecision)
	}
	if !hasEvent(rec, "Normal ReplacementStarted") {
		t.Errorf("no ReplacementStarted event")
	}
	if cost := deletionCost(t, b, lone); cost != scaler.MovedPodDeletionCost {
		t.Fatalf("lone replica %s: pod-deletion-cost %q, want %s", lone, cost, scaler.MovedPodDeletionCost)
	}
	if d := b.get(t, "resnet50").Status.LastDecision; d == nil || d.Replacement == nil || d.Replacement.From != "T4" || d.Replacement.To != "T4" {
		t.Errorf("status.lastDecision.replacement %+v, want T4 -> T4", d)
	}
	waitFor(b.ctx, t, 60*time.Second, "the new resnet50 pod", func(context.Context) (bool, error) {
		return len(b.podsOf(t, dep)) == 3, nil
	})
	var added string
	for _, p := range b.podsOf(t, dep) {
		if p.Name != lone && p.Name != shared {
			added = p.Name
		}
	}
	b.bindTo(t, added, "t4-0", 0)
	return added
}

// deletionCost is pod name's controller.kubernetes.io/pod-deletion-cost
// ("" for none).
func deletionCost(t *testing.T, b *reconcileBed, name string) string {
	t.Helper()
	p, err := b.cp.Client.CoreV1().Pods("default").Get(b.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Annotations[v1.PodDeletionCost]
}

// TestScalerConsolidationMovesALoneReplica runs a consolidation move on
// the real control plane, the ReplicaSet controller choosing the pod to
// remove (consolidationBed). The scaler adds a third replica, marks the
// lone one with pod-deletion-cost, and once the new replica (beside
// BERT-large) is Ready, scales back to 2: the ReplicaSet removes the lone
// replica, and t4-2 is empty. Unmarked, the ReplicaSet would remove one
// of the two replicas on t4-0 (it takes a pod from the node with the
// most of its pods first).
func TestScalerConsolidationMovesALoneReplica(t *testing.T) {
	b, r, rec, dep, lone, shared := consolidationBed(t)
	startMove(t, b, r, rec, dep, lone, shared)
	// The new replica launches: nothing goes.
	b.decide(t, r, "resnet50")
	if n := b.replicas(t, dep); n != 3 {
		t.Fatalf("new replica not ready: %d replicas, want 3", n)
	}
	b.makeReady(t, dep, 3)
	b.decide(t, r, "resnet50")
	if n := b.replicas(t, dep); n != 2 {
		d := b.get(t, "resnet50").Status.LastDecision
		dep, _ := b.deployment(t, dep)
		t.Fatalf("new replica ready: %d replicas, want 2 (decision %+v, replacement %+v, deployment status %+v)", n, d, d.Replacement, dep.Status)
	}
	if !hasEvent(rec, "Normal ReplacementCompleted") {
		t.Errorf("no ReplacementCompleted event")
	}
	if c := meta.FindStatusCondition(b.get(t, "resnet50").Status.Conditions, v1alpha1.ConditionReplacement); c == nil || c.Reason != "ReplacementCompleted" {
		t.Errorf("Replacement condition %+v, want ReplacementCompleted", c)
	}
	waitFor(b.ctx, t, 60*time.Second, "the ReplicaSet removing the lone replica "+lone, func(context.Context) (bool, error) {
		left := b.podsOf(t, dep)
		return len(left) == 2 && left[0].Name != lone && left[1].Name != lone, nil
	})
}

// TestScalerConsolidationMoveTimesOut: the move's new replica never
// becomes Ready. The lone replica stays for the whole replacement
// timeout (5 min); then the move ends with a Warning event and the
// condition saying why, the scaler scales back to 2, the ReplicaSet
// removes the new pod (not Ready, so first whatever the marks), and the
// lone replica, kept, loses its mark, so that a later scale-in ranks it
// as any other.
func TestScalerConsolidationMoveTimesOut(t *testing.T) {
	b, r, rec, dep, lone, shared := consolidationBed(t)
	added := startMove(t, b, r, rec, dep, lone, shared)
	start := b.now
	for b.now.Sub(start) < 5*time.Minute {
		b.decide(t, r, "resnet50")
		if n := b.replicas(t, dep); n < 3 && b.now.Sub(start) < 5*time.Minute {
			t.Fatalf("%v into the move, the new replica not Ready: %d replicas, want 3", b.now.Sub(start), n)
		}
	}
	if n := b.replicas(t, dep); n != 2 {
		t.Fatalf("after the timeout: %d replicas, want 2 (decision %+v)", n, b.get(t, "resnet50").Status.LastDecision)
	}
	if !hasEvent(rec, "Warning ReplacementTimedOut") {
		t.Errorf("no Warning ReplacementTimedOut event")
	}
	if c := meta.FindStatusCondition(b.get(t, "resnet50").Status.Conditions, v1alpha1.ConditionReplacement); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "ReplacementTimedOut" {
		t.Errorf("Replacement condition %+v, want False, ReplacementTimedOut", c)
	}
	if cost := deletionCost(t, b, lone); cost != "" {
		t.Errorf("lone replica %s kept with pod-deletion-cost %q, want no mark", lone, cost)
	}
	waitFor(b.ctx, t, 60*time.Second, "the ReplicaSet removing the new replica "+added, func(context.Context) (bool, error) {
		left := b.podsOf(t, dep)
		return len(left) == 2 && left[0].Name != added && left[1].Name != added, nil
	})
}
