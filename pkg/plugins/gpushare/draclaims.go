package gpushare

import (
	"context"
	"fmt"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/dra"
)

// The pod's other ResourceClaims. The DRA profile turns the upstream
// DynamicResources plugin off, so a hetsev pod's claims besides
// v1alpha1.PodClaimName (a NIC, a device of another DeviceClass or driver)
// are allocated here too, as upstream would, with the structured allocator
// on all ResourceSlices; without that the kubelet never starts the pod:
//
//   - PreFilter reads them: a claim not created yet from its template, not
//     found or being deleted leaves the pod Pending with that reason;
//   - Filter keeps nodes that every allocated one's nodeSelector admits and
//     where the allocator allocates all unallocated ones together;
//   - Reserve allocates them on the chosen node after the GPU claim (whose
//     pending allocation the allocator then counts) and signals each to
//     the ResourceClaimTracker as pending;
//   - PreBind writes each claim's allocation and the pod in reservedFor;
//     Unreserve rolls each back (rollBack).

// otherClaims are the pod's ResourceClaims besides hetsev's, as PreFilter
// read them.
type otherClaims struct {
	// allocated are the claims allocated before this cycle, with the node
	// selector of each allocation (nil: any node).
	allocated []allocatedClaim
	// pending are the claims to allocate, in spec.resourceClaims order.
	pending []*resourceapi.ResourceClaim
	// entries names each claim's spec.resourceClaims entry, by claim UID.
	entries map[types.UID]string

	// slices are every driver's ResourceSlices (with DeviceTaintRules
	// applied), read in PreFilter.
	slices []*resourceapi.ResourceSlice
	// allocator is the cycle's allocator for Filter, built once on the
	// allocated state of the first call; allocErr is why it could not be.
	once      sync.Once
	allocator structured.Allocator
	allocErr  error
}

type allocatedClaim struct {
	claim    *resourceapi.ResourceClaim
	selector *nodeaffinity.NodeSelector
}

// name is how a message names a claim: namespace/name (entry "x").
func (o *otherClaims) name(c *resourceapi.ResourceClaim) string {
	return fmt.Sprintf("ResourceClaim %s/%s (spec.resourceClaims entry %q)", c.Namespace, c.Name, o.entries[c.UID])
}

// readOtherClaims reads the pod's claims besides gpuClaim. A claim that
// cannot be used is a status saying which and why: not created yet from
// its template or not found (UnschedulableAndUnresolvable until it
// appears), being deleted, allocated with a node selector that does not
// parse, or reserved for the maximum number of consumers.
func (p *DRAGPUShare) readOtherClaims(pod *v1.Pod, gpuClaim types.UID) (*otherClaims, *fwk.Status) {
	o := &otherClaims{entries: map[types.UID]string{}}
	seen := map[types.UID]bool{gpuClaim: true}
	for _, rc := range pod.Spec.ResourceClaims {
		if rc.Name == v1alpha1.PodClaimName {
			continue
		}
		name, _ := dra.ClaimNameOf(pod, rc.Name)
		if name == "" {
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("waiting for the ResourceClaim of spec.resourceClaims entry %q to be created from its template", rc.Name))
		}
		claim, err := p.draManager.ResourceClaims().Get(pod.Namespace, name)
		if err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("ResourceClaim %s/%s of spec.resourceClaims entry %q not found", pod.Namespace, name, rc.Name))
			}
			return nil, fwk.AsStatus(fmt.Errorf("getting ResourceClaim %s/%s: %w", pod.Namespace, name, err))
		}
		if seen[claim.UID] {
			continue
		}
		seen[claim.UID] = true
		o.entries[claim.UID] = rc.Name
		if claim.DeletionTimestamp != nil {
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("%s is being deleted", o.name(claim)))
		}
		if claim.Status.Allocation == nil {
			o.pending = append(o.pending, claim)
			continue
		}
		if !dra.ReservedFor(claim, pod.UID) && len(claim.Status.ReservedFor) >= resourceapi.ResourceClaimReservedForMaxSize {
			return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("%s is reserved for the maximum of %d consumers", o.name(claim), resourceapi.ResourceClaimReservedForMaxSize))
		}
		a := allocatedClaim{claim: claim}
		if ns := claim.Status.Allocation.NodeSelector; ns != nil {
			sel, err := nodeaffinity.NewNodeSelector(ns)
			if err != nil {
				return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("%s: the node selector of its allocation: %v", o.name(claim), err))
			}
			a.selector = sel
		}
		o.allocated = append(o.allocated, a)
	}
	if len(o.pending) > 0 {
		sl, err := p.draManager.ResourceSlices().ListWithDeviceTaintRules()
		if err != nil {
			return nil, fwk.AsStatus(fmt.Errorf("listing ResourceSlices: %w", err))
		}
		o.slices = sl
	}
	return o, nil
}

