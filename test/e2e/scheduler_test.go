//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// gpuKey names one GPU: node and index.
type gpuKey struct {
	node  string
	index string
}

// testSchedulerAnnotations: hetsev-scheduler (GPU mode annotations) places
// model instances on the real nodes' GPUs; every container, started by the
// kubelet, sees the GPU index the scheduler chose; no GPU holds two
// instances of one model or more GPU memory than it has; an instance with
// no GPU left stays Pending with the scheduler's reason.
func testSchedulerAnnotations(ctx context.Context, t *testing.T, e *env) {
	sched, err := cluster.StartScheduler(ctx, e.cp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sched.Stop(10 * time.Second) })
	c := e.cp.Client
	defer deletePods(ctx, t, e, "e2e=scheduler")

	// One ResNet-50 instance per GPU (anti-affinity), then an SSD instance of
	// 10 GiB on each T4 (16 GiB each, 2 GiB taken).
	var names []string
	for i := 0; i < 2*gpusPerNode; i++ {
		names = append(names, fmt.Sprintf("resnet50-%d", i))
		create(ctx, t, e, gpuPod(names[len(names)-1], "resnet50", "2Gi", nil))
	}
	for i := 0; i < gpusPerNode; i++ {
		names = append(names, fmt.Sprintf("ssd-%d", i))
		create(ctx, t, e, gpuPod(names[len(names)-1], "ssd-resnet50", "10Gi",
			map[string]string{gpuinventory.LabelGPUProduct: e.nodes[1].GPUType.ProductLabel}))
	}
	start := time.Now()
	ips := map[string]string{}
	for _, n := range names {
		ips[n] = waitPodReady(ctx, t, e, n, 2*time.Minute)
	}
	t.Logf("%d instances Ready through the kubelets %v after creation", len(names), time.Since(start).Round(100*time.Millisecond))

	memory := map[gpuKey]int64{}
	models := map[gpuKey][]string{}
	capacity := map[string]int64{}
	for _, n := range e.nodes {
		capacity[n.Name] = n.GPUType.MemoryMiB
	}
	for _, name := range names {
		p, err := c.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var seen struct{ Pod, Node, GPUIndex string }
		getJSON(ctx, t, "http://"+net.JoinHostPort(ips[name], "8080")+"/gpu", &seen)
		want := p.Annotations[v1alpha1.AnnotationGPUIndex]
		if want == "" || seen.GPUIndex != want || seen.Node != p.Spec.NodeName {
			t.Errorf("%s: the container sees GPU %q on %q; the scheduler chose GPU %q on %q", name, seen.GPUIndex, seen.Node, want, p.Spec.NodeName)
		}
		// Counted from what the container reports.
		k := gpuKey{seen.Node, seen.GPUIndex}
		mem := resource.MustParse(p.Annotations[v1alpha1.AnnotationGPUMemory])
		memory[k] += mem.Value() >> 20
		models[k] = append(models[k], p.Annotations[v1alpha1.AnnotationModel])
	}
	colocations, overcommits := 0, 0
	for k, ms := range models {
		seenModel := map[string]bool{}
		for _, m := range ms {
			if seenModel[m] {
				colocations++
				t.Errorf("GPU %s/%s holds two instances of %s", k.node, k.index, m)
			}
			seenModel[m] = true
		}
		if memory[k] > capacity[k.node] {
			overcommits++
			t.Errorf("GPU %s/%s holds %d MiB of instances, has %d MiB", k.node, k.index, memory[k], capacity[k.node])
		}
	}
	if len(models) != 2*gpusPerNode {
		t.Errorf("instances occupy %d GPUs, want all %d", len(models), 2*gpusPerNode)
	}
	t.Logf("GPUs seen by containers: %s; identical-model co-locations %d, GPU memory over-commits %d", describe(models), colocations, overcommits)

	// A fifth ResNet-50 instance has no GPU without one.
	create(ctx, t, e, gpuPod("resnet50-extra", "resnet50", "2Gi", nil))
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		evs, err := c.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=resnet50-extra"})
		if err != nil {
			return false, nil
		}
		for _, ev := range evs.Items {
			if ev.Reason == "FailedScheduling" && strings.Contains(ev.Message, "anti-affinity") {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		dumpPod(ctx, t, e, "resnet50-extra")
		t.Errorf("resnet50-extra: no FailedScheduling event naming anti-affinity: %v", err)
	}
}

