package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/catalog"
	"github.com/hetsev/hetsev/pkg/dra"

	"github.com/hetsev/hetsev/internal/cluster"
)

// draSchedulerConfig is the KubeSchedulerConfiguration of hetsev-scheduler
// in GPU mode dra as overlays/dra deploys it (manifests/dra/
// scheduler-config.yaml: the hetsev profile with HetsevGPUShare allocating
// claims, the upstream DynamicResources plugin off there), plus a
// default-scheduler profile with upstream's plugins, whose DynamicResources
// allocates other pods' claims in the same process (the scheduler's
// SharedDRAManager is one for both).
func draSchedulerConfig(t *testing.T, kubeconfig string) string {
	t.Helper()
	cfg, err := cluster.DRASchedulerConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return withDefaultSchedulerProfile(cfg)
}

// draGPU is one GPU a test publishes in a ResourceSlice.
type draGPU struct {
	name    string // device name, e.g. gpu-0
	index   int64
	product string
	memory  string // capacity "memory"; "" publishes none
	shared  bool   // allowMultipleAllocations
}

func gpus(product, memory string, n int) []draGPU {
	var out []draGPU
	for i := range n {
		out = append(out, draGPU{name: fmt.Sprintf("gpu-%d", i), index: int64(i), product: product, memory: memory, shared: true})
	}
	return out
}

// publishGPUs publishes node's GPUs as NVIDIA's DRA driver would: one
// ResourceSlice, pool named for the node.
func publishGPUs(ctx context.Context, t *testing.T, c kubernetes.Interface, node string, devs []draGPU) {
	t.Helper()
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-gpus"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   v1alpha1.DRADriver,
			NodeName: ptr.To(node),
			Pool:     resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
		},
	}
	for _, g := range devs {
		d := resourceapi.Device{
			Name: g.name,
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"index":       {IntValue: ptr.To(g.index)},
				"productName": {StringValue: ptr.To(g.product)},
			},
		}
		if g.memory != "" {
			d.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
				v1alpha1.DRAMemoryCapacity: {Value: resource.MustParse(g.memory)},
			}
		}
		if g.shared {
			d.AllowMultipleAllocations = ptr.To(true)
		}
		s.Spec.Devices = append(s.Spec.Devices, d)
	}
	if _, err := c.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatalf("publishing ResourceSlice of %s: %v", node, err)
	}
}

// draTestbed starts the control plane with one node of two V100 32 GiB
// (v100-0) and one of two T4 16 GiB (t4-0), publishes their GPUs and
// hetsev's DeviceClass, and starts hetsev-scheduler in GPU mode dra.
func draTestbed(t *testing.T) (*cluster.ControlPlane, context.Context, func()) {
	t.Helper()
	cp, ctx := draCluster(t)
	return cp, ctx, startDRAScheduler(ctx, t, cp)
}

// draCluster is draTestbed without the scheduler.
func draCluster(t *testing.T) (*cluster.ControlPlane, context.Context) {
	t.Helper()
	cp, ctx := controlPlane(t)
	cat, err := catalog.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	v100, _ := cat.ByName("V100-32GB")
	t4, _ := cat.ByName("T4")
	if _, err := cluster.CreateNodes(ctx, cp.Client, []cluster.NodeGroup{
		{Prefix: "v100-", Count: 1, GPUType: v100, GPUsPerNode: 2, CPUs: 40, MemoryGiB: 62},
		{Prefix: "t4-", Count: 1, GPUType: t4, GPUsPerNode: 2, CPUs: 40, MemoryGiB: 62},
	}); err != nil {
		t.Fatal(err)
	}
	publishGPUs(ctx, t, cp.Client, "v100-0", gpus("Tesla V100-SXM2-32GB", "32Gi", 2))
	publishGPUs(ctx, t, cp.Client, "t4-0", gpus("Tesla T4", "16Gi", 2))
	class := &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.DeviceClassName},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", v1alpha1.DRADriver)},
		}}},
	}
	if _, err := cp.Client.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return cp, ctx
}

// startDRAScheduler starts hetsev-scheduler in GPU mode dra and returns
// its restart: a kill (SIGKILL: nothing is saved) and a new start.
func startDRAScheduler(ctx context.Context, t *testing.T, cp *cluster.ControlPlane) func() {
	t.Helper()
	var sched *cluster.Process
	start := func() {
		p, err := cluster.StartSchedulerWithConfig(ctx, cp, v1alpha1.SchedulerName, draSchedulerConfig(t, cp.Kubeconfig))
		if err != nil {
			t.Fatal(err)
		}
		sched = p
	}
	start()
	t.Cleanup(func() {
		sched.Stop(5 * time.Second)
		if t.Failed() {
			t.Logf("--- last lines of hetsev-scheduler ---\n%s", sched.Tail(80))
		}
	})
	// restart kills the scheduler (SIGKILL: nothing is saved) and starts
	// a new one.
	return func() {
		sched.Kill()
		start()
	}
}

