package demo

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/hetsev/hetsev/internal/sim/dradriver"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/catalog"
)

// auditPod is a running hetsev pod of model on node with hetsev.io/gpu-index
// index, whose claim entry "gpu" names claim <name>-gpu.
func auditPod(name, model, node, index string) *v1.Pod {
	claim := name + "-gpu"
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name),
			Annotations: map[string]string{v1alpha1.AnnotationModel: model, v1alpha1.AnnotationGPUIndex: index}},
		Spec:   v1.PodSpec{NodeName: node, ResourceClaims: []v1.PodResourceClaim{{Name: v1alpha1.PodClaimName, ResourceClaimName: &claim}}},
		Status: v1.PodStatus{Phase: v1.PodRunning},
	}
}

// auditClaim is pod's claim allocated on node's device with consumed
// memory ("" consumes no capacity: the device held whole), reserved for
// the pod; device "" leaves it unallocated.
func auditClaim(pod *v1.Pod, node, device, consumed string) *resourcev1.ResourceClaim {
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: pod.Name + "-gpu", Namespace: "default"}}
	if device == "" {
		return c
	}
	r := resourcev1.DeviceRequestAllocationResult{Request: v1alpha1.ClaimRequestName, Driver: v1alpha1.DRADriver, Pool: node, Device: device}
	if consumed != "" {
		r.ConsumedCapacity = map[resourcev1.QualifiedName]resource.Quantity{v1alpha1.DRAMemoryCapacity: resource.MustParse(consumed)}
	}
	c.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{r}}}
	c.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: pod.Name, UID: pod.UID}}
	return c
}

func TestClaimAudit(t *testing.T) {
	v100 := catalog.GPUType{Name: "V100-32GB", ProductLabel: "Tesla-V100-SXM2-32GB", MemoryMiB: 32768}
	a := auditPod("a", "resnet50", "v100-0", "0")
	b := auditPod("b", "ssd", "v100-0", "0")
	a2 := auditPod("a2", "resnet50", "v100-0", "0")
	cases := []struct {
		name string
		objs []runtime.Object
		want ClaimAudit
	}{
		{"two models within capacity", []runtime.Object{a, b,
			auditClaim(a, "v100-0", "gpu-0", "10Gi"), auditClaim(b, "v100-0", "gpu-0", "12Gi")},
			ClaimAudit{Audits: 1, ClaimsChecked: 2, PodsChecked: 2}},
		{"exactly the capacity", []runtime.Object{a, b,
			auditClaim(a, "v100-0", "gpu-0", "10Gi"), auditClaim(b, "v100-0", "gpu-0", "22528Mi")},
			ClaimAudit{Audits: 1, ClaimsChecked: 2, PodsChecked: 2}},
		{"one MiB too many", []runtime.Object{a, b,
			auditClaim(a, "v100-0", "gpu-0", "10Gi"), auditClaim(b, "v100-0", "gpu-0", "22529Mi")},
			ClaimAudit{Audits: 1, ClaimsChecked: 2, PodsChecked: 2, DeviceOvercommits: 1}},
		{"a device held whole shared", []runtime.Object{a, b,
			auditClaim(a, "v100-0", "gpu-0", ""), auditClaim(b, "v100-0", "gpu-0", "1Gi")},
			ClaimAudit{Audits: 1, ClaimsChecked: 2, PodsChecked: 2, DeviceOvercommits: 1}},
		{"same model on one GPU", []runtime.Object{a, a2,
			auditClaim(a, "v100-0", "gpu-0", "1Gi"), auditClaim(a2, "v100-0", "gpu-0", "1Gi")},
			ClaimAudit{Audits: 1, ClaimsChecked: 2, PodsChecked: 2, IdenticalModelColocations: 1}},
		{"gpu-index not the claim's device", []runtime.Object{a, auditClaim(a, "v100-0", "gpu-1", "1Gi")},
			ClaimAudit{Audits: 1, ClaimsChecked: 1, PodsChecked: 1, GPUIndexMismatches: 1}},
		{"running without allocation", []runtime.Object{a, auditClaim(a, "v100-0", "", "")},
			ClaimAudit{Audits: 1, PodsChecked: 1, RunningWithoutAllocation: 1}},
		{"running without claim", []runtime.Object{a},
			ClaimAudit{Audits: 1, PodsChecked: 1, RunningWithoutAllocation: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := append([]runtime.Object{dradriver.Slice("v100-0", v100, 2)}, tc.objs...)
			var got ClaimAudit
			if err := got.Check(context.Background(), fake.NewClientset(objs...), "default"); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("audit %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestClaimAuditCountsIdentities: two resnet50 pods of two namespaces on
// one device are two model identities (the scheduler allows them), not a
// co-location; declared cluster-wide (hetsev.io/model-scope=cluster) they
// are one identity twice, a co-location.
func TestClaimAuditCountsIdentities(t *testing.T) {
	v100 := catalog.GPUType{Name: "V100-32GB", ProductLabel: "Tesla-V100-SXM2-32GB", MemoryMiB: 32768}
	for _, c := range []struct {
		name    string
		cluster bool
		colocs  int
	}{{"namespace scope", false, 0}, {"cluster scope", true, 1}} {
		t.Run(c.name, func(t *testing.T) {
			a := auditPod("a", "resnet50", "v100-0", "0")
			b := auditPod("b", "resnet50", "v100-0", "0")
			b.Namespace = "team-b"
			if c.cluster {
				a.Annotations[v1alpha1.AnnotationModelScope] = v1alpha1.ModelScopeClusterValue
				b.Annotations[v1alpha1.AnnotationModelScope] = v1alpha1.ModelScopeClusterValue
			}
			ca, cb := auditClaim(a, "v100-0", "gpu-0", "1Gi"), auditClaim(b, "v100-0", "gpu-0", "1Gi")
			cb.Namespace = "team-b"
			var got ClaimAudit
			client := fake.NewClientset(dradriver.Slice("v100-0", v100, 2), a, b, ca, cb)
			if err := got.Check(context.Background(), client, metav1.NamespaceAll); err != nil {
				t.Fatal(err)
			}
			want := ClaimAudit{Audits: 1, ClaimsChecked: 2, PodsChecked: 2, IdenticalModelColocations: c.colocs}
			if got != want {
				t.Errorf("audit %+v, want %+v", got, want)
			}
		})
	}
}
