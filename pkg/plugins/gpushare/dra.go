package gpushare

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/util/retry"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/dra"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/placement"
)

// DRA mode (args gpuMode: dra). A hetsev pod carries spec.resourceClaims
// entry v1alpha1.PodClaimName: a ResourceClaim (its own, or generated from
// a ResourceClaimTemplate) whose request of DeviceClass
// v1alpha1.DeviceClassName asks for GPU memory as consumable capacity.
// The plugin allocates that claim itself, with annotation mode's rules:
//
//   - PreFilter finds the claim and its memory request, and takes one
//     snapshot of the GPUs the DRA driver publishes (ResourceSlices) and of
//     every allocated claim, from the scheduler's SharedDRAManager, which
//     includes allocations in flight in any profile of this scheduler
//     (the upstream DynamicResources plugin's and this plugin's);
//   - PreFilter drops the GPUs with a NoSchedule or NoExecute taint the
//     claim's request does not tolerate, when the scheduler's
//     DRADeviceTaints gate is on (the allocator refuses them then);
//   - Filter, Score and Reserve build each node's per-GPU occupancy from
//     that snapshot (pkg/dra: every claim's consumedCapacity, each using
//     pod's model, busy share and inflation limit) and pick a GPU with
//     pkg/placement, as annotation mode does from pods;
//   - Reserve allocates the claim on the chosen GPU with the upstream
//     structured allocator offered that device alone (dra.Allocate) and
//     signals it to the ResourceClaimTracker as pending, so other pods and
//     profiles count it at once;
//   - PreBind writes the allocation and the pod in reservedFor to the
//     claim's status, as upstream does, before the pod is bound;
//   - Unreserve drops the pending allocation or, once written, takes the
//     pod out of reservedFor and the allocation it wrote off the claim;
//   - Bind still writes hetsev.io/gpu-index (the GPU's index attribute):
//     the metrics adapter joins DCGM's per-GPU series to pods with it.
//
// The pod's other ResourceClaims (a NIC, a device of another DeviceClass
// or driver) go through the same steps with the upstream allocator on all
// ResourceSlices (draclaims.go): the DRA profile has no DynamicResources
// plugin to allocate them.
//
// Nothing is kept in memory across restarts but in-flight allocations:
// the accounting is the claims' allocations, read through informers.

var (
	_ fwk.PreFilterPlugin   = &DRAGPUShare{}
	_ fwk.FilterPlugin      = &DRAGPUShare{}
	_ fwk.ScorePlugin       = &DRAGPUShare{}
	_ fwk.ReservePlugin     = &DRAGPUShare{}
	_ fwk.PreBindPlugin     = &DRAGPUShare{}
	_ fwk.BindPlugin        = &DRAGPUShare{}
	_ fwk.EnqueueExtensions = &DRAGPUShare{}
	_ fwk.SignPlugin        = &DRAGPUShare{}
)

// DRAGPUShare is HetsevGPUShare in GPU mode dra (see above). Its extension
// points are PreFilter, Filter, Score, Reserve, PreBind and Bind
// (manifests/dra/scheduler-config.yaml).
type DRAGPUShare struct {
	// gpuShare's reserved is, in this mode, only the GPU index Bind
	// writes; the accounting is the claims'.
	gpuShare

	// draManager is the scheduler's SharedDRAManager, shared by all its
	// profiles.
	draManager fwk.SharedDRAManager
	podLister  corelisters.PodLister
	celCache   *cel.Cache
	// features are the structured allocator's features under the
	// scheduler's feature gates (dra.AllocatorFeatures).
	features structured.Features
	// driver is the DRA driver whose GPUs the plugin shares.
	driver dra.Driver
	// draReserved is what Reserve allocated per pod; guarded by mu.
	draReserved map[types.UID]*draReservation
	// inFlight is the pod each claim is being allocated for, between
	// Reserve and the moment its reservedFor names the pod; guarded by mu.
	inFlight map[types.UID]*v1.Pod
	// reportedIssues remembers the safe-side counts already logged.
	reportedIssues sync.Map
}

