package gpushare

import (
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	fwk "k8s.io/kube-scheduler/framework"
)

// withNominated is the node as the framework's Filter sees it for pod
// (RunFilterPluginsWithNominatedPods, first pass, which Filter must pass):
// a copy of nodeInfo with the pods nominated to the node (preemptors
// waiting for their victims to leave) of equal or higher priority than pod,
// pod itself excepted; or nodeInfo itself when there are none. Score and
// Reserve pick on it, so they count a nominated pod on the GPU it will take
// (countNominated) as Filter does, and a pod of lower priority does not
// get the GPU a preemption freed. DRAGPUShare's Score and Reserve use it;
// AnnotationGPUShare keeps Filter's accounting instead (nominatedViews).
func (p *gpuShare) withNominated(pod *v1.Pod, nodeInfo fwk.NodeInfo) fwk.NodeInfo {
	node := nodeInfo.Node()
	if node == nil || p.handle == nil {
		return nodeInfo
	}
	prio := corev1helpers.PodPriority(pod)
	var out fwk.NodeInfo
	for _, pi := range p.handle.NominatedPodsForNode(node.Name) {
		np := pi.GetPod()
		if np.UID == pod.UID || corev1helpers.PodPriority(np) < prio {
			continue
		}
		if out == nil {
			out = nodeInfo.Snapshot()
		}
		out.AddPodInfo(pi)
	}
	if out == nil {
		return nodeInfo
	}
	return out
}

// nominatedViews is, for one scheduling cycle, the accounting of each node
// as Filter saw it with pods nominated to it (preemptors waiting for their
// victims to leave): the framework's RunFilterPluginsWithNominatedPods
// first runs Filter on a copy of the NodeInfo with the nominated pods of
// equal or higher priority than the pod being scheduled, the pod itself
// excepted (addGENominatedPods), and Filter must pass on it. Score and
// Reserve pick on the same accounting, so they count a nominated pod on the
// GPU it will take (countNominated) as Filter does, and a pod of lower
// priority does not get the GPU a preemption freed.
//
// The framework runs Score and Reserve only on nodes that passed Filter in
// the same cycle, so a node without a view had no such nominated pod when
// Filter ran: Score and Reserve then use the node's own cached accounting.
// Keeping Filter's view instead of asking the scheduling queue again
// (NominatedPodsForNode, which takes the queue's locks) costs Score
// nothing per node while no pod is nominated, and keeps Filter, Score and
// Reserve on one answer should a nomination change during the cycle; the
// next cycle sees the change.
type nominatedViews struct {
	// any is whether byNode holds a view: Score, called on hundreds of
	// nodes, reads it without the lock.
	any    atomic.Bool
	mu     sync.Mutex
	byNode map[string]*cachedNode // guarded by mu
}

// record keeps c, the accounting Filter built for node with nominated pods
// in it; a later Filter of the node in the cycle replaces it.
func (v *nominatedViews) record(node string, c *cachedNode) {
	v.mu.Lock()
	if v.byNode == nil {
		v.byNode = map[string]*cachedNode{}
	}
	v.byNode[node] = c
	v.mu.Unlock()
	v.any.Store(true)
}

// lookup is the view Filter recorded for node in this cycle, or nil.
func (v *nominatedViews) lookup(node string) *cachedNode {
	if !v.any.Load() {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.byNode[node]
}
