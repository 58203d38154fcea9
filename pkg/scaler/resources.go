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
func freeSlots(nodes []*v1.Node, pods []*v1.Pod, product string, demand gpuinventory.Demand, cpu, mem resource.Quantity) int {
	byNode := map[string][]*v1.Pod{}
	pendingSame := 0
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		if p.Spec.NodeName == "" {
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
		var placed []gpuinventory.Placement
		usedCPU, usedMem := resource.Quantity{}, resource.Quantity{}
		for _, p := range byNode[n.Name] {
			for _, c := range p.Spec.Containers {
				usedCPU.Add(*c.Resources.Requests.Cpu())
				usedMem.Add(*c.Resources.Requests.Memory())
			}
			d, ok, err := gpuinventory.DemandOf(p)
			if !ok || err != nil {
				continue
			}
			if idx, has, err := gpuinventory.ParseGPUIndex(p.Annotations); has && err == nil {
				placed = append(placed, gpuinventory.Placement{Index: idx, Demand: d})
			}
		}
		gpus, _ := gpuinventory.Account(inv, placed)
		freeCPU := n.Status.Allocatable.Cpu().MilliValue() - usedCPU.MilliValue()
		freeMem := n.Status.Allocatable.Memory().Value() - usedMem.Value()
		slots += gpuinventory.SlotsOnNode(gpus, demand, freeCPU, cpu.MilliValue(), freeMem, mem.Value())
	}
	return max(slots-pendingSame, 0)
}