// newDRAGPUShare is DRAGPUShare on the scheduler's SharedDRAManager, with
// the structured allocator's features under the scheduler's feature gates
// (as for the upstream DynamicResources plugin: with DRADeviceTaints a
// tainted GPU gets no share unless the claim tolerates it). It is an error
// without the DRA manager or without consumable capacity.
func newDRAGPUShare(h fwk.Handle, pl placement.Placer, driver dra.Driver) (*DRAGPUShare, error) {
	p := &DRAGPUShare{gpuShare: newGPUShare(h, pl), driver: driver.WithDefault(), draReserved: map[types.UID]*draReservation{}, inFlight: map[types.UID]*v1.Pod{}}
	p.draManager = h.SharedDRAManager()
	if p.draManager == nil {
		return nil, fmt.Errorf("%s: gpuMode %s needs the scheduler's DRA manager (feature DynamicResourceAllocation)", Name, v1alpha1.GPUModeDRA)
	}
	p.features = dra.AllocatorFeatures(utilfeature.DefaultFeatureGate)
	if !p.features.ConsumableCapacity {
		return nil, fmt.Errorf("%s: gpuMode %s needs feature gate %s (one GPU shared by several claims), which --feature-gates turns off", Name, v1alpha1.GPUModeDRA, dra.GateDRAConsumableCapacity)
	}
	p.celCache = dra.NewCELCache(utilfeature.DefaultFeatureGate)
	if f := h.SharedInformerFactory(); f != nil {
		p.podLister = f.Core().V1().Pods().Lister()
	}
	return p, nil
}

// draState is a DRA-mode pod's cycle state.
type draState struct {
	demand  gpuinventory.Demand // memory from the claim, the rest from the pod
	reasons noGPUReasons        // Filter's refusal messages, built once
	claim   *resourceapi.ResourceClaim
	request string // the claim's request of v1alpha1.DeviceClassName
	view    *draView
	// allocatedNode is set when the claim was already allocated (an
	// earlier attempt of this pod wrote it): the pod goes where it is.
	allocatedNode  string
	allocatedIndex int
	// others are the pod's other ResourceClaims (draclaims.go).
	others *otherClaims

	occMu sync.Mutex
	occ   map[string]*draNode // per node, built once per cycle
}

func (s *draState) Clone() fwk.StateData { return s }

func draStateFrom(state fwk.CycleState) (*draState, bool) {
	v, err := state.Read(stateKey)
	if err != nil {
		return nil, false
	}
	s, ok := v.(*draState)
	return s, ok
}

// draView is the cycle's snapshot: shareable GPUs per node and what every
// allocated claim holds.
type draView struct {
	driver string // the DRA driver's name
	nodes  map[string]*dra.NodeDevices
	usages map[dra.DeviceKey][]dra.Usage
}

// draNode is one node's accounting in a cycle.
type draNode struct {
	devices *dra.NodeDevices
	gpus    []gpuinventory.GPU
	err     error
}

// draReservation is what Reserve allocated for a pod, until PreBind wrote
// it or Unreserve dropped it: the hetsev claim first, then the pod's other
// claims (draclaims.go). Its fields are guarded by DRAGPUShare.mu.
type draReservation struct {
	claims []*claimReservation
}

// claimReservation is one claim of a draReservation.
type claimReservation struct {
	// read is the claim as PreFilter read it; PreBind writes on it.
	read  *resourceapi.ResourceClaim
	claim *resourceapi.ResourceClaim // with the allocation, as signalled
	// allocation is nil when the claim was allocated before (nothing to
	// write but reservedFor).
	allocation *resourceapi.AllocationResult
	written    bool // PreBind stored the claim status
}

// Pods in DRA mode are never signed for the scheduler's batching: their
// demand is in their claim, not in the pod.
var errUnsigned = errors.New("pods with a hetsev ResourceClaim are not signed (their demand is in the claim)")