// filterOthers is why the node cannot take the pod's other claims: one
// allocated on devices its node selector does not admit here, or the
// unallocated ones do not all fit the node's devices; nil when it can.
func (p *DRAGPUShare) filterOthers(ctx context.Context, o *otherClaims, node *v1.Node) *fwk.Status {
	if o == nil {
		return nil
	}
	for _, a := range o.allocated {
		if a.selector != nil && !a.selector.Match(node) {
			return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("%s is allocated on devices node %s cannot reach (the allocation's nodeSelector)", o.name(a.claim), node.Name))
		}
	}
	if len(o.pending) == 0 {
		return nil
	}
	o.once.Do(func() {
		allocated, err := p.gatherAllocatedState()
		if err != nil {
			o.allocErr = err
			return
		}
		o.allocator, o.allocErr = structured.NewAllocator(ctx, p.features, *allocated, p.draManager.DeviceClasses(), o.slices, p.celCache)
	})
	if o.allocErr != nil {
		return fwk.AsStatus(fmt.Errorf("DRA allocator: %w", o.allocErr))
	}
	_, err := p.allocateOthers(ctx, o, o.allocator, node)
	return err
}

// allocateOthers allocates all of o's unallocated claims on node with a,
// in one call (so that they never share a device they cannot share). A
// status says which claims do not fit, or the allocator's error (invalid
// input such as a CEL selector that fails).
func (p *DRAGPUShare) allocateOthers(ctx context.Context, o *otherClaims, a structured.Allocator, node *v1.Node) ([]resourceapi.AllocationResult, *fwk.Status) {
	results, err := a.Allocate(ctx, node, o.pending)
	if err != nil {
		return nil, fwk.AsStatus(fmt.Errorf("allocating %s on node %s: %w", o.names(), node.Name, err))
	}
	if len(results) != len(o.pending) {
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("%s cannot be allocated on node %s: no devices there of the requested DeviceClasses fit them", o.names(), node.Name))
	}
	return results, nil
}

// names names the unallocated claims, for a message.
func (o *otherClaims) names() string {
	var ns []string
	for _, c := range o.pending {
		ns = append(ns, o.name(c))
	}
	return strings.Join(ns, ", ")
}

// reserveOthers allocates the pod's other claims on node, with the
// allocated state gathered now (which counts the GPU claim's pending
// allocation), records each in res and signals it as pending; allocated
// claims are recorded to be reserved for the pod in PreBind. A failure
// leaves what was recorded for Unreserve to roll back.
func (p *DRAGPUShare) reserveOthers(ctx context.Context, o *otherClaims, pod *v1.Pod, node *v1.Node, res *draReservation) *fwk.Status {
	if o == nil {
		return nil
	}
	for _, a := range o.allocated {
		p.mu.Lock()
		res.claims = append(res.claims, &claimReservation{read: a.claim, claim: a.claim})
		p.mu.Unlock()
	}
	if len(o.pending) == 0 {
		return nil
	}
	allocated, err := p.gatherAllocatedState()
	if err != nil {
		return fwk.AsStatus(err)
	}
	a, err := structured.NewAllocator(ctx, p.features, *allocated, p.draManager.DeviceClasses(), o.slices, p.celCache)
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("DRA allocator: %w", err))
	}
	results, st := p.allocateOthers(ctx, o, a, node)
	if st != nil {
		return st
	}
	for i, c := range o.pending {
		if st := p.signalAllocation(pod, res, c, &results[i]); st != nil {
			return st
		}
	}
	return nil
}