// draPod creates a pod of model with a ResourceClaim asking for memory
// of GPU memory: its own claim <name>-gpu (entry "gpu"; created unless it
// exists), scheduled by scheduler.
func draPod(ctx context.Context, t *testing.T, c kubernetes.Interface, scheduler, name, model, memory string, opts ...func(*v1.Pod)) *v1.Pod {
	t.Helper()
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-gpu", Namespace: "default"},
		Spec:       claimSpec(memory),
	}
	if _, err := c.ResourceV1().ResourceClaims("default").Create(ctx, claim, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating claim %s: %v", claim.Name, err)
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: map[string]string{}},
		Spec: v1.PodSpec{
			SchedulerName: scheduler,
			Containers: []v1.Container{{
				Name: "server", Image: "model-server:sim",
				Resources: v1.ResourceRequirements{
					Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")},
					Claims:   []v1.ResourceClaim{{Name: v1alpha1.PodClaimName}},
				},
			}},
			ResourceClaims: []v1.PodResourceClaim{{Name: v1alpha1.PodClaimName, ResourceClaimName: ptr.To(claim.Name)}},
		},
	}
	if model != "" {
		pod.Annotations[v1alpha1.AnnotationModel] = model
	}
	for _, o := range opts {
		o(pod)
	}
	p, err := c.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
	return p
}

// onNode pins a pod to a node.
func onNode(node string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node} }
}

func claimSpec(memory string) resourceapi.ResourceClaimSpec {
	return resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
		Name: v1alpha1.ClaimRequestName,
		Exactly: &resourceapi.ExactDeviceRequest{
			DeviceClassName: v1alpha1.DeviceClassName,
			Capacity: &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{
				v1alpha1.DRAMemoryCapacity: resource.MustParse(memory),
			}},
		},
	}}}}
}

// placed is where a pod's claim is allocated.
type placed struct {
	node, device string
	consumed     resource.Quantity
}

