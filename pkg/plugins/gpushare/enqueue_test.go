package gpushare

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedqueue "k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	"k8s.io/kubernetes/pkg/scheduler/metrics"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// hintMap is the scheduler's requeueing table for a profile with this
// plugin as the only one that rejects pods, built as kube-scheduler builds
// it (buildQueueingHintMap): the plugin's EventsToRegister, or every event
// with "queue" for a plugin that does not implement EnqueueExtensions.
func hintMap(t *testing.T, pl fwk.Plugin) schedqueue.QueueingHintMap {
	t.Helper()
	events := framework.UnrollWildCardResource()
	if ext, ok := pl.(fwk.EnqueueExtensions); ok {
		var err error
		if events, err = ext.EventsToRegister(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	m := schedqueue.QueueingHintMap{}
	for _, e := range events {
		fn := e.QueueingHintFn
		if fn == nil {
			fn = func(klog.Logger, *v1.Pod, interface{}, interface{}) (fwk.QueueingHint, error) { return fwk.Queue, nil }
		}
		m[e.Event] = append(m[e.Event], &schedqueue.QueueingHintFunction{PluginName: Name, QueueingHintFn: fn})
	}
	return m
}

// TestGPUShareQueueingHints: a GPU pod the plugin found no GPU for waits in
// the scheduler's real queue among the unschedulable pods. Events that
// cannot give it a GPU leave it there; a GPU freed by a deleted pod moves
// it back to be scheduled.
func TestGPUShareQueueingHints(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	metrics.Register()
	logger := klog.Background()
	waiting := gpuPod("waiting", "", "ssd", "12Gi", "")
	waiting.Spec.SchedulerName = v1alpha1.SchedulerName
	pq := schedqueue.NewTestQueue(ctx, (&queuesort.PrioritySort{}).Less,
		schedqueue.WithQueueingHintMapPerProfile(schedqueue.QueueingHintMapPerProfile{
			v1alpha1.SchedulerName: hintMap(t, &AnnotationGPUShare{}),
		}))
	pq.Add(ctx, waiting)
	pi, err := pq.Pop(logger)
	if err != nil {
		t.Fatal(err)
	}
	pi.UnschedulablePlugins = sets.New(Name) // Filter: no GPU with 12 GiB free
	if err := pq.AddUnschedulableIfNotPresent(logger, pi, pq.SchedulingCycle()); err != nil {
		t.Fatal(err)
	}
	stillWaiting := func(after string) {
		t.Helper()
		if len(pq.UnschedulablePods()) != 1 {
			t.Errorf("after %s: the pod left the unschedulable pods (active %d, backoff %d); want it to stay", after, len(pq.PodsInActiveQ()), len(pq.PodsInBackoffQ()))
		}
	}

	web := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "web"}, Spec: v1.PodSpec{NodeName: "a"}}
	pq.MoveAllToActiveOrBackoffQueue(logger, framework.EventAssignedPodDelete, web, nil, nil)
	stillWaiting("a pod without a GPU share was deleted")

	bound := gpuPod("r0", "a", "resnet50", "2Gi", "0")
	running := bound.DeepCopy()
	running.Status.Phase = v1.PodRunning
	pq.MoveAllToActiveOrBackoffQueue(logger, framework.EventAssignedPodUpdate, bound, running, nil)
	stillWaiting("a GPU pod's status was updated")

	a, relabelled := t4Node("a"), t4Node("a")
	relabelled.Labels["topology.kubernetes.io/zone"] = "z1"
	pq.MoveAllToActiveOrBackoffQueue(logger, fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.UpdateNodeLabel}, a, relabelled, nil)
	stillWaiting("a node label unrelated to GPUs changed")

	cpuNode := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cpu-0"}}
	pq.MoveAllToActiveOrBackoffQueue(logger, fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add}, nil, cpuNode, nil)
	stillWaiting("a node without GPUs was added")

	pq.MoveAllToActiveOrBackoffQueue(logger, framework.EventAssignedPodDelete, running, nil, nil)
	if n := len(pq.UnschedulablePods()); n != 0 || len(pq.PodsInActiveQ())+len(pq.PodsInBackoffQ()) != 1 {
		t.Errorf("after a pod holding 2 GiB of GPU 0 was deleted: %d unschedulable, %d active, %d backing off; want the pod requeued", n, len(pq.PodsInActiveQ()), len(pq.PodsInBackoffQ()))
	}
}

