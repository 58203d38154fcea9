package gpushare

import (
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
// get the GPU a preemption freed. The copy's accounting is not cached
// (cached), so a node pays for it only while it has such nominations.
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