// PreFilter reads the pod's claim: see the DRA mode comment above.
func (p *DRAGPUShare) PreFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if classes, err := p.draManager.DeviceClasses().List(); err == nil {
		if res, class, ok := dra.ExtendedResourceBackedByClass(pod, classes); ok {
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("the pod requests %s, an extended resource DeviceClass %s backs with DRA devices, which %s does not allocate: ask for GPU memory with spec.resourceClaims entry %q (a ResourceClaim of DeviceClass %s), or schedule the pod with a scheduler that runs DynamicResources",
				res, class, v1alpha1.SchedulerName, v1alpha1.PodClaimName, v1alpha1.DeviceClassName))
		}
	}
	claimName, has := dra.ClaimNameOf(pod, v1alpha1.PodClaimName)
	if !has {
		if _, isGPU, _ := gpuinventory.DemandOf(pod); isGPU {
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("GPU mode dra: a pod with %s or %s needs spec.resourceClaims entry %q with a ResourceClaim of DeviceClass %s", v1alpha1.AnnotationModel, v1alpha1.AnnotationGPUMemory, v1alpha1.PodClaimName, v1alpha1.DeviceClassName))
		}
		if len(pod.Spec.ResourceClaims) > 0 {
			// This profile has no DynamicResources plugin: claims are
			// allocated here, and only beside hetsev's GPU claim. Binding
			// the pod would leave its claims unallocated and the kubelet
			// unable to start it.
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("%s allocates ResourceClaims only for pods with spec.resourceClaims entry %q (a hetsev GPU share); schedule a pod with other claims only (entry %q) with a scheduler that runs DynamicResources", v1alpha1.SchedulerName, v1alpha1.PodClaimName, pod.Spec.ResourceClaims[0].Name))
		}
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if claimName == "" {
		if dra.NoClaimGenerated(pod, v1alpha1.PodClaimName) {
			// The API lets such an entry be ignored; for hetsev's GPU
			// entry that would bind the pod without its GPU share.
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("the ResourceClaim controller generated no claim for spec.resourceClaims entry %q (status.resourceClaimStatuses[].resourceClaimName is unset): the pod would run without its GPU share", v1alpha1.PodClaimName))
		}
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("waiting for the ResourceClaim of spec.resourceClaims entry %q to be created from its template", v1alpha1.PodClaimName))
	}
	claim, err := p.draManager.ResourceClaims().Get(pod.Namespace, claimName)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("ResourceClaim %s/%s of spec.resourceClaims entry %q not found", pod.Namespace, claimName, v1alpha1.PodClaimName))
		}
		return nil, fwk.AsStatus(fmt.Errorf("getting ResourceClaim %s/%s: %w", pod.Namespace, claimName, err))
	}
	if claim.DeletionTimestamp != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("ResourceClaim %s/%s is being deleted", claim.Namespace, claim.Name))
	}
	request, mem, ok, err := dra.MemoryRequest(claim, v1alpha1.DeviceClassName)
	if !ok {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("ResourceClaim %s/%s has no request of DeviceClass %s", claim.Namespace, claim.Name, v1alpha1.DeviceClassName))
	}
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	d, err := dra.PodShare(pod)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	d.MemoryMiB = dra.ToMiB(mem.Value())
	class, err := p.draManager.DeviceClasses().Get(v1alpha1.DeviceClassName)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("DeviceClass %s not found", v1alpha1.DeviceClassName))
		}
		return nil, fwk.AsStatus(fmt.Errorf("getting DeviceClass %s: %w", v1alpha1.DeviceClassName, err))
	}
	view, err := p.draSnapshot(ctx, class)
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	others, st := p.readOtherClaims(pod, claim.UID)
	if st != nil {
		return nil, st
	}
	s := &draState{demand: d, claim: claim, request: request, view: view, others: others, occ: map[string]*draNode{}}
	if claim.Status.Allocation != nil {
		node, idx, err := allocatedGPU(view, claim)
		if err != nil {
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
		}
		if len(claim.Status.ReservedFor) > 0 && !dra.ReservedFor(claim, pod.UID) {
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("ResourceClaim %s/%s is in use by another pod", claim.Namespace, claim.Name))
		}
		s.allocatedNode, s.allocatedIndex = node, idx
		state.Write(stateKey, s)
		return &fwk.PreFilterResult{NodeNames: sets.New(node)}, nil
	}
	if p.features.DeviceTaints {
		// The allocator refuses a GPU with a NoSchedule or NoExecute taint
		// the request does not tolerate: offer none of them. A claim
		// already allocated keeps its GPU (above): NoSchedule does not
		// evict, and NoExecute eviction is the taint controller's.
		dra.SelectTolerated(view.nodes, dra.RequestTolerations(claim, request))
	}
	if largest := dra.MaxMemoryBytes(view.nodes); mem.Value() > largest {
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("ResourceClaim %s/%s requests %s of GPU memory (capacity %q); the largest shareable GPU of driver %s has %d MiB%s",
			claim.Namespace, claim.Name, mem.String(), v1alpha1.DRAMemoryCapacity, p.driver.Name, largest/(1<<20), unusableSummary(view, "")))
	}
	state.Write(stateKey, s)
	return nil, nil
}

// draSnapshot lists the driver's ResourceSlices, keeps the GPUs class
// selects, and lists every claim, allocated or in flight, from the
// SharedDRAManager.
// PreFilterExtensions implements fwk.PreFilterPlugin.
func (p *DRAGPUShare) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

func (p *DRAGPUShare) draSnapshot(ctx context.Context, class *resourceapi.DeviceClass) (*draView, error) {
	sl, err := p.draManager.ResourceSlices().ListWithDeviceTaintRules()
	if err != nil {
		return nil, fmt.Errorf("listing ResourceSlices: %w", err)
	}
	tracker := p.draManager.ResourceClaims()
	claims, err := tracker.List()
	if err != nil {
		return nil, fmt.Errorf("listing ResourceClaims: %w", err)
	}
	claims = withPendingAllocations(claims, tracker)
	nodes := dra.Inventory(sl, p.driver)
	dra.SelectByClass(ctx, nodes, class, p.celCache)
	return &draView{driver: p.driver.Name, nodes: nodes, usages: dra.Usages(claims, p.driver.Name)}, nil
}