// waitPlaced waits until the pod is bound and returns its claim's
// allocation; it fails when the pod is bound without one, or on another
// node than the allocation's.
func waitPlaced(ctx context.Context, t *testing.T, c kubernetes.Interface, name string) placed {
	t.Helper()
	var pl placed
	waitFor(ctx, t, 30*time.Second, "pod "+name+" bound with its claim allocated", func(ctx context.Context) (bool, error) {
		p, err := c.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil || p.Spec.NodeName == "" {
			return false, nil
		}
		claim, err := c.ResourceV1().ResourceClaims("default").Get(ctx, name+"-gpu", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		a := claim.Status.Allocation
		if a == nil || len(a.Devices.Results) != 1 {
			return false, fmt.Errorf("pod %s bound to %s, claim allocation %+v", name, p.Spec.NodeName, a)
		}
		r := a.Devices.Results[0]
		if r.Pool != p.Spec.NodeName {
			return false, fmt.Errorf("pod %s bound to %s, claim allocated on pool %s", name, p.Spec.NodeName, r.Pool)
		}
		if !dra.ReservedFor(claim, p.UID) {
			return false, fmt.Errorf("claim of %s not reserved for it: %+v", name, claim.Status.ReservedFor)
		}
		if r.ShareID == nil {
			return false, fmt.Errorf("claim of %s allocated without a shareID", name)
		}
		// Devices are named <kind>-<position> here (NVIDIA's gpu-0,
		// HAMi's hami-gpu-0), and without an index attribute the
		// position is the index.
		if got := p.Annotations[v1alpha1.AnnotationGPUIndex]; got != r.Device[strings.LastIndex(r.Device, "-")+1:] {
			return false, fmt.Errorf("pod %s has %s=%q, allocated device %s", name, v1alpha1.AnnotationGPUIndex, got, r.Device)
		}
		pl = placed{node: p.Spec.NodeName, device: r.Device, consumed: r.ConsumedCapacity[v1alpha1.DRAMemoryCapacity]}
		return true, nil
	})
	return pl
}

// waitPending waits until the pod is Pending with a PodScheduled=False
// message containing want, and returns it.
func waitPending(ctx context.Context, t *testing.T, c kubernetes.Interface, name, want string) string {
	t.Helper()
	var msg string
	waitFor(ctx, t, 30*time.Second, "pod "+name+" Pending with "+want, func(ctx context.Context) (bool, error) {
		p, err := c.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if p.Spec.NodeName != "" {
			return false, fmt.Errorf("pod %s bound to %s, want Pending", name, p.Spec.NodeName)
		}
		msg = unschedulableReason(*p)
		return strings.Contains(msg, want), nil
	})
	return msg
}

// checkDRAAllocations asserts no device holds more consumedCapacity, or
// more than its claims request, than its memory, summed over every
// allocated claim, and returns the bytes per pool/device.
func checkDRAAllocations(ctx context.Context, t *testing.T, c kubernetes.Interface) map[string]int64 {
	t.Helper()
	claims, err := c.ResourceV1().ResourceClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	capacity := map[string]int64{}
	sl, err := c.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sl.Items {
		for _, d := range s.Spec.Devices {
			if q, ok := d.Capacity[v1alpha1.DRAMemoryCapacity]; ok {
				capacity[s.Spec.Pool.Name+"/"+d.Name] = q.Value.Value()
			}
		}
	}
	used := map[string]int64{}
	for _, cl := range claims.Items {
		if cl.Status.Allocation == nil {
			continue
		}
		for _, r := range cl.Status.Allocation.Devices.Results {
			k := r.Pool + "/" + r.Device
			q := r.ConsumedCapacity[v1alpha1.DRAMemoryCapacity]
			used[k] += q.Value()
			if used[k] > capacity[k] {
				t.Errorf("device %s over-committed: %d bytes consumed > %d", k, used[k], capacity[k])
			}
		}
	}
	return used
}

// TestDRAWorstFitAntiAffinityNoOvercommit: hetsev-scheduler in GPU mode
// dra allocates claims by worst fit with identical-model anti-affinity
// (model-a: both V100s, then both T4s, then nowhere), never over-commits a
// device (model-b 20 GiB: one per V100, none on the T4s' 6 GiB left), a
// claim larger than any GPU stays Pending with a reason that names it,
// and deleting a pod frees its share for a Pending one.
func TestDRAWorstFitAntiAffinityNoOvercommit(t *testing.T) {
	cp, ctx, _ := draTestbed(t)
	c := cp.Client
	sched := v1alpha1.SchedulerName

	seen := map[string]bool{}
	for i, wantNode := range []string{"v100-0", "v100-0", "t4-0", "t4-0"} {
		name := fmt.Sprintf("a-%d", i)
		draPod(ctx, t, c, sched, name, "model-a", "10Gi")
		pl := waitPlaced(ctx, t, c, name)
		if pl.node != wantNode || seen[pl.node+pl.device] {
			t.Errorf("%s on %s/%s, want a free GPU of %s (worst fit, anti-affinity); taken: %v", name, pl.node, pl.device, wantNode, seen)
		}
		seen[pl.node+pl.device] = true
		if pl.consumed.Cmp(resource.MustParse("10Gi")) != 0 {
			t.Errorf("%s consumed %s, want 10Gi", name, pl.consumed.String())
		}
	}
	draPod(ctx, t, c, sched, "a-4", "model-a", "10Gi")
	waitPending(ctx, t, c, "a-4", "anti-affinity")

	b0 := func() placed { draPod(ctx, t, c, sched, "b-0", "model-b", "20Gi"); return waitPlaced(ctx, t, c, "b-0") }()
	b1 := func() placed { draPod(ctx, t, c, sched, "b-1", "model-b", "20Gi"); return waitPlaced(ctx, t, c, "b-1") }()
	if b0.node != "v100-0" || b1.node != "v100-0" || b0.device == b1.device {
		t.Errorf("model-b on %s/%s and %s/%s, want one on each V100", b0.node, b0.device, b1.node, b1.device)
	}
	draPod(ctx, t, c, sched, "b-2", "model-b", "20Gi")
	msg := waitPending(ctx, t, c, "b-2", "20480 MiB")
	t.Logf("b-2 Pending: %s", msg)

	draPod(ctx, t, c, sched, "huge", "model-c", "40Gi")
	msg = waitPending(ctx, t, c, "huge", "default/huge-gpu requests 40Gi")
	t.Logf("huge Pending: %s", msg)
	checkDRAAllocations(ctx, t, c)

	// Deleting a-2 (a T4) frees its share: the resource-claim controller
	// takes it out of its claim's reservedFor and deallocates the claim,
	// and a-4, Pending for anti-affinity, takes that T4.
	var a2 *v1.Pod
	if p, err := c.CoreV1().Pods("default").Get(ctx, "a-2", metav1.GetOptions{}); err == nil {
		a2 = p
	} else {
		t.Fatal(err)
	}
	if err := c.CoreV1().Pods("default").Delete(ctx, "a-2", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	pl := waitPlaced(ctx, t, c, "a-4")
	if pl.node != a2.Spec.NodeName {
		t.Errorf("a-4 on %s/%s after a-2 left %s", pl.node, pl.device, a2.Spec.NodeName)
	}
	checkDRAAllocations(ctx, t, c)
}

// upstreamPod creates a pod for the default-scheduler profile (upstream's
// DynamicResources allocates its claim, first fit) asking for memory of
// GPU memory through a claim of hetsev's DeviceClass.
func upstreamPod(ctx context.Context, t *testing.T, c kubernetes.Interface, name, memory string) {
	t.Helper()
	draPod(ctx, t, c, "default-scheduler", name, "", memory)
}

// waitAllocated waits until claim <name>-gpu is allocated and its pod
// bound, and returns the allocation.
func waitAllocated(ctx context.Context, t *testing.T, c kubernetes.Interface, name string) placed {
	t.Helper()
	var pl placed
	waitFor(ctx, t, 30*time.Second, "claim "+name+"-gpu allocated and pod bound", func(ctx context.Context) (bool, error) {
		p, err := c.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil || p.Spec.NodeName == "" {
			return false, nil
		}
		claim, err := c.ResourceV1().ResourceClaims("default").Get(ctx, name+"-gpu", metav1.GetOptions{})
		if err != nil || claim.Status.Allocation == nil || len(claim.Status.Allocation.Devices.Results) != 1 {
			return false, err
		}
		r := claim.Status.Allocation.Devices.Results[0]
		pl = placed{node: r.Pool, device: r.Device, consumed: r.ConsumedCapacity[v1alpha1.DRAMemoryCapacity]}
		return true, nil
	})
	return pl
}

// TestDRAUpstreamAllocationsRespected: claims allocated by the upstream
// DynamicResources plugin (the default-scheduler profile of the same
// scheduler) and by HetsevGPUShare see each other. A 30 GiB claim
// allocated upstream leaves its V100 2 GiB: no hetsev share goes there,
// and model-a's fourth 10 GiB instance stays Pending. Then an upstream
// 25 GiB claim fits no device hetsev filled (Pending), and a 20 GiB one
// takes the V100 where hetsev left 22 GiB.
func TestDRAUpstreamAllocationsRespected(t *testing.T) {
	cp, ctx, _ := draTestbed(t)
	c := cp.Client

	upstreamPod(ctx, t, c, "up-0", "30Gi")
	up0 := waitAllocated(ctx, t, c, "up-0")
	if up0.node != "v100-0" {
		t.Fatalf("upstream put its 30 GiB claim on %s/%s, want a V100", up0.node, up0.device)
	}
	var a0 placed
	for i := range 3 {
		name := fmt.Sprintf("a-%d", i)
		draPod(ctx, t, c, v1alpha1.SchedulerName, name, "model-a", "10Gi")
		pl := waitPlaced(ctx, t, c, name)
		if pl.node == up0.node && pl.device == up0.device {
			t.Errorf("%s on %s/%s, which upstream's claim filled to 30 of 32 GiB", name, pl.node, pl.device)
		}
		if i == 0 {
			a0 = pl
		}
	}
	draPod(ctx, t, c, v1alpha1.SchedulerName, "a-3", "model-a", "10Gi")
	waitPending(ctx, t, c, "a-3", "0/2 nodes are available")
	checkDRAAllocations(ctx, t, c)

	upstreamPod(ctx, t, c, "up-1", "25Gi")
	waitPending(ctx, t, c, "up-1", "cannot allocate all claims")
	upstreamPod(ctx, t, c, "up-2", "20Gi")
	up2 := waitAllocated(ctx, t, c, "up-2")
	if up2.node != a0.node || up2.device != a0.device {
		t.Errorf("upstream put 20 GiB on %s/%s, want %s/%s, the one device with 22 GiB left", up2.node, up2.device, a0.node, a0.device)
	}
	checkDRAAllocations(ctx, t, c)
}

// TestDRARestartRebuildsAccounting: after hetsev-scheduler is killed and
// restarted, its accounting comes from the claims' allocations and the
// pods they are reserved for: model-a, on both V100s before the restart,
// goes to a T4 after it and finds no V100 without it, and a 30 GiB claim
// finds no V100 with room.
func TestDRARestartRebuildsAccounting(t *testing.T) {
	cp, ctx, restart := draTestbed(t)
	c := cp.Client
	sched := v1alpha1.SchedulerName
	for i := range 2 {
		name := fmt.Sprintf("a-%d", i)
		draPod(ctx, t, c, sched, name, "model-a", "10Gi")
		if pl := waitPlaced(ctx, t, c, name); pl.node != "v100-0" {
			t.Fatalf("%s on %s before the restart, want v100-0", name, pl.node)
		}
	}
	restart()

	draPod(ctx, t, c, sched, "a-2", "model-a", "10Gi")
	if pl := waitPlaced(ctx, t, c, "a-2"); pl.node != "t4-0" {
		t.Errorf("a-2 on %s/%s after the restart, want t4-0 (model-a is on both V100s)", pl.node, pl.device)
	}
	// On v100-0 alone, model-a finds no GPU without it (interference
	// alone would not keep it off a V100 with 22 GiB free).
	draPod(ctx, t, c, sched, "a-3", "model-a", "10Gi", onNode("v100-0"))
	waitPending(ctx, t, c, "a-3", "anti-affinity")
	draPod(ctx, t, c, sched, "b-0", "model-b", "30Gi")
	waitPending(ctx, t, c, "b-0", "no GPU with 30720 MiB")
	checkDRAAllocations(ctx, t, c)
}

// TestDRABadInput: devices hetsev cannot share, and claims whose recorded
// allocation is not what they ask for, are handled with a reason or a
// Warning event and never over-commit a GPU:
//
//   - a node whose driver publishes a GPU without memory capacity and one
//     without allowMultipleAllocations: a pod pinned there stays Pending
//     with a message naming both devices and why;
//   - a claim's spec and allocation cannot be edited once allocated (the
//     API server refuses both), so its share stays what was allocated;
//   - an allocation written by hand that consumes 1 GiB of a T4 while its
//     claim requests 16 GiB is counted at 16 GiB (a Warning event on the
//     claim says so): no 10 GiB share goes to that T4;
//   - a claim deallocated by hand while its pod runs: the pod still holds
//     its GPU, counted from its hetsev.io/gpu-index (memory and
//     anti-affinity), with a Warning event on the pod.
func TestDRABadInput(t *testing.T) {
	cp, ctx, _ := draTestbed(t)
	c := cp.Client
	sched := v1alpha1.SchedulerName
	cat, err := catalog.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	t4, _ := cat.ByName("T4")
	if _, err := cluster.CreateNodes(ctx, c, []cluster.NodeGroup{{Prefix: "bad-", Count: 1, GPUType: t4, GPUsPerNode: 2, CPUs: 40, MemoryGiB: 62}}); err != nil {
		t.Fatal(err)
	}
	publishGPUs(ctx, t, c, "bad-0", []draGPU{
		{name: "gpu-0", index: 0, product: "Tesla T4", shared: true},
		{name: "gpu-1", index: 1, product: "Tesla T4", memory: "16Gi"},
	})
	draPod(ctx, t, c, sched, "on-bad", "model-x", "1Gi", onNode("bad-0"))
	msg := waitPending(ctx, t, c, "on-bad", "node bad-0 has no shareable GPU")
	for _, want := range []string{`device bad-0/gpu-0 on node bad-0: no capacity "memory"`, "device bad-0/gpu-1 on node bad-0: allowMultipleAllocations is not true"} {
		if !strings.Contains(msg, want) {
			t.Errorf("on-bad Pending with %q, want it to name %q", msg, want)
		}
	}

	// A hand-written allocation on t4-0's gpu-0 that records 1 GiB
	// consumed for a claim requesting 16 GiB.
	manual, err := c.ResourceV1().ResourceClaims("default").Create(ctx, &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "manual-gpu", Namespace: "default"},
		Spec:       claimSpec("16Gi"),
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	manual.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
		Request: v1alpha1.ClaimRequestName, Driver: v1alpha1.DRADriver, Pool: "t4-0", Device: "gpu-0",
		ShareID:          ptr.To(types.UID("0f5b2a9e-1111-4c3e-9d2a-6b1f0e7c1a01")),
		ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{v1alpha1.DRAMemoryCapacity: resource.MustParse("1Gi")},
	}}}}
	if manual, err = c.ResourceV1().ResourceClaims("default").UpdateStatus(ctx, manual, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("writing the allocation by hand: %v", err)
	}
	// Edits after allocation are refused.
	edit := manual.DeepCopy()
	edit.Spec = claimSpec("1Gi")
	if _, err := c.ResourceV1().ResourceClaims("default").Update(ctx, edit, metav1.UpdateOptions{}); err == nil {
		t.Errorf("the API server accepted a spec edit of an allocated claim")
	}
	edit = manual.DeepCopy()
	edit.Status.Allocation.Devices.Results[0].ConsumedCapacity[v1alpha1.DRAMemoryCapacity] = resource.MustParse("512Mi")
	if _, err := c.ResourceV1().ResourceClaims("default").UpdateStatus(ctx, edit, metav1.UpdateOptions{}); err == nil {
		t.Errorf("the API server accepted an edit of an allocation")
	}
	// t4-0: gpu-0 counts 16 GiB (full), gpu-1 is free: one 10 GiB share
	// fits, the second does not.
	draPod(ctx, t, c, sched, "t-0", "model-t", "10Gi", onNode("t4-0"))
	if pl := waitPlaced(ctx, t, c, "t-0"); pl.device != "gpu-1" {
		t.Errorf("t-0 on t4-0/%s, want gpu-1 (gpu-0 is held at its claim's 16 GiB)", pl.device)
	}
	draPod(ctx, t, c, sched, "t-1", "model-u", "10Gi", onNode("t4-0"))
	waitPending(ctx, t, c, "t-1", "no GPU with 10240 MiB")
	waitFor(ctx, t, 10*time.Second, "a Warning event on claim manual-gpu", func(ctx context.Context) (bool, error) {
		evs, err := eventsFor(ctx, c, "default", "manual-gpu")
		return strings.Contains(evs, "GPUShareCountedSafeSide") && strings.Contains(evs, "counted at its request"), err
	})

	// A claim deallocated by hand while its pod runs on v100-0.
	draPod(ctx, t, c, sched, "d-0", "model-d", "16Gi", onNode("v100-0"))
	d0 := waitPlaced(ctx, t, c, "d-0")
	claim, err := c.ResourceV1().ResourceClaims("default").Get(ctx, "d-0-gpu", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claim.Status = resourceapi.ResourceClaimStatus{}
	if _, err := c.ResourceV1().ResourceClaims("default").UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("deallocating d-0-gpu by hand: %v", err)
	}
	// model-d still runs on d0's GPU: the next one takes the other V100,
	// the third finds none without model-d.
	draPod(ctx, t, c, sched, "d-1", "model-d", "16Gi", onNode("v100-0"))
	if pl := waitPlaced(ctx, t, c, "d-1"); pl.device == d0.device {
		t.Errorf("d-1 on %s, the GPU d-0 still runs on (model-d twice)", pl.device)
	}
	draPod(ctx, t, c, sched, "d-2", "model-d", "16Gi", onNode("v100-0"))
	waitPending(ctx, t, c, "d-2", "anti-affinity")
	waitFor(ctx, t, 10*time.Second, "a Warning event on pod d-0", func(ctx context.Context) (bool, error) {
		evs, err := eventsFor(ctx, c, "default", "d-0")
		return strings.Contains(evs, "GPUShareCountedSafeSide"), err
	})
	checkDRAAllocations(ctx, t, c)
}