// gpuPod is a model-server pod for hetsev-scheduler: model, GPU memory
// (a quantity) and node selector.
func gpuPod(name, model, gpuMemory string, selector map[string]string) *v1.Pod {
	p := modelServerPod(name, "", "")
	p.Labels["e2e"] = "scheduler"
	p.Annotations = map[string]string{v1alpha1.AnnotationModel: model, v1alpha1.AnnotationGPUMemory: gpuMemory}
	p.Spec.SchedulerName = v1alpha1.SchedulerName
	p.Spec.NodeSelector = selector
	p.Spec.Containers[0].Resources.Requests = v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("50m"), v1.ResourceMemory: resource.MustParse("32Mi"),
	}
	return p
}

func create(ctx context.Context, t *testing.T, e *env, p *v1.Pod) {
	t.Helper()
	if _, err := e.cp.Client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s: %v", p.Name, err)
	}
}

// deletePods deletes the pods matching selector and waits until they are
// gone (the kubelet stopped their containers).
func deletePods(ctx context.Context, t *testing.T, e *env, selector string) {
	c := e.cp.Client
	if err := c.CoreV1().Pods("default").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: selector}); err != nil {
		t.Errorf("deleting pods %s: %v", selector, err)
		return
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: selector})
		return err == nil && len(l.Items) == 0, nil
	})
	if err != nil {
		t.Errorf("pods %s not gone within a minute", selector)
	}
}

// describe lists the models per GPU, sorted by GPU.
func describe(models map[gpuKey][]string) string {
	var parts []string
	for _, n := range []string{"node1", "node2"} {
		for i := 0; i < gpusPerNode; i++ {
			k := gpuKey{n, strconv.Itoa(i)}
			parts = append(parts, fmt.Sprintf("%s/%s=[%s]", k.node, k.index, strings.Join(models[k], " ")))
		}
	}
	return strings.Join(parts, " ")
}