// TestQueueingHintsByEvent: each hint on its own, for the events that can
// and cannot give a rejected GPU pod a GPU.
func TestQueueingHintsByEvent(t *testing.T) {
	logger := klog.Background()
	waiting := gpuPod("waiting", "", "ssd", "12Gi", "")
	bound := gpuPod("r0", "a", "resnet50", "2Gi", "0")
	plain := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "web"}, Spec: v1.PodSpec{NodeName: "a"}}
	nominated := gpuPod("h", "", "bert", "8Gi", "")
	nominated.Status.NominatedNodeName = "a"
	pendingElsewhere := gpuPod("other", "", "bert", "8Gi", "")
	with := func(p *v1.Pod, f func(*v1.Pod)) *v1.Pod { p = p.DeepCopy(); f(p); return p }
	finished := with(bound, func(p *v1.Pod) { p.Status.Phase = v1.PodSucceeded })
	smaller := with(bound, func(p *v1.Pod) { p.Annotations[v1alpha1.AnnotationGPUMemory] = "1Gi" })
	relabelled := with(bound, func(p *v1.Pod) { p.Labels = map[string]string{"x": "y"} })
	fixed := with(waiting, func(p *v1.Pod) { p.Annotations[v1alpha1.AnnotationGPUMemory] = "8Gi" })
	lighter := with(bound, func(p *v1.Pod) { p.Annotations[v1alpha1.AnnotationBusyShare] = "0.2" })
	busyFixed := with(waiting, func(p *v1.Pod) { p.Annotations[v1alpha1.AnnotationBusyShare] = "0.3" })
	node := t4Node("a")
	noGPU := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cpu"}}
	moreGPUs := t4Node("a")
	moreGPUs.Labels[gpuinventory.LabelGPUCount] = "4"
	fewerGPUs := t4Node("a")
	fewerGPUs.Labels[gpuinventory.LabelGPUCount] = "1"
	zone := t4Node("a")
	zone.Labels["topology.kubernetes.io/zone"] = "z1"
	broken := t4Node("a")
	broken.Labels[gpuinventory.LabelGPUMemory] = "lots"
	pooled := t4Node("a")
	pooled.Labels[v1alpha1.LabelGPUPool] = v1alpha1.GPUPoolValue
	draNode := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dra", Labels: map[string]string{}}}
	draPooled := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dra", Labels: map[string]string{v1alpha1.LabelGPUPool: v1alpha1.GPUPoolValue}}}

	for _, tc := range []struct {
		name     string
		fn       fwk.QueueingHintFn
		old, new interface{}
		want     fwk.QueueingHint
	}{
		{"bound GPU pod deleted", isSchedulableAfterPodDeleted, bound, nil, fwk.Queue},
		{"nominated GPU pod deleted", isSchedulableAfterPodDeleted, nominated, nil, fwk.Queue},
		{"pod without a GPU share deleted", isSchedulableAfterPodDeleted, plain, nil, fwk.QueueSkip},
		{"pending GPU pod deleted", isSchedulableAfterPodDeleted, pendingElsewhere, nil, fwk.QueueSkip},
		{"bound GPU pod finished", isSchedulableAfterPodUpdated, bound, finished, fwk.Queue},
		{"bound GPU pod's memory lowered", isSchedulableAfterPodUpdated, bound, smaller, fwk.Queue},
		{"bound GPU pod's labels changed", isSchedulableAfterPodUpdated, bound, relabelled, fwk.QueueSkip},
		{"the pod's own GPU memory fixed", isSchedulableAfterPodUpdated, waiting, fixed, fwk.Queue},
		{"bound GPU pod's busy share changed", isSchedulableAfterPodUpdated, bound, lighter, fwk.Queue},
		{"the pod's own busy share changed", isSchedulableAfterPodUpdated, waiting, busyFixed, fwk.Queue},
		{"the pod's own status updated", isSchedulableAfterPodUpdated, waiting, with(waiting, func(p *v1.Pod) { p.Status.Message = "x" }), fwk.QueueSkip},
		{"another pending pod updated", isSchedulableAfterPodUpdated, pendingElsewhere, with(pendingElsewhere, func(p *v1.Pod) { p.Annotations[v1alpha1.AnnotationGPUMemory] = "1Gi" }), fwk.QueueSkip},
		{"GPU node added", isSchedulableAfterNodeChange, nil, node, fwk.Queue},
		{"node without GPUs added", isSchedulableAfterNodeChange, nil, noGPU, fwk.QueueSkip},
		{"node gained GPUs", isSchedulableAfterNodeChange, node, moreGPUs, fwk.Queue},
		{"node lost GPUs", isSchedulableAfterNodeChange, node, fewerGPUs, fwk.QueueSkip},
		{"node's GPU labels repaired", isSchedulableAfterNodeChange, broken, node, fwk.Queue},
		{"unrelated node label", isSchedulableAfterNodeChange, node, zone, fwk.QueueSkip},
		{"node joined the GPU pool", isSchedulableAfterNodeChange, node, pooled, fwk.Queue},
		{"node without GPU labels (DRA) joined the GPU pool", isSchedulableAfterNodeChange, draNode, draPooled, fwk.Queue},
		{"node left the GPU pool", isSchedulableAfterNodeChange, pooled, node, fwk.QueueSkip},
	} {
		got, err := tc.fn(logger, waiting, tc.old, tc.new)
		if err != nil || got != tc.want {
			t.Errorf("%s: %v (%v), want %v", tc.name, got, err, tc.want)
		}
	}
	// Objects of the wrong type queue the pod (never stuck) and say so.
	if got, err := isSchedulableAfterPodDeleted(logger, waiting, node, nil); got != fwk.Queue || err == nil {
		t.Errorf("pod deletion with a node: %v %v, want Queue and an error", got, err)
	}
}

