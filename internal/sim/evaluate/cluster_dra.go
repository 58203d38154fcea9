package evaluate

import (
	"fmt"
	"slices"
	"strconv"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hetsev/hetsev/internal/sim/dradriver"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/catalog"
	"github.com/hetsev/hetsev/pkg/dra"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// GPU modes of the simulated cluster (Config.GPUMode), as hetsev-scheduler's
// HetsevGPUShare gpuMode and hetsev-scaler's --gpu-mode name them.
const (
	GPUModeAnnotations = v1alpha1.GPUModeAnnotations
	GPUModeDRA         = v1alpha1.GPUModeDRA
)

// draNode is a simulated node's GPUs as GPU mode dra accounts them: the
// ResourceSlice NVIDIA's DRA driver would publish for it, and one allocated
// ResourceClaim per instance, reserved for the instance's pod. Its
// occupancy is built by pkg/dra (dra.NodeDevices.Occupancy), the code
// hetsev-scheduler and hetsev-scaler run in DRA mode.
type draNode struct {
	devices *dra.NodeDevices
	claims  []*resourcev1.ResourceClaim // in placement order
	pods    map[types.UID]*v1.Pod       // by claim UID: the pod it is reserved for
	next    int                         // claims made, for unique names
}

// newDRANode publishes count GPUs of type t on node name, as NVIDIA's DRA
// driver would (dradriver.Slice).
func newDRANode(name string, t catalog.GPUType, count int) *draNode {
	s := dradriver.Slice(name, t, count)
	nd := dra.OfProduct(dra.Inventory([]*resourcev1.ResourceSlice{s}, dra.NVIDIA), t.ProductLabel)[name]
	if nd == nil { // not reached: the slice above is shareable
		nd = &dra.NodeDevices{Node: name}
	}
	return &draNode{devices: nd, pods: map[types.UID]*v1.Pod{}}
}

// gpus is the node's occupancy from its claims, by pkg/dra.
func (n *draNode) gpus() []gpuinventory.GPU {
	occ, _, _ := n.devices.Occupancy(dra.Usages(n.claims, v1alpha1.DRADriver), n.consumers)
	return occ.GPUs
}

func (n *draNode) consumers(c *resourcev1.ResourceClaim) []*v1.Pod {
	if p := n.pods[c.UID]; p != nil {
		return []*v1.Pod{p}
	}
	return nil
}

// allocate gives in a claim of hetsev's DeviceClass for its GPU memory,
// allocated on GPU g as the upstream allocator writes it (consumedCapacity =
// the request, whole MiB, a multiple of the 1Mi step; checked against
// dra.Allocate by TestDRAClaimIsWhatUpstreamAllocates), and reserved for
// its pod, which carries in's hetsev annotations (model, busy share,
// inflation limit).
func (n *draNode) allocate(in *instance, g int) {
	n.next++
	name := fmt.Sprintf("%s-claim-%d", n.devices.Node, n.next)
	uid := types.UID(name)
	q := *resource.NewQuantity(in.demand.MemoryMiB<<20, resource.BinarySI)
	d := n.devices.Devices[g]
	c := &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: uid},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
			Name: v1alpha1.ClaimRequestName,
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: v1alpha1.DeviceClassName, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1,
				Capacity: &resourcev1.CapacityRequirements{Requests: map[resourcev1.QualifiedName]resource.Quantity{v1alpha1.DRAMemoryCapacity: q}}},
		}}}},
		Status: resourcev1.ResourceClaimStatus{
			Allocation: &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
				Request: v1alpha1.ClaimRequestName, Driver: d.Driver, Pool: d.Pool, Device: d.Name,
				ConsumedCapacity: map[resourcev1.QualifiedName]resource.Quantity{v1alpha1.DRAMemoryCapacity: q},
			}}}},
			ReservedFor: []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: name, UID: uid}},
		},
	}
	ann := map[string]string{v1alpha1.AnnotationModel: in.demand.Model}
	if in.demand.BusyShare > 0 {
		ann[v1alpha1.AnnotationBusyShare] = strconv.FormatFloat(in.demand.BusyShare, 'g', -1, 64)
	}
	if in.demand.MaxInflation > 0 {
		ann[v1alpha1.AnnotationMaxInflation] = strconv.FormatFloat(in.demand.MaxInflation, 'g', -1, 64)
	}
	ns := in.demand.Scope
	if ns == "" {
		// The replay's model identities are cluster-wide.
		ns = "default"
		ann[v1alpha1.AnnotationModelScope] = v1alpha1.ModelScopeClusterValue
	}
	n.pods[uid] = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid, Annotations: ann}}
	n.claims = append(n.claims, c)
	in.claim = c
}

// release deletes in's claim and pod.
func (n *draNode) release(in *instance) {
	if in.claim == nil {
		return
	}
	n.claims = slices.DeleteFunc(n.claims, func(c *resourcev1.ResourceClaim) bool { return c == in.claim })
	delete(n.pods, in.claim.UID)
	in.claim = nil
}