// TestDRATemplateClaims: pods whose claim comes from a
// ResourceClaimTemplate (as hetsev-scaler's Deployments and the webhook
// give them) wait for the resource-claim controller to create it, are
// then placed with the same rules, and deleting one frees its share (the
// controller deletes its generated claim) for a Pending pod.
func TestDRATemplateClaims(t *testing.T) {
	cp, ctx, _ := draTestbed(t)
	c := cp.Client
	tmpl := &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu-20gi", Namespace: "default"},
		Spec:       resourceapi.ResourceClaimTemplateSpec{Spec: claimSpec("20Gi")},
	}
	if _, err := c.ResourceV1().ResourceClaimTemplates("default").Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	create := func(name string) {
		t.Helper()
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: map[string]string{v1alpha1.AnnotationModel: "model-t"}},
			Spec: v1.PodSpec{
				SchedulerName:  v1alpha1.SchedulerName,
				NodeSelector:   map[string]string{"kubernetes.io/hostname": "v100-0"},
				Containers:     []v1.Container{{Name: "server", Image: "model-server:sim", Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: v1alpha1.PodClaimName}}}}},
				ResourceClaims: []v1.PodResourceClaim{{Name: v1alpha1.PodClaimName, ResourceClaimTemplateName: ptr.To(tmpl.Name)}},
			},
		}
		if _, err := c.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// placedOn waits for the pod to be bound and returns its generated
	// claim's device.
	placedOn := func(name string) (claimName, device string) {
		t.Helper()
		waitFor(ctx, t, 30*time.Second, "pod "+name+" bound with its generated claim allocated", func(ctx context.Context) (bool, error) {
			p, err := c.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil || p.Spec.NodeName == "" || len(p.Status.ResourceClaimStatuses) != 1 || p.Status.ResourceClaimStatuses[0].ResourceClaimName == nil {
				return false, nil
			}
			claimName = *p.Status.ResourceClaimStatuses[0].ResourceClaimName
			cl, err := c.ResourceV1().ResourceClaims("default").Get(ctx, claimName, metav1.GetOptions{})
			if err != nil || cl.Status.Allocation == nil {
				return false, err
			}
			if !dra.ReservedFor(cl, p.UID) {
				return false, fmt.Errorf("generated claim %s not reserved for %s", claimName, name)
			}
			device = cl.Status.Allocation.Devices.Results[0].Device
			return true, nil
		})
		return claimName, device
	}
	create("t-0")
	create("t-1")
	c0, d0 := placedOn("t-0")
	_, d1 := placedOn("t-1")
	if d0 == d1 {
		t.Errorf("t-0 and t-1 (model-t) both on %s", d0)
	}
	create("t-2")
	waitPending(ctx, t, c, "t-2", "0/2 nodes are available")

	if err := c.CoreV1().Pods("default").Delete(ctx, "t-0", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	if _, d2 := placedOn("t-2"); d2 != d0 {
		t.Errorf("t-2 on %s, want %s, which t-0 left", d2, d0)
	}
	if _, err := c.ResourceV1().ResourceClaims("default").Get(ctx, c0, metav1.GetOptions{}); err == nil {
		// The controller deletes it; the share was freed before that
		// only if the claim was deallocated.
		t.Logf("claim %s of the deleted pod still exists", c0)
	}
	checkDRAAllocations(ctx, t, c)
}

