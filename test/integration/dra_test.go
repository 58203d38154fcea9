package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/catalog"

	"github.com/hetsev/hetsev/internal/cluster"
)

// draSchedulerConfig is the KubeSchedulerConfiguration of hetsev-scheduler
// in GPU mode dra: the hetsev profile with HetsevGPUShare allocating claims
// (the upstream DynamicResources plugin off there, HetsevGPUShare at
// preBind) and a default-scheduler profile with upstream's plugins, whose
// DynamicResources allocates other pods' claims in the same process (the
// scheduler's SharedDRAManager is one for both).
func draSchedulerConfig(kubeconfig string) string {
	return fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
leaderElection:
  leaderElect: false
profiles:
  - schedulerName: hetsev-scheduler
    plugins:
      multiPoint:
        disabled:
          - name: DynamicResources
      queueSort:
        disabled:
          - name: "*"
        enabled:
          - name: HetsevFairQueue
      preFilter:
        enabled:
          - name: HetsevFairQueue
          - name: HetsevGPUShare
      filter:
        enabled:
          - name: HetsevGPUShare
      score:
        disabled:
          - name: "*"
        enabled:
          - name: HetsevGPUShare
            weight: 1
      reserve:
        enabled:
          - name: HetsevGPUShare
      preBind:
        enabled:
          - name: HetsevGPUShare
      bind:
        disabled:
          - name: "*"
        enabled:
          - name: HetsevGPUShare
          - name: DefaultBinder
    pluginConfig:
      - name: HetsevGPUShare
        args:
          gpuMode: dra
  # Upstream's plugins; the queue sort must be the same in every profile.
  - schedulerName: default-scheduler
    plugins:
      queueSort:
        disabled:
          - name: "*"
        enabled:
          - name: HetsevFairQueue
      preFilter:
        enabled:
          - name: HetsevFairQueue
`, kubeconfig)
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
func draTestbed(t *testing.T) (*cluster.ControlPlane, context.Context, func() *cluster.Process) {
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
	var sched *cluster.Process
	start := func() *cluster.Process {
		p, err := cluster.StartSchedulerWithConfig(ctx, cp, v1alpha1.SchedulerName, draSchedulerConfig(cp.Kubeconfig))
		if err != nil {
			t.Fatal(err)
		}
		sched = p
		return p
	}
	start()
	t.Cleanup(func() {
		sched.Stop(5 * time.Second)
		if t.Failed() {
			t.Logf("--- last lines of hetsev-scheduler ---\n%s", sched.Tail(80))
		}
	})
	return cp, ctx, start
}

// draPod creates a pod of model with a ResourceClaim asking for memory
// of GPU memory: its own claim <name>-gpu (entry "gpu"), scheduled by
// scheduler.
func draPod(ctx context.Context, t *testing.T, c kubernetes.Interface, scheduler, name, model, memory string) *v1.Pod {
	t.Helper()
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-gpu", Namespace: "default"},
		Spec:       claimSpec(memory),
	}
	if _, err := c.ResourceV1().ResourceClaims("default").Create(ctx, claim, metav1.CreateOptions{}); err != nil {
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
	p, err := c.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
	return p
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
		if !reservedForPod(claim, p) {
			return false, fmt.Errorf("claim of %s not reserved for it: %+v", name, claim.Status.ReservedFor)
		}
		if r.ShareID == nil {
			return false, fmt.Errorf("claim of %s allocated without a shareID", name)
		}
		if got := p.Annotations[v1alpha1.AnnotationGPUIndex]; got != strings.TrimPrefix(r.Device, "gpu-") {
			return false, fmt.Errorf("pod %s has %s=%q, allocated device %s", name, v1alpha1.AnnotationGPUIndex, got, r.Device)
		}
		pl = placed{node: p.Spec.NodeName, device: r.Device, consumed: r.ConsumedCapacity[v1alpha1.DRAMemoryCapacity]}
		return true, nil
	})
	return pl
}

func reservedForPod(claim *resourceapi.ResourceClaim, p *v1.Pod) bool {
	for _, r := range claim.Status.ReservedFor {
		if r.UID == p.UID {
			return true
		}
	}
	return false
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