// withPendingAllocations is claims with each allocation in flight (made in
// Reserve, by this plugin or upstream's DynamicResources, and not yet
// written in PreBind) filled in. The tracker's List returns the informer's
// claims without them (kube-scheduler 1.36's claimTracker, whatever its
// interface comment says); without them a burst of same-model pods, each
// placed before the last one's PreBind, shares a GPU: the memory stays safe
// (the allocator counts in-flight devices) but the model, busy share and
// inflation limit of the earlier pod are not seen.
func withPendingAllocations(claims []*resourceapi.ResourceClaim, tracker fwk.ResourceClaimTracker) []*resourceapi.ResourceClaim {
	out := claims
	copied := false
	for i, c := range claims {
		if c.Status.Allocation != nil {
			continue
		}
		a := tracker.GetPendingAllocation(c.UID)
		if a == nil {
			continue
		}
		if !copied {
			out = slices.Clone(claims)
			copied = true
		}
		pending := c.DeepCopy()
		pending.Status.Allocation = a
		out[i] = pending
	}
	return out
}

// allocatedGPU is the node and GPU index of a claim's allocation.
func allocatedGPU(view *draView, claim *resourceapi.ResourceClaim) (string, int, error) {
	for _, k := range dra.AllocatedDevices(claim, view.driver) {
		for node, nd := range view.nodes {
			if i, ok := nd.Position(k); ok {
				return node, nd.Devices[i].Index, nil
			}
		}
		return "", 0, fmt.Errorf("ResourceClaim %s/%s is allocated on device %s, which no node publishes as a shareable GPU", claim.Namespace, claim.Name, k)
	}
	return "", 0, fmt.Errorf("ResourceClaim %s/%s is allocated, but on no device of driver %s", claim.Namespace, claim.Name, view.driver)
}

// unusableSummary names up to three devices of the driver hetsev does not
// share (on node, or anywhere when node is ""), as "; not shared: ...".
func unusableSummary(view *draView, node string) string {
	var us []string
	n := 0
	for name, nd := range view.nodes {
		if node != "" && name != node {
			continue
		}
		for _, u := range nd.Unusable {
			n++
			if len(us) < 3 {
				us = append(us, u.String())
			}
		}
	}
	if n == 0 {
		return ""
	}
	if n > len(us) {
		us = append(us, fmt.Sprintf("and %d more", n-len(us)))
	}
	return "; not shared: " + strings.Join(us, "; ")
}

// draNodeOf is the node's accounting in this cycle: the claims' usages of
// its GPUs (dra.NodeDevices.Occupancy) and, on the safe side, bound hetsev
// pods whose claim holds no device here (dra.AddUnclaimedPod), built once
// per node; and, on a NodeInfo the framework (Filter) or withNominated
// (Score, Reserve) added nominated pods to, those pods on the GPU each will
// take (countNominatedDRA), built on every call and not kept.
func (p *DRAGPUShare) draNodeOf(ctx context.Context, s *draState, nodeInfo fwk.NodeInfo) *draNode {
	node := nodeInfo.Node()
	if node == nil {
		return &draNode{err: errors.New("node not found")}
	}
	if waiting := p.nominatedOn(nodeInfo, node.Name); len(waiting) > 0 {
		n, occ := p.accountDRANode(ctx, s, nodeInfo, nil)
		if n.err == nil {
			p.countNominatedDRA(ctx, s, nodeInfo, occ, waiting)
			n.gpus = occ.GPUs
		}
		return n
	}
	s.occMu.Lock()
	defer s.occMu.Unlock()
	if n, ok := s.occ[node.Name]; ok {
		return n
	}
	n, _ := p.accountDRANode(ctx, s, nodeInfo, nil)
	s.occ[node.Name] = n
	return n
}

// accountDRANode builds the node's accounting from the cycle's snapshot
// and the node's bound pods. With minPriority, only the claims some pod of
// that priority or higher uses (or that no pod uses yet) and such bound
// pods count: the node as a preemptor of that priority finds it once
// its victims have left.
func (p *DRAGPUShare) accountDRANode(ctx context.Context, s *draState, nodeInfo fwk.NodeInfo, minPriority *int32) (*draNode, *gpuinventory.Occupancy) {
	node := nodeInfo.Node()
	n := &draNode{}
	nd := s.view.nodes[node.Name]
	if nd == nil || len(nd.Devices) == 0 {
		n.err = fmt.Errorf("node %s has no shareable GPU of DRA driver %s%s", node.Name, p.driver.Name, unusableSummary(s.view, node.Name))
		return n, nil
	}
	n.devices = nd
	usages := s.view.usages
	keep := func(*v1.Pod) bool { return true }
	if minPriority != nil {
		keep = func(pod *v1.Pod) bool { return corev1helpers.PodPriority(pod) >= *minPriority }
		usages = map[dra.DeviceKey][]dra.Usage{}
		for _, d := range nd.Devices {
			for _, u := range s.view.usages[d.Key()] {
				pods := p.consumers(u.Claim)
				if len(pods) == 0 || slices.ContainsFunc(pods, keep) {
					usages[d.Key()] = append(usages[d.Key()], u)
				}
			}
		}
	}
	occ, counted, issues := nd.Occupancy(usages, p.consumers)
	for _, pi := range nodeInfo.GetPods() {
		pod := pi.GetPod()
		if pod.Spec.NodeName == "" || counted[pod.UID] || gpuinventory.Terminal(pod) || !dra.HasHetsevClaim(pod) || !keep(pod) {
			continue
		}
		if what := dra.AddUnclaimedPod(occ, nd, pod, dra.RequestedMiB(p.hetsevClaimOf(pod))); what != "" {
			issues = append(issues, dra.Issue{Pod: pod.Namespace + "/" + pod.Name, What: what, Object: pod})
		}
	}
	if minPriority == nil {
		for _, is := range issues {
			p.reportIssue(ctx, node.Name, is)
		}
	}
	n.gpus = occ.GPUs
	return n, occ
}