// TestDRADeviceClassSelectors: the GPUs hetsev places on are those its
// DeviceClass selects. With the class narrowed to T4s, a pod goes to a T4
// although worst fit alone would take a V100, and a 20 GiB claim, which
// only a V100 could hold, stays Pending with a reason naming the class.
func TestDRADeviceClassSelectors(t *testing.T) {
	cp, ctx, _ := draTestbed(t)
	c := cp.Client
	class, err := c.ResourceV1().DeviceClasses().Get(ctx, v1alpha1.DeviceClassName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	class.Spec.Selectors = append(class.Spec.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{
		Expression: `device.attributes["gpu.nvidia.com"].productName == "Tesla T4"`,
	}})
	if _, err := c.ResourceV1().DeviceClasses().Update(ctx, class, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	draPod(ctx, t, c, v1alpha1.SchedulerName, "s-0", "model-s", "10Gi")
	if pl := waitPlaced(ctx, t, c, "s-0"); pl.node != "t4-0" {
		t.Errorf("s-0 on %s/%s, want t4-0: the DeviceClass selects T4s only", pl.node, pl.device)
	}
	draPod(ctx, t, c, v1alpha1.SchedulerName, "s-1", "model-s", "20Gi")
	msg := waitPending(ctx, t, c, "s-1", "not selected by DeviceClass "+v1alpha1.DeviceClassName)
	t.Logf("s-1 Pending: %s", msg)
}

// TestDRAUnreserveRollsBack: when writing a claim's allocation fails in
// PreBind (here a ValidatingAdmissionPolicy refuses the claim's status
// update), Unreserve drops the pending allocation: the claim stays
// unallocated, the pod Pending with the error, and the GPU it had
// reserved takes other pods (both T4s of t4-0 get one).
func TestDRAUnreserveRollsBack(t *testing.T) {
	cp, ctx, _ := draTestbed(t)
	c := cp.Client
	denyByPolicy(ctx, t, c, "deny-claim-status", admissionregistrationv1.Update, "resourceclaims/status", "resource.k8s.io",
		`!has(object.metadata.labels) || !("deny-status" in object.metadata.labels)`, "status updates of this claim are refused (test)")
	// The policy is in force once a probe claim's status update is refused.
	probe, err := c.ResourceV1().ResourceClaims("default").Create(ctx, &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "default", Labels: map[string]string{"deny-status": ""}},
		Spec:       claimSpec("1Gi"),
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, 30*time.Second, "the policy refusing claim status updates", func(ctx context.Context) (bool, error) {
		_, err := c.ResourceV1().ResourceClaims("default").UpdateStatus(ctx, probe, metav1.UpdateOptions{})
		return err != nil && strings.Contains(err.Error(), "refused (test)"), nil
	})

	if _, err := c.ResourceV1().ResourceClaims("default").Create(ctx, &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "x-gpu", Namespace: "default", Labels: map[string]string{"deny-status": ""}},
		Spec:       claimSpec("10Gi"),
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	draPod(ctx, t, c, v1alpha1.SchedulerName, "x", "model-x", "10Gi", onNode("t4-0"))
	waitPending(ctx, t, c, "x", "refused (test)")

	draPod(ctx, t, c, v1alpha1.SchedulerName, "y", "model-y", "10Gi", onNode("t4-0"))
	draPod(ctx, t, c, v1alpha1.SchedulerName, "z", "model-z", "10Gi", onNode("t4-0"))
	y, z := waitPlaced(ctx, t, c, "y"), waitPlaced(ctx, t, c, "z")
	if y.device == z.device {
		t.Errorf("y and z both on t4-0/%s", y.device)
	}
	cl, err := c.ResourceV1().ResourceClaims("default").Get(ctx, "x-gpu", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cl.Status.Allocation != nil || len(cl.Status.ReservedFor) > 0 {
		t.Errorf("claim x-gpu status %+v after PreBind failed, want none", cl.Status)
	}
	checkDRAAllocations(ctx, t, c)
}

// denyByPolicy makes the API server refuse op on resource (of group) for
// objects where the CEL expression is false, with message: a
// ValidatingAdmissionPolicy and its binding, as a cluster's own policies
// would refuse a scheduler's write.
func denyByPolicy(ctx context.Context, t *testing.T, c kubernetes.Interface, name string, op admissionregistrationv1.OperationType, resource, group, expression, message string) {
	t.Helper()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{op},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{resource}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: expression, Message: message}},
		},
	}
	if _, err := c.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	if _, err := c.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestDRAUnreserveAfterPreBindRollsBack: when binding fails after PreBind
