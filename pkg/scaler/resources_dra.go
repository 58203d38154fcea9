package scaler

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/dra"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// draCluster is what GPU mode dra counts free slots from: the shareable
// GPUs of one product that NVIDIA's DRA driver publishes per node, what
// every allocated claim holds on them (whoever allocated it), and the pods
// that use them. It is pkg/dra's accounting, the one hetsev-scheduler's DRA
// mode places with.
type draCluster struct {
	// nodes are the product's shareable devices per node
	// (dra.Inventory, dra.OfProduct).
	nodes  map[string]*dra.NodeDevices
	driver string // the DRA driver's name
	usages map[dra.DeviceKey][]dra.Usage
	claims map[types.NamespacedName]*resourcev1.ResourceClaim
	pods   map[types.NamespacedName]*v1.Pod
}

// newDRACluster builds the DRA view of product's GPUs from the driver's
// slices, every claim and every pod: the devices hetsev's DeviceClass
// (class; nil when it does not exist) selects and whose NoSchedule and
// NoExecute taints the scaler's claims tolerate (they carry no
// tolerations), as hetsev-scheduler's view keeps them (dra.SelectUsable).
func newDRACluster(ctx context.Context, driver dra.Driver, slices []*resourcev1.ResourceSlice, claims []*resourcev1.ResourceClaim, pods []*v1.Pod, product string, class *resourcev1.DeviceClass) *draCluster {
	driver = driver.WithDefault()
	nodes := dra.Inventory(slices, driver)
	dra.SelectUsable(ctx, nodes, class, v1alpha1.DeviceClassName, celCache(), true, nil)
	dc := &draCluster{
		nodes:  dra.OfProduct(nodes, product),
		driver: driver.Name,
		usages: dra.Usages(claims, driver.Name),
		claims: make(map[types.NamespacedName]*resourcev1.ResourceClaim, len(claims)),
		pods:   make(map[types.NamespacedName]*v1.Pod, len(pods)),
	}
	for _, c := range claims {
		dc.claims[types.NamespacedName{Namespace: c.Namespace, Name: c.Name}] = c
	}
	for _, p := range pods {
		dc.pods[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
	}
	return dc
}

// consumers are the pods in a claim's status.reservedFor (a pod the
// scheduler is binding included, before its nodeName is set).
func (dc *draCluster) consumers(claim *resourcev1.ResourceClaim) []*v1.Pod {
	return dra.ReservedPods(claim, func(ns, name string) (*v1.Pod, error) {
		return dc.pods[types.NamespacedName{Namespace: ns, Name: name}], nil
	})
}

// claimOf is the ResourceClaim behind a pod's hetsev pod claim, nil when
// it has none or it is not in the cache.
func (dc *draCluster) claimOf(p *v1.Pod) *resourcev1.ResourceClaim {
	return dra.PodClaim(p, v1alpha1.PodClaimName, func(ns, name string) (*resourcev1.ResourceClaim, error) {
		return dc.claims[types.NamespacedName{Namespace: ns, Name: name}], nil
	})
}

// occupancy is node's per-GPU occupancy in DRA mode, as hetsev-scheduler
// builds it (dra.NodeDevices.Occupancy, then dra.AddUnclaimedPod for bound
// hetsev pods whose claim holds no device): GPUs[i] is the node's i-th
// shareable device of the product. It adds the pods counted through a
// claim to counted. gpuOf gives the position of a bound pod's GPU: the
// device its claim is allocated on, else its hetsev.io/gpu-index. ok is
// false when the node publishes no shareable device of the product.
func (dc *draCluster) occupancy(node string, bound []*v1.Pod, counted map[types.UID]bool) (occ *gpuinventory.Occupancy, gpuOf func(*v1.Pod) (int, bool), ok bool) {
	nd := dc.nodes[node]
	if nd == nil || len(nd.Devices) == 0 {
		return nil, nil, false
	}
	occ, byClaim, _ := nd.Occupancy(dc.usages, dc.consumers)
	for uid := range byClaim {
		counted[uid] = true
	}
	for _, p := range bound {
		if byClaim[p.UID] || !dra.HasHetsevClaim(p) {
			continue
		}
		dra.AddUnclaimedPod(occ, nd, p, dra.RequestedMiB(dc.claimOf(p)))
	}
	gpuOf = func(p *v1.Pod) (int, bool) {
		for _, k := range dra.AllocatedDevices(dc.claimOf(p), dc.driver) {
			if i, ok := nd.Position(k); ok {
				return i, true
			}
		}
		idx, ok := gpuIndexOf(p)
		if !ok {
			return 0, false
		}
		for i, d := range nd.Devices {
			if d.Index == idx {
				return i, true
			}
		}
		return 0, false
	}
	return occ, gpuOf, true
}

// draClusterFor reads, in DRA mode, the ResourceSlices and ResourceClaims
// (cached: the manager's cache starts their informers on this first list,
// so a scaler in annotation mode never watches them) and builds the view
// of product's GPUs.
func (r *Reconciler) draClusterFor(ctx context.Context, pods []*v1.Pod, product string) (*draCluster, error) {
	var slices resourcev1.ResourceSliceList
	if err := r.Client.List(ctx, &slices, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing resourceslices: %w", err)
	}
	var claims resourcev1.ResourceClaimList
	if err := r.Client.List(ctx, &claims, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing resourceclaims: %w", err)
	}
	class := &resourcev1.DeviceClass{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: v1alpha1.DeviceClassName}, class); apierrors.IsNotFound(err) {
		class = nil
	} else if err != nil {
		return nil, fmt.Errorf("reading deviceclass %s: %w", v1alpha1.DeviceClassName, err)
	}
	return newDRACluster(ctx, r.defaults().DRADriver, pointers(slices.Items), pointers(claims.Items), pods, product, class), nil
}

// celCache compiles the DeviceClass's selectors once per process.
var celCache = sync.OnceValue(dra.DefaultCELCache)