// neighboursOn are the pods that share device dev of the node with the
// pod self: the consumers of every claim allocated on it (in flight
// included), and the node's pods that hold it by their
// hetsev.io/gpu-index or reservation (podsOnGPU), once each.
func (p *DRAGPUShare) neighboursOn(s *draState, nodeInfo fwk.NodeInfo, dev dra.Device, self types.UID) []*v1.Pod {
	seen := map[types.UID]bool{self: true}
	var out []*v1.Pod
	add := func(pod *v1.Pod) {
		if !seen[pod.UID] && !gpuinventory.Terminal(pod) {
			seen[pod.UID] = true
			out = append(out, pod)
		}
	}
	for _, u := range s.view.usages[dev.Key()] {
		for _, pod := range p.consumers(u.Claim) {
			add(pod)
		}
	}
	for _, pod := range p.podsOnGPU(nodeInfo.GetPods(), nodeInfo.Node().Name, dev.Index, self) {
		add(pod)
	}
	return out
}

// hetsevClaimOf is the ResourceClaim behind the pod's hetsev claim from
// the DRA manager, nil when it has none or it is not found.
func (p *DRAGPUShare) hetsevClaimOf(pod *v1.Pod) *resourceapi.ResourceClaim {
	return dra.PodClaim(pod, v1alpha1.PodClaimName, p.draManager.ResourceClaims().Get)
}

// reportIssue logs a claim or pod counted on the safe side and records a
// Warning event (reason ReasonCountedSafeSide) about it, once per node and
// text.
func (p *DRAGPUShare) reportIssue(ctx context.Context, node string, is dra.Issue) {
	key := node + "\x00" + is.String()
	if _, seen := p.reportedIssues.LoadOrStore(key, true); seen {
		return
	}
	klog.FromContext(ctx).Info("GPU share counted on the safe side", "plugin", Name, "node", node, "issue", is.String())
	if r := p.handle.EventRecorder(); r != nil && is.Object != nil {
		r.Eventf(is.Object, nil, v1.EventTypeWarning, ReasonCountedSafeSide, "Scheduling", "%s counts it on node %s on the safe side: %s", Name, node, is.What)
	}
}

// forgetNode drops the safe-side counts reported on a deleted node.
func (p *DRAGPUShare) forgetNode(name string) {
	prefix := name + "\x00"
	p.reportedIssues.Range(func(k, _ any) bool {
		if strings.HasPrefix(k.(string), prefix) {
			p.reportedIssues.Delete(k)
		}
		return true
	})
}

// ReasonCountedSafeSide is the reason of the Warning event about a claim
// (or pod) whose recorded GPU share hetsev-scheduler does not take as is:
// an allocation consuming less than the claim requests, none of the
// memory capacity, or a pod running on a GPU its claim no longer holds.
const ReasonCountedSafeSide = "GPUShareCountedSafeSide"

// consumers are the pods using a claim: those in its reservedFor that the
// informer has, and the pod this plugin is allocating it for.
func (p *DRAGPUShare) consumers(claim *resourceapi.ResourceClaim) []*v1.Pod {
	var pods []*v1.Pod
	if p.podLister != nil {
		pods = dra.ReservedPods(claim, func(ns, name string) (*v1.Pod, error) { return p.podLister.Pods(ns).Get(name) })
	}
	p.mu.RLock()
	pod, ok := p.inFlight[claim.UID]
	p.mu.RUnlock()
	if ok && !slices.ContainsFunc(pods, func(q *v1.Pod) bool { return q.UID == pod.UID }) {
		pods = append(pods, pod)
	}
	return pods
}