// wrote the claim's allocation and reservedFor (here the API server refuses
// the pod's binding), Unreserve takes the pod out of reservedFor and the
// allocation off the claim, so the GPU memory is free again for others:
// two 10Gi pods then get the two 16Gi GPUs of t4-0.
func TestDRAUnreserveAfterPreBindRollsBack(t *testing.T) {
	cp, ctx, _ := draTestbed(t)
	c := cp.Client
	denyByPolicy(ctx, t, c, "deny-binding", admissionregistrationv1.Create, "pods/binding", "",
		`!object.metadata.name.startsWith("deny-")`, "binding of this pod is refused (test)")
	// The policy is in force once a probe pod's binding is refused.
	if _, err := c.CoreV1().Pods("default").Create(ctx, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-probe", Namespace: "default"},
		Spec:       v1.PodSpec{SchedulerName: "nobody", Containers: []v1.Container{{Name: "c", Image: "none"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, 30*time.Second, "the policy refusing bindings", func(ctx context.Context) (bool, error) {
		err := c.CoreV1().Pods("default").Bind(ctx, &v1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: "deny-probe", Namespace: "default"},
			Target:     v1.ObjectReference{Kind: "Node", Name: "t4-0"},
		}, metav1.CreateOptions{})
		return err != nil && strings.Contains(err.Error(), "refused (test)"), nil
	})

	draPod(ctx, t, c, v1alpha1.SchedulerName, "deny-w", "model-w", "10Gi", onNode("t4-0"))
	// The scheduler records the failure after Unreserve ran, and retries
	// only after a backoff of a second or more: the claim is free then.
	// Without the rollback it stays allocated to the Pending pod for good.
	waitPending(ctx, t, c, "deny-w", "refused (test)")
	waitFor(ctx, t, 30*time.Second, "claim deny-w-gpu rolled back (no allocation, no reservedFor) after the binding failed", func(ctx context.Context) (bool, error) {
		cl, err := c.ResourceV1().ResourceClaims("default").Get(ctx, "deny-w-gpu", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return cl.Status.Allocation == nil && len(cl.Status.ReservedFor) == 0, nil
	})
	// No further attempt once the pod is gone; its standalone claim stays.
	if err := c.CoreV1().Pods("default").Delete(ctx, "deny-w", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, 30*time.Second, "pod deny-w gone", func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().Pods("default").Get(ctx, "deny-w", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})

	draPod(ctx, t, c, v1alpha1.SchedulerName, "y", "model-y", "10Gi", onNode("t4-0"))
	draPod(ctx, t, c, v1alpha1.SchedulerName, "z", "model-z", "10Gi", onNode("t4-0"))
	y, z := waitPlaced(ctx, t, c, "y"), waitPlaced(ctx, t, c, "z")
	if y.device == z.device {
		t.Errorf("y and z both on t4-0/%s", y.device)
	}
	checkDRAAllocations(ctx, t, c)
}

// TestDRABurstAntiAffinity: four same-model pods pending when
// hetsev-scheduler starts are placed back to back, each before the last
// one's PreBind has written its claim, and still land on four different
// GPUs: the plugin counts allocations in flight (model and busy share, not
// only memory), so identical-model anti-affinity holds within a burst.
func TestDRABurstAntiAffinity(t *testing.T) {
	cp, ctx := draCluster(t)
	c := cp.Client
	const n = 4 // the testbed's GPUs: two V100s, two T4s
	for i := range n {
		draPod(ctx, t, c, v1alpha1.SchedulerName, fmt.Sprintf("burst-%d", i), "model-burst", "1Gi")
	}
	startDRAScheduler(ctx, t, cp)
	on := map[string]string{}
	for i := range n {
		name := fmt.Sprintf("burst-%d", i)
		pl := waitPlaced(ctx, t, c, name)
		gpu := pl.node + "/" + pl.device
		if other, ok := on[gpu]; ok {
			t.Errorf("%s and %s (both model-burst) on %s", other, name, gpu)
		}
		on[gpu] = name
	}
	checkDRAAllocations(ctx, t, c)
}