// testSchedulerDRA: in GPU mode dra each node runs the simulated NVIDIA DRA
// kubelet plugin (hack/e2e/draplugin), which publishes its GPUs as a
// ResourceSlice and prepares claims through CDI. hetsev-scheduler
// allocates each instance's ResourceClaim (GPU memory as consumable
// capacity), the kubelet has the plugin prepare it, and containerd gives
// the container NVIDIA_VISIBLE_DEVICES for the allocated device: every
// container sees the GPU of its claim's allocation.
func testSchedulerDRA(ctx context.Context, t *testing.T, e *env) {
	c := e.cp.Client
	startDRAPlugins(ctx, t, e)
	if err := cluster.InstallDeviceClass(ctx, e.cp); err != nil {
		t.Fatal(err)
	}
	cfg, err := cluster.DRASchedulerConfig(e.cp.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	sched, err := cluster.StartSchedulerWithConfig(ctx, e.cp, v1alpha1.SchedulerName, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sched.Stop(10 * time.Second) })
	defer deletePods(ctx, t, e, "e2e=dra")

	var names []string
	for i := 0; i < 2*gpusPerNode; i++ {
		names = append(names, fmt.Sprintf("dra-resnet50-%d", i))
		createDRAPod(ctx, t, e, names[len(names)-1], "resnet50", "2Gi", nil)
	}
	start := time.Now()
	ips := map[string]string{}
	for _, n := range names {
		ips[n] = waitPodReady(ctx, t, e, n, 2*time.Minute)
	}
	t.Logf("%d instances with ResourceClaims Ready through the kubelets and the DRA plugin %v after creation", len(names), time.Since(start).Round(100*time.Millisecond))
	models := map[gpuKey][]string{}
	for _, name := range names {
		claim, err := c.ResourceV1().ResourceClaims("default").Get(ctx, name+"-gpu", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if claim.Status.Allocation == nil || len(claim.Status.Allocation.Devices.Results) != 1 {
			t.Fatalf("%s: claim not allocated to one device: %+v", name, claim.Status.Allocation)
		}
		dev := claim.Status.Allocation.Devices.Results[0].Device
		want := strings.TrimPrefix(dev, "gpu-") // dradriver.Slice names device i gpu-i
		p, err := c.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var seen struct{ Node, VisibleDevices string }
		getJSON(ctx, t, "http://"+net.JoinHostPort(ips[name], "8080")+"/gpu", &seen)
		if seen.VisibleDevices != want || seen.Node != p.Spec.NodeName {
			t.Errorf("%s: the container sees NVIDIA_VISIBLE_DEVICES %q on %q; the claim is allocated %s on %q", name, seen.VisibleDevices, seen.Node, dev, p.Spec.NodeName)
		}
		k := gpuKey{seen.Node, seen.VisibleDevices}
		models[k] = append(models[k], "resnet50")
	}
	colocations := 0
	for k, ms := range models {
		if len(ms) > 1 {
			colocations++
			t.Errorf("GPU %s/%s holds %d resnet50 instances", k.node, k.index, len(ms))
		}
	}
	t.Logf("GPUs seen by containers (NVIDIA_VISIBLE_DEVICES from the plugin's CDI specs): %s; identical-model co-locations %d", describe(models), colocations)

	// A plugin that fails to prepare a claim: the pod stays
	// ContainerCreating with the driver's reason.
	deletePods(ctx, t, e, "e2e=dra")
	restore := failPrepareOn(t, e.nodes[1])
	defer restore()
	createDRAPod(ctx, t, e, "dra-unprepared", "resnet50", "2Gi", map[string]string{"kubernetes.io/hostname": e.nodes[1].Name})
	msg := waitEvent(ctx, t, e, "dra-unprepared", "FailedPrepareDynamicResources", "CDI spec", 2*time.Minute)
	t.Logf("claim the plugin cannot prepare: %s", msg)
	waitWaitingReason(ctx, t, e, "dra-unprepared", "ContainerCreating", 10*time.Second)
}

// startDRAPlugins runs the simulated NVIDIA DRA kubelet plugin on each
// node (stopped when t ends) and waits for their ResourceSlices.
func startDRAPlugins(ctx context.Context, t *testing.T, e *env) {
	t.Helper()
	for _, n := range e.nodes {
		n.inNetns(t, "hetsev-e2e-draplugin",
			"--node="+n.Name, "--gpu-type="+n.GPUType.Name, fmt.Sprintf("--gpu-count=%d", gpusPerNode),
			"--kubeconfig="+filepath.Join(n.Dir, "kubeconfig"),
			"--plugin-data-dir="+filepath.Join(n.Dir, "kubelet", "plugins", v1alpha1.DRADriver),
			"--registrar-dir="+filepath.Join(n.Dir, "kubelet", "plugins_registry"),
			"--cdi-dir="+filepath.Join(n.Dir, "cdi"))
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := e.cp.Client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == len(e.nodes), nil
	})
	if err != nil {
		t.Fatalf("the nodes' plugins did not publish %d ResourceSlices within a minute", len(e.nodes))
	}
}

// createDRAPod creates a model-server pod for hetsev-scheduler with its own
// ResourceClaim <name>-gpu for gpuMemory of GPU memory on a device of
// hetsev's DeviceClass, on the nodes of selector.
func createDRAPod(ctx context.Context, t *testing.T, e *env, name, model, gpuMemory string, selector map[string]string) {
	t.Helper()
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-gpu", Namespace: "default"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: v1alpha1.ClaimRequestName,
			Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: v1alpha1.DeviceClassName,
				Capacity: &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{
					v1alpha1.DRAMemoryCapacity: resource.MustParse(gpuMemory),
				}},
			},
		}}}},
	}
	if _, err := e.cp.Client.ResourceV1().ResourceClaims("default").Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating claim %s: %v", claim.Name, err)
	}
	p := gpuPod(name, model, gpuMemory, selector)
	p.Labels["e2e"] = "dra"
	delete(p.Annotations, v1alpha1.AnnotationGPUMemory)
	p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: v1alpha1.PodClaimName}}
	p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: v1alpha1.PodClaimName, ResourceClaimName: &claim.Name}}
	create(ctx, t, e, p)
}
