package gpushare

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/placement"
)

// placedNote is what Bind writes beside hetsev.io/gpu-index so that an
// operator sees who shares a GPU: the predicted latency inflation of the
// pod on its GPU (hetsev.io/predicted-inflation) and its neighbours there
// at placement (hetsev.io/gpu-neighbours). Reserve computes it from the
// accounting it picked on; the zero value writes nothing.
type placedNote struct {
	inflation  string
	neighbours string
}

// annotate adds the note's annotations to a Binding's.
func (n placedNote) annotate(a map[string]string) {
	if n.inflation == "" {
		return
	}
	a[v1alpha1.AnnotationPredictedInflation] = n.inflation
	a[v1alpha1.AnnotationGPUNeighbours] = n.neighbours
}

// noteFor is the placedNote of demand d placed on g, the GPU's accounting
// before it (as Reserve picked on it, nominated pods included), by pl (the
// node's placer), for a pod of namespace beside the pods neighbours: the inflation is
// placement.Placer.Inflation of d's model identity on g with d added, the same
// prediction the rating and the inflation-limit check make.
func noteFor(pl placement.Placer, g gpuinventory.GPU, d gpuinventory.Demand, namespace string, neighbours []*v1.Pod) placedNote {
	g.Shares = append(slices.Clone(g.Shares), gpuinventory.InstanceShare{Model: d.Model, Scope: d.Scope, BusyShare: d.Busy(), MaxInflation: d.MaxInflation})
	g.Instances++
	if d.Model != "" {
		g.Models = maps.Clone(g.Models)
		if g.Models == nil {
			g.Models = map[string]int{}
		}
		g.Models[d.Identity()]++
	}
	return placedNote{
		inflation:  strconv.FormatFloat(pl.Inflation(g, d), 'f', 2, 64),
		neighbours: formatNeighbours(neighbours, namespace),
	}
}

// podsOnGPU are the pods among nodePods that hold the GPU of index
// gpuIndex on node (podGPU), the pod self left out.
func (p *gpuShare) podsOnGPU(nodePods []fwk.PodInfo, node string, gpuIndex int, self types.UID) []*v1.Pod {
	var out []*v1.Pod
	for _, pi := range nodePods {
		pod := pi.GetPod()
		if pod.UID == self {
			continue
		}
		if idx, ok := p.podGPU(pod, node); ok && idx == gpuIndex {
			out = append(out, pod)
		}
	}
	return out
}

// podGPU is the index of the GPU pod holds on node: its
// hetsev.io/gpu-index or, until it carries one, the GPU reserved for it
// there. ok is false for a terminal pod, a pod with no GPU share, and a
// pod whose gpu-index is malformed (gpuinventory counts it on every GPU;
// it is on none in particular).
func (p *gpuShare) podGPU(pod *v1.Pod, node string) (int, bool) {
	if gpuinventory.Terminal(pod) {
		return 0, false
	}
	idx, hasIdx, err := gpuinventory.ParseGPUIndex(pod.Annotations)
	if hasIdx {
		return idx, err == nil
	}
	if _, isGPU, _ := gpuinventory.DemandOf(pod); !isGPU {
		return 0, false
	}
	r, ok := p.reservationOf(pod.UID)
	return r.index, ok && r.node == node
}

// formatNeighbours is hetsev.io/gpu-neighbours' value for pods (see
// v1alpha1.AnnotationGPUNeighbours) as a pod of namespace sees them: its
// own namespace's by name, sorted, at most v1alpha1.MaxListedNeighbours
// entries; other namespaces' only counted, since a tenant may not learn
// another's pod names or models.
func formatNeighbours(pods []*v1.Pod, namespace string) string {
	var own []*v1.Pod
	for _, pod := range pods {
		if pod.Namespace == namespace {
			own = append(own, pod)
		}
	}
	others := len(pods) - len(own)
	slices.SortFunc(own, func(a, b *v1.Pod) int { return strings.Compare(a.Name, b.Name) })
	var b strings.Builder
	for i, pod := range own {
		if i == v1alpha1.MaxListedNeighbours {
			fmt.Fprintf(&b, ", +%d more", len(own)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		model := pod.Annotations[v1alpha1.AnnotationModel]
		if model == "" {
			model = "-"
		}
		busy := 1.0
		if s, err := gpuinventory.ParseBusyShare(pod.Annotations); err == nil && s > 0 {
			busy = s
		}
		fmt.Fprintf(&b, "%s/%s %s %s", pod.Namespace, pod.Name, model, strconv.FormatFloat(busy, 'g', 3, 64))
	}
	if others > 0 {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "+%d in other namespaces", others)
	}
	return b.String()
}
