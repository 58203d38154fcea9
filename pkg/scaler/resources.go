package scaler

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// freeSlots counts how many more instances of model, each needing demand,
// fit on nodes of one GPU product right now (HetSev 4.1 constraint 2): GPUs
// with enough free GPU memory and no instance of the model, on nodes with
// the CPU and memory the pod requests. Pods of the model that are still
// Pending (not yet placed) take slots first.
//
// A node's GPUs are counted by gpuinventory's occupancy rule, the
// scheduler's: every pod bound to the node until it is terminal, a
// terminating one included (it holds its GPU, CPU and memory until it
// finishes). The scheduler's in-flight reservations are not in the API;
// such a pod is still Pending here and counts as pending if it is of the
// model.
func freeSlots(nodes []*v1.Node, pods []*v1.Pod, product string, demand gpuinventory.Demand, cpu, mem resource.Quantity) int {
	byNode := map[string][]*v1.Pod{}
	pendingSame := 0
	for _, p := range pods {
		if gpuinventory.Terminal(p) {
			continue
		}
		if p.Spec.NodeName == "" {
			if p.DeletionTimestamp != nil {
				continue // will never be placed
			}
			d, ok, err := gpuinventory.DemandOf(p)
			if ok && err == nil && d.Model == demand.Model && p.Spec.NodeSelector[gpuinventory.LabelGPUProduct] == product {
				pendingSame++
			}
			continue
		}
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
	}
	slots := 0
	for _, n := range nodes {
		if n.Labels[gpuinventory.LabelGPUProduct] != product || n.Spec.Unschedulable {
			continue
		}
		inv, err := gpuinventory.NodeGPUsOf(n)
		if err != nil {
			continue
		}
		occ := gpuinventory.NewOccupancy(n.Name, inv)
		usedCPU, usedMem := resource.Quantity{}, resource.Quantity{}
		for _, p := range byNode[n.Name] {
			for _, c := range p.Spec.Containers {
				usedCPU.Add(*c.Resources.Requests.Cpu())
				usedMem.Add(*c.Resources.Requests.Memory())
			}
			occ.AddPod(p, nil)
		}
		freeCPU := n.Status.Allocatable.Cpu().MilliValue() - usedCPU.MilliValue()
		freeMem := n.Status.Allocatable.Memory().Value() - usedMem.Value()
		slots += gpuinventory.SlotsOnNode(occ.GPUs, demand, freeCPU, cpu.MilliValue(), freeMem, mem.Value())
	}
	return max(slots-pendingSame, 0)
}