// TestSignPod: pods with the same GPU demand sign alike whatever the
// quantity's spelling; another model or size, or no GPU share, differs;
// malformed annotations are not signed.
func TestSignPod(t *testing.T) {
	ctx := context.Background()
	p := &AnnotationGPUShare{}
	sign := func(pod *v1.Pod) any {
		f, st := p.SignPod(ctx, pod)
		if !st.IsSuccess() || len(f) != 1 || f[0].Key != signKey {
			t.Fatalf("SignPod(%s): %v %v", pod.Name, f, st)
		}
		return f[0].Value
	}
	a, b := sign(gpuPod("a", "", "ssd", "2Gi", "")), sign(gpuPod("b", "", "ssd", "2048Mi", ""))
	if a != b {
		t.Errorf("2Gi and 2048Mi of ssd sign %v and %v, want alike", a, b)
	}
	if c := sign(gpuPod("c", "", "bert", "2Gi", "")); c == a {
		t.Errorf("bert and ssd sign alike: %v", c)
	}
	if d := sign(gpuPod("d", "", "ssd", "3Gi", "")); d == a {
		t.Errorf("3Gi and 2Gi sign alike: %v", d)
	}
	if e := sign(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}}); e != nil {
		t.Errorf("a pod without a GPU share signs %v, want nil", e)
	}
	light := gpuPod("l", "", "ssd", "2Gi", "")
	light.Annotations[v1alpha1.AnnotationBusyShare] = "0.3"
	if l := sign(light); l == a {
		t.Errorf("busy share 0.3 and none sign alike: %v", l)
	}
	if _, st := p.SignPod(ctx, gpuPod("bad", "", "ssd", "lots", "")); st.IsSuccess() {
		t.Error("a pod with malformed gpu-memory was signed")
	}
}