// pickOn is placement's pick on the node's GPUs for the pod's demand.
func (p *DRAGPUShare) pickOn(ctx context.Context, s *draState, nodeInfo fwk.NodeInfo) (*draNode, picked) {
	n := p.draNodeOf(ctx, s, nodeInfo)
	if n.err != nil {
		return n, picked{}
	}
	var r picked
	r.idx, r.rating, r.clash, r.ok = p.placer.OnNode(nodeInfo.Node().GetLabels()).Pick(n.gpus, s.demand)
	return n, r
}

// Filter keeps the node of a claim already allocated, or nodes with a GPU
// that fits the claim's memory and the pod's busy share and model, as in
// annotation mode; with the arg gpuPool on, only nodes in the GPU pool
// (outsidePool).
func (p *DRAGPUShare) Filter(ctx context.Context, state fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, ok := draStateFrom(state)
	if !ok {
		return nil
	}
	if st := p.outsidePool(nodeInfo.Node()); st != nil {
		return st
	}
	if s.allocatedNode != "" {
		if nodeInfo.Node().Name != s.allocatedNode {
			return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("ResourceClaim %s/%s is allocated on node %s", s.claim.Namespace, s.claim.Name, s.allocatedNode))
		}
		return p.filterOthers(ctx, s.others, nodeInfo.Node())
	}
	n, r := p.pickOn(ctx, s, nodeInfo)
	if n.err != nil {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, n.err.Error())
	}
	if !r.ok {
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("ResourceClaim %s/%s: %s", s.claim.Namespace, s.claim.Name, p.reasonNoGPU(&s.reasons, nodeInfo, n.gpus, s.demand)))
	}
	return p.filterOthers(ctx, s.others, nodeInfo.Node())
}

// Score rates the GPU placement picks on the node, as in annotation mode
// (picked.score), counting the pods nominated to the node of equal or
// higher priority as Filter does (withNominated); the node of a claim
// already allocated gets the full rating.
func (p *DRAGPUShare) Score(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s, ok := draStateFrom(state)
	if !ok {
		return 0, nil
	}
	if s.allocatedNode != "" {
		return ratingScale, nil
	}
	n, r := p.pickOn(ctx, s, p.withNominated(pod, nodeInfo))
	if n.err != nil {
		return 0, nil
	}
	return r.score(), nil
}

// Reserve allocates the claim on the GPU placement picks on the node
// (counting the same nominated pods as Score) and signals the allocation as pending to the ResourceClaimTracker, then
// the pod's other claims (reserveOthers). On failure the framework calls
// Unreserve, which rolls back what was signalled.
func (p *DRAGPUShare) Reserve(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	s, ok := draStateFrom(state)
	if !ok {
		return nil
	}
	nodeInfo, err := p.handle.SnapshotSharedLister().NodeInfos().Get(nodeName)
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("getting node %q: %w", nodeName, err))
	}
	if s.allocatedNode != "" {
		res := &draReservation{claims: []*claimReservation{{read: s.claim, claim: s.claim}}}
		p.mu.Lock()
		var uuid string
		if nd := s.view.nodes[nodeName]; nd != nil {
			if d, ok := nd.ByIndex(s.allocatedIndex); ok {
				uuid = d.UUID
			}
		}
		p.reserved[pod.UID] = reservation{node: nodeName, index: s.allocatedIndex, uuid: uuid}
		p.draReserved[pod.UID] = res
		p.mu.Unlock()
		return p.reserveOthers(ctx, s.others, pod, nodeInfo.Node(), res)
	}
	nodeInfo = p.withNominated(pod, nodeInfo)
	n, r := p.pickOn(ctx, s, nodeInfo)
	if n.err != nil {
		return fwk.NewStatus(fwk.Unschedulable, n.err.Error())
	}
	if !r.ok {
		return fwk.NewStatus(fwk.Unschedulable, p.reasonNoGPU(&s.reasons, nodeInfo, n.gpus, s.demand))
	}
	dev := n.devices.Devices[r.idx]
	allocated, err := p.gatherAllocatedState()
	if err != nil {
		return fwk.AsStatus(err)
	}
	alloc, err := dra.Allocate(ctx, p.features, *allocated, p.draManager.DeviceClasses(), p.celCache, nodeInfo.Node(), dev, s.claim)
	if err != nil {
		return fwk.NewStatus(fwk.Unschedulable, err.Error())
	}
	res := &draReservation{}
	note := noteFor(p.placer.OnNode(nodeInfo.Node().GetLabels()), n.gpus[r.idx], s.demand, pod.Namespace, p.neighboursOn(s, nodeInfo, dev, pod.UID))
	p.mu.Lock()
	p.reserved[pod.UID] = reservation{node: nodeName, index: dev.Index, uuid: dev.UUID, note: note}
	p.draReserved[pod.UID] = res
	p.mu.Unlock()
	if st := p.signalAllocation(pod, res, s.claim, alloc); st != nil {
		return st
	}
	klog.FromContext(ctx).V(4).Info("reserved GPU share", "plugin", Name, "pod", klog.KObj(pod), "claim", klog.KObj(s.claim), "node", nodeName, "device", dev.Key().String(), "gpuIndex", dev.Index, "freeMiB", n.gpus[r.idx].FreeMiB())
	return p.reserveOthers(ctx, s.others, pod, nodeInfo.Node(), res)
}

