package scaler

import (
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/placement"
)

// typeCapacity is what the GPUs of one product offer one GPU type of a
// ModelService now.
type typeCapacity struct {
	// slots is MaxAdditional: how many more instances fit (freeSlots).
	slots int
	// gpus is how many GPUs of the type the nodes that take the
	// service's pods have: where the slots were looked for.
	gpus int
	// inUse is how many GPUs of the type host at least one instance of
	// another model identity than the service's, on every node of the
	// type: where a light flavor's instance can share a GPU that is
	// billed anyway (beside its own instances anti-affinity keeps it off).
	inUse int
	// inflation is the mean latency inflation (>= 1) its bound instances
	// get from their GPU neighbours, by the co-location model at the busy
	// shares the pods declare; 1 when none is bound.
	inflation float64
	// alone are the service's serving pods (adapter.Serving: Ready, not
	// terminating) of this column alone on their GPU, and open the nodes
	// with room for one more of its pods: what movablePods reads. Pods
	// are the ModelService's by namespace and label (ownPod).
	alone  []aloneOn
	open   []nodeRoom
	demand gpuinventory.Demand
	// marked are the service's pods of this column, not terminating, that
	// a consolidation move marked (MovedPodDeletionCost), in order.
	marked []types.NamespacedName
}

// capacityOf counts, for the instances of ModelService ms (its namespace
// and label hetsev.io/modelservice, ownPod) on nodes of one GPU product, each needing demand
// and cpu/mem, the free slots (HetSev 4.1 constraint 2) and the mean
// co-location inflation of its bound instances.
//
// Free slots are the instances hetsev-scheduler would admit, by its rule
// and arguments (adm, placement.Placer.Slots: GPU memory, busy share under
// maxBusyShare, anti-affinity, every instance's hetsev.io/max-inflation),
// placed one after another so that each counts against the next, on nodes
// with the CPU and memory the pod requests. Nodes the scheduler does not
// place the pods on count none: cordoned ones (spec.unschedulable) and
// those with a NoSchedule or NoExecute taint tolerations (the pod
// template's) do not tolerate, and, with pool (hetsev-scheduler's arg
// gpuPool), nodes outside the GPU pool (gpuinventory.InGPUPool), which
// the scheduler refuses. Pods of the model that are still Pending
// (not yet placed) take slots first.
//
// A node's GPUs are counted by gpuinventory's occupancy rule, the
// scheduler's: every pod bound to the node until it is terminal, a
// terminating one included (it holds its GPU, CPU and memory until it
// finishes). The scheduler's in-flight reservations are not in the API;
// such a pod is still Pending here and counts as pending if it is of the
// model. Inflation is predicted with pl on the node's sharing mode (GFD's
// nvidia.com/gpu.sharing-strategy), as the scheduler rates GPUs; adm
// admits on the node's sharing mode too.
//
// With dc (GPU mode dra) a node's GPUs are not its GFD labels but the
// shareable devices of the product its ResourceSlices publish (see
// draCluster.occupancy); nil is annotation mode.
func capacityOf(nodes []*v1.Node, pods []*v1.Pod, ms types.NamespacedName, product string, demand gpuinventory.Demand, adm, pl placement.Placer, tolerations []v1.Toleration, pool bool, cpu, mem resource.Quantity, dc *draCluster) typeCapacity {
	byNode := map[string][]*v1.Pod{}
	var pendingSame []*v1.Pod
	for _, p := range pods {
		if gpuinventory.Terminal(p) {
			continue
		}
		if p.Spec.NodeName == "" {
			if p.DeletionTimestamp != nil {
				continue // will never be placed
			}
			if sameColumn(p, demand, product) {
				pendingSame = append(pendingSame, p)
			}
			continue
		}
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
	}
	slots, gpus, inUse, bound, inflation := 0, 0, 0, 0, 0.0
	counted := map[types.UID]bool{} // DRA mode: pods counted through an allocated claim
	var open []nodeRoom             // nodes that take the service's pods, for movable
	var alone []aloneOn             // the service's pods alone on a GPU
	var marked []types.NamespacedName
	for _, p := range pods {
		if ownPod(p, ms) && p.DeletionTimestamp == nil && !gpuinventory.Terminal(p) &&
			MarkedForMove(p) && sameColumn(p, demand, product) {
			marked = append(marked, types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
		}
	}
	sortPods(marked)
	for _, n := range nodes {
		if n.Labels[gpuinventory.LabelGPUProduct] != product {
			continue
		}
		var occ *gpuinventory.Occupancy
		gpuOf := gpuIndexOf
		if dc == nil {
			inv, err := gpuinventory.NodeGPUsOf(n)
			if err != nil {
				continue
			}
			occ = gpuinventory.NewOccupancy(n.Name, inv)
			for _, p := range byNode[n.Name] {
				occ.AddPod(p, nil)
			}
		} else {
			var ok bool
			occ, gpuOf, ok = dc.occupancy(n.Name, byNode[n.Name], counted)
			if !ok {
				continue
			}
		}
		usedCPU, usedMem := resource.Quantity{}, resource.Quantity{}
		for _, p := range byNode[n.Name] {
			for _, c := range p.Spec.Containers {
				usedCPU.Add(*c.Resources.Requests.Cpu())
				usedMem.Add(*c.Resources.Requests.Memory())
			}
		}
		onNode := pl.OnNode(n.Labels)
		for _, p := range byNode[n.Name] {
			idx, ok := gpuOf(p)
			if !ownPod(p, ms) || !ok || idx < 0 || idx >= len(occ.GPUs) {
				continue
			}
			bound++
			inflation += onNode.Inflation(occ.GPUs[idx], demand)
			if occ.GPUs[idx].Instances == 1 && sameColumn(p, demand, product) && adapter.Serving(p) {
				alone = append(alone, aloneOn{pod: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, node: n.Name, gpu: occ.GPUs[idx].Index})
			}
		}
		for _, g := range occ.GPUs {
			if g.HostsOther(demand.Identity()) {
				inUse++
			}
		}
		if refusesPods(n, tolerations) || pool && !gpuinventory.InGPUPool(n) {
			continue
		}
		gpus += len(occ.GPUs)
		freeCPU := n.Status.Allocatable.Cpu().MilliValue() - usedCPU.MilliValue()
		freeMem := n.Status.Allocatable.Memory().Value() - usedMem.Value()
		slots += adm.OnNode(n.Labels).Slots(occ.GPUs, demand, freeCPU, cpu.MilliValue(), freeMem, mem.Value())
		if (cpu.MilliValue() <= 0 || freeCPU >= cpu.MilliValue()) && (mem.Value() <= 0 || freeMem >= mem.Value()) {
			open = append(open, nodeRoom{name: n.Name, gpus: occ.GPUs, adm: adm.OnNode(n.Labels)})
		}
	}
	pending := 0
	for _, p := range pendingSame {
		if !counted[p.UID] { // not already holding a GPU through its claim (an allocation in flight)
			pending++
		}
	}
	c := typeCapacity{slots: max(slots-pending, 0), gpus: gpus, inUse: inUse, inflation: 1, alone: alone, open: open, demand: demand, marked: marked}
	if bound > 0 {
		c.inflation = inflation / float64(bound)
	}
	return c
}

// aloneOn is a pod alone on its GPU: the node's name and the GPU's index.
type aloneOn struct {
	pod  types.NamespacedName
	node string
	gpu  int
}

// nodeRoom is a node that takes the service's pods and has room for one
// more (CPU, memory): its GPUs' occupancy and the scheduler's admission
// rule on its sharing mode.
type nodeRoom struct {
	name string
	gpus []gpuinventory.GPU
	adm  placement.Placer
}

// movablePods is the pods of c.alone, in order (sortPods), that the
// scheduler would admit on a GPU of c.open in use other than the pod's
// own (placement.Placer.AdmitsInUse), so that moving the pod there
// leaves its GPU empty (heterogeneity.TypeState.Movable). Computed on
// demand: only consolidation reads it, and it tries every lone pod on
// every open node.
func (c typeCapacity) movablePods() []types.NamespacedName {
	var names []types.NamespacedName
	for _, a := range c.alone {
		for _, nr := range c.open {
			except := -1
			if nr.name == a.node {
				except = a.gpu
			}
			if nr.adm.AdmitsInUse(nr.gpus, c.demand, except) {
				names = append(names, a.pod)
				break
			}
		}
	}
	sortPods(names)
	return names
}

// sortPods orders pods by namespace, then name.
func sortPods(pods []types.NamespacedName) {
	slices.SortFunc(pods, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
}

// namesIn is the names of pods in namespace, in their order.
func namesIn(pods []types.NamespacedName, namespace string) []string {
	var out []string
	for _, p := range pods {
		if p.Namespace == namespace {
			out = append(out, p.Name)
		}
	}
	return out
}

// ownPod says p is one of ModelService ms's pods: its label and its
// namespace, since two namespaces may each have a ModelService of one name.
func ownPod(p *v1.Pod, ms types.NamespacedName) bool {
	return p.Namespace == ms.Namespace && p.Labels[v1alpha1.LabelModelService] == ms.Name
}

// sameColumn is whether pod p is an instance of the column of demand on
// GPU product product: its declared model identity and busy share, and
// its node selector's product.
func sameColumn(p *v1.Pod, demand gpuinventory.Demand, product string) bool {
	d, ok, err := gpuinventory.DemandOf(p)
	return ok && err == nil && d.Identity() == demand.Identity() && d.BusyShare == demand.BusyShare &&
		p.Spec.NodeSelector[gpuinventory.LabelGPUProduct] == product
}

// refusesPods is whether the scheduler places no pod with tolerations on
// node n, by the rules of its NodeUnschedulable and TaintToleration
// filters: n is cordoned (spec.unschedulable) and they do not tolerate
// the node.kubernetes.io/unschedulable:NoSchedule taint, or n has a
// NoSchedule or NoExecute taint they do not tolerate (PreferNoSchedule
// only scores).
func refusesPods(n *v1.Node, tolerations []v1.Toleration) bool {
	logger := klog.Background()
	cordon := v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}
	if n.Spec.Unschedulable && !corev1helpers.TolerationsTolerateTaint(logger, tolerations, &cordon, false) {
		return true
	}
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logger, n.Spec.Taints, tolerations, func(t *v1.Taint) bool {
		return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
	}, false)
	return untolerated
}

// gpuIndexOf is the position of a bound pod's GPU among its node's GPUs in
// annotation mode: its hetsev.io/gpu-index.
func gpuIndexOf(p *v1.Pod) (int, bool) {
	idx, has, err := gpuinventory.ParseGPUIndex(p.Annotations)
	return idx, has && err == nil
}
