package scaler

import (
	"k8s.io/apimachinery/pkg/types"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/placement"
)

// freeSlots is capacityOf's slot count without a busy-share cap.
func freeSlots(nodes []*v1.Node, pods []*v1.Pod, product string, d gpuinventory.Demand, cpu, mem resource.Quantity) int {
	return capacityOf(nodes, pods, types.NamespacedName{}, product, d, placement.Placer{}, placement.Placer{}, nil, false, cpu, mem, nil).slots
}

// TestFreeSlotsCountsWhatTheSchedulerCounts: free slots follow
// gpuinventory's occupancy rule, the scheduler's. On one T4 node with two
// 16 GiB GPUs: a terminating resnet50 still holds GPU 0 (the scheduler
// keeps it until it finishes), a finished one holds nothing, and a pod whose
// gpu-memory became unreadable holds its whole GPU: skipping either would
// promise slots the scheduler does not give.
func TestFreeSlotsCountsWhatTheSchedulerCounts(t *testing.T) {
	nodes := []*v1.Node{node("a", 2, 16384, "40")}
	leaving := pod("leaving", "a", "resnet50", "2Gi", "0", "2")
	leaving.DeletionTimestamp = &metav1.Time{}
	leaving.Status.Phase = v1.PodRunning
	done := pod("done", "a", "resnet50", "2Gi", "1", "2")
	done.Status.Phase = v1.PodSucceeded
	d := gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048}
	cpu := resource.MustParse("2")
	if got := freeSlots(nodes, []*v1.Pod{leaving, done}, "Tesla-T4", d, cpu, resource.Quantity{}); got != 1 {
		t.Errorf("with a terminating resnet50 on GPU 0: %d free slots, want 1 (GPU 1)", got)
	}
	edited := pod("edited", "a", "ssd", "lots", "1", "2")
	if got := freeSlots(nodes, []*v1.Pod{leaving, done, edited}, "Tesla-T4", d, cpu, resource.Quantity{}); got != 0 {
		t.Errorf("with GPU 1 held by a pod of unreadable gpu-memory: %d free slots, want 0", got)
	}
	// 38 CPUs are free: the terminating pod's 2 still count, the finished
	// one's do not.
	if got := freeSlots(nodes, []*v1.Pod{leaving, done}, "Tesla-T4", gpuinventory.Demand{MemoryMiB: 1}, resource.MustParse("19"), resource.Quantity{}); got != 2 {
		t.Errorf("19-CPU slots = %d, want 2", got)
	}
	if got := freeSlots(nodes, []*v1.Pod{leaving, done}, "Tesla-T4", gpuinventory.Demand{MemoryMiB: 1}, resource.MustParse("20"), resource.Quantity{}); got != 1 {
		t.Errorf("20-CPU slots = %d, want 1", got)
	}
}

// TestPendingPodsCountAgainstTheirOwnColumn: a pending pod takes a slot
// from the column whose demand it declares, not from every column of its
// model and type: two pending light instances (busy share 0.1) leave the
// whole-GPU column's two free GPUs free, and take two of the light
// column's.
func TestPendingPodsCountAgainstTheirOwnColumn(t *testing.T) {
	nodes := []*v1.Node{node("a", 2, 16384, "40")}
	var pods []*v1.Pod
	for _, name := range []string{"light-0", "light-1"} {
		p := pod(name, "", "resnet50", "2Gi", "", "2")
		p.Annotations[v1alpha1.AnnotationBusyShare] = "0.1"
		pods = append(pods, p)
	}
	cpu := resource.MustParse("2")
	whole := gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048, BusyShare: 1}
	if got := freeSlots(nodes, pods, "Tesla-T4", whole, cpu, resource.Quantity{}); got != 2 {
		t.Errorf("whole-GPU column with two light instances pending: %d free slots, want 2", got)
	}
	light := gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048, BusyShare: 0.1}
	if got := freeSlots(nodes, pods, "Tesla-T4", light, cpu, resource.Quantity{}); got != 0 {
		t.Errorf("light column with two of its instances pending: %d free slots, want 0 (two GPUs, anti-affinity)", got)
	}
}