// signalAllocation records claim with alloc in res, as in flight for pod,
// and signals it to the ResourceClaimTracker as pending, so that other
// pods and profiles count it at once.
func (p *DRAGPUShare) signalAllocation(pod *v1.Pod, res *draReservation, orig *resourceapi.ResourceClaim, alloc *resourceapi.AllocationResult) *fwk.Status {
	claim := orig.DeepCopy()
	if !slices.Contains(claim.Finalizers, resourceapi.Finalizer) {
		claim.Finalizers = append(claim.Finalizers, resourceapi.Finalizer)
	}
	claim.Status.Allocation = alloc
	if err := p.draManager.ResourceClaims().SignalClaimPendingAllocation(claim.UID, claim); err != nil {
		return fwk.AsStatus(fmt.Errorf("signalling the allocation of ResourceClaim %s/%s: %w", claim.Namespace, claim.Name, err))
	}
	p.mu.Lock()
	res.claims = append(res.claims, &claimReservation{read: orig, claim: claim, allocation: alloc})
	p.inFlight[claim.UID] = pod
	p.mu.Unlock()
	return nil
}

// gatherAllocatedState is the tracker's allocated state, retried while a
// concurrent change makes it inconsistent.
func (p *DRAGPUShare) gatherAllocatedState() (*structured.AllocatedState, error) {
	var err error
	for range 20 {
		var s *structured.AllocatedState
		s, err = p.draManager.ResourceClaims().GatherAllocatedState()
		if err == nil && s != nil {
			return s, nil
		}
	}
	return nil, fmt.Errorf("gathering allocated devices: %v", err)
}

// PreBindPreFlight implements fwk.PreBindPlugin: PreBind has work for
// pods with a hetsev claim only.
func (p *DRAGPUShare) PreBindPreFlight(_ context.Context, state fwk.CycleState, _ *v1.Pod, _ string) (*fwk.PreBindPreFlightResult, *fwk.Status) {
	if _, ok := draStateFrom(state); ok {
		return &fwk.PreBindPreFlightResult{}, nil
	}
	return nil, fwk.NewStatus(fwk.Skip)
}

// PreBind writes, for the hetsev claim and then each other claim, the
// allocation (when Reserve made one) and the pod in reservedFor
// (writeClaim). The first failure fails PreBind; Unreserve then rolls back
// the claims written.
func (p *DRAGPUShare) PreBind(ctx context.Context, state fwk.CycleState, pod *v1.Pod, _ string) *fwk.Status {
	if _, ok := draStateFrom(state); !ok {
		return nil
	}
	p.mu.RLock()
	res := p.draReserved[pod.UID]
	var claims []*claimReservation
	if res != nil {
		claims = slices.Clone(res.claims)
	}
	p.mu.RUnlock()
	if res == nil {
		return fwk.AsStatus(fmt.Errorf("no GPU share reserved for pod %s", klog.KObj(pod)))
	}
	for _, cr := range claims {
		if err := p.writeClaim(ctx, pod, cr); err != nil {
			return fwk.AsStatus(err)
		}
	}
	return nil
}

// writeClaim writes one claim's allocation (when Reserve made one) and the
// pod in its reservedFor, in one status update, as the upstream
// DynamicResources plugin does: first on the claim as PreFilter read it,
// then, on a conflict, on the claim read again. A claim deleted, replaced,
// allocated elsewhere or deallocated in the meantime is an error.
func (p *DRAGPUShare) writeClaim(ctx context.Context, pod *v1.Pod, cr *claimReservation) error {
	client := p.handle.ClientSet().ResourceV1().ResourceClaims(cr.read.Namespace)
	claim := cr.read.DeepCopy()
	first := true
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			got, err := client.Get(ctx, claim.Name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("getting ResourceClaim %s: %w", klog.KObj(claim), err)
			}
			claim = got
		}
		first = false
		if claim.UID != cr.read.UID {
			return fmt.Errorf("ResourceClaim %s was replaced", klog.KObj(claim))
		}
		if claim.DeletionTimestamp != nil {
			return fmt.Errorf("ResourceClaim %s is being deleted", klog.KObj(claim))
		}
		if cr.allocation != nil {
			if claim.Status.Allocation != nil {
				return fmt.Errorf("ResourceClaim %s was allocated elsewhere in the meantime", klog.KObj(claim))
			}
			if !slices.Contains(claim.Finalizers, resourceapi.Finalizer) {
				claim.Finalizers = append(claim.Finalizers, resourceapi.Finalizer)
				got, err := client.Update(ctx, claim, metav1.UpdateOptions{})
				if err != nil {
					return fmt.Errorf("adding finalizer to ResourceClaim %s: %w", klog.KObj(claim), err)
				}
				claim = got
			}
			claim.Status.Allocation = cr.allocation
		} else if claim.Status.Allocation == nil {
			return fmt.Errorf("ResourceClaim %s was deallocated in the meantime", klog.KObj(claim))
		}
		if !dra.ReservedFor(claim, pod.UID) {
			claim.Status.ReservedFor = append(claim.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: pod.Name, UID: pod.UID})
		}
		got, err := client.UpdateStatus(ctx, claim, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("writing allocation and reservation of ResourceClaim %s: %w", klog.KObj(claim), err)
		}
		claim = got
		return nil
	})
	if err != nil {
		return err
	}
	tracker := p.draManager.ResourceClaims()
	if err := tracker.AssumeClaimAfterAPICall(claim); err != nil {
		klog.FromContext(ctx).V(5).Info("claim not assumed", "plugin", Name, "claim", klog.KObj(claim), "err", err)
	}
	if cr.allocation != nil {
		tracker.MaybeRemoveClaimPendingAllocation(claim.UID, true)
	}
	p.mu.Lock()
	cr.written = true
	cr.claim = claim
	p.mu.Unlock()
	klog.FromContext(ctx).V(4).Info("allocated claim", "plugin", Name, "pod", klog.KObj(pod), "claim", klog.KObj(claim))
	return nil
}

// Unreserve rolls back what Reserve and PreBind did for the pod (rollBack),
// then forgets the pod.
func (p *DRAGPUShare) Unreserve(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) {
	p.rollBack(ctx, pod)
	p.forget(pod.UID)
}

// forget drops what the plugin holds for the pod: its reservation, its
// allocation and its claim in flight (Unreserve, or the pod was deleted).
func (p *DRAGPUShare) forget(uid types.UID) {
	p.mu.Lock()
	delete(p.reserved, uid)
	if res, ok := p.draReserved[uid]; ok {
		for _, cr := range res.claims {
			if p.inFlight[cr.claim.UID] != nil && p.inFlight[cr.claim.UID].UID == uid {
				delete(p.inFlight, cr.claim.UID)
			}
		}
		delete(p.draReserved, uid)
	}
	p.mu.Unlock()
}

// Bind binds the pod with its GPU's index attribute as
// hetsev.io/gpu-index (gpuShare.bindWithGPUIndex). Pods without a hetsev
// claim are left to the DefaultBinder (Skip).
func (p *DRAGPUShare) Bind(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	if _, ok := draStateFrom(state); !ok {
		return fwk.NewStatus(fwk.Skip)
	}
	return p.bindWithGPUIndex(ctx, pod, nodeName)
}

// rollBack undoes what Reserve and PreBind did for the pod, for each of
// its claims (rollBackClaim).
func (p *DRAGPUShare) rollBack(ctx context.Context, pod *v1.Pod) {
	p.mu.RLock()
	res := p.draReserved[pod.UID]
	var claims []*claimReservation
	if res != nil {
		claims = slices.Clone(res.claims)
	}
	p.mu.RUnlock()
	for _, cr := range claims {
		p.mu.RLock()
		c := *cr
		p.mu.RUnlock()
		p.rollBackClaim(ctx, pod, &c)
	}
}

// rollBackClaim undoes one claim's part: the pending allocation, or the
// pod in reservedFor and the allocation it wrote (when no other pod uses
// the claim).
func (p *DRAGPUShare) rollBackClaim(ctx context.Context, pod *v1.Pod, cr *claimReservation) {
	tracker := p.draManager.ResourceClaims()
	if cr.allocation != nil && !cr.written {
		if tracker.MaybeRemoveClaimPendingAllocation(cr.claim.UID, true) {
			tracker.AssumedClaimRestore(cr.claim.Namespace, cr.claim.Name)
		}
		return
	}
	if !cr.written {
		return
	}
	err := p.updateClaimStatus(ctx, cr.claim, func(claim *resourceapi.ResourceClaim) bool {
		claim.Status.ReservedFor = slices.DeleteFunc(claim.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool { return r.UID == pod.UID })
		if cr.allocation != nil && len(claim.Status.ReservedFor) == 0 {
			claim.Status.Allocation = nil
		}
		return true
	})
	if err != nil {
		klog.FromContext(ctx).Error(err, "rolling back a claim's allocation; the resource-claim controller deallocates it once no pod uses it", "plugin", Name, "pod", klog.KObj(pod), "claim", klog.KObj(cr.claim))
	}
}
