package provider

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/adapter/internal/adaptertest"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

const nicDriver = "nic.example.com"

// draFixture: node-1 has GPU 0 (80 %, 4096 MiB) and GPU 1 (30 %, 1024
// MiB), published by the DRA driver as devices gpu-b (index 0) and gpu-a
// (index 1), so that the order of names is not that of the indexes, and
// gpu-c without an index; an older generation of its pool says gpu-a is
// index 7. node-2 publishes gpu-q with the index attribute qualified by the
// driver's name (index 1, 20 %). The pods are given by the test; the
// claims are these:
//
//	named-gpu       gpu-a (GPU 1)
//	templ-gpu-x7k2  gpu-b (GPU 0), generated from a template
//	annotated-gpu   gpu-a (GPU 1)
//	multi-nic       a NIC of another driver
//	multi-gpus      gpu-a and gpu-b (GPUs 1 and 0)
//	qualified-gpu   node-2's gpu-q (GPU 1)
//	pending-gpu     not allocated
//	nic-only        a NIC of another driver only
//	lost-pool       a device of pool node-9, which no slice has
//	lost-device     node-1's gpu-z, which its slice does not have
//	no-index        node-1's gpu-c, which has no index attribute
func draFixture(t *testing.T, pods ...*corev1.Pod) *Provider {
	t.Helper()
	at := adaptertest.SimEpoch.Add(90 * time.Second)
	src := &fakeSource{gauges: map[string]adapter.Value{
		adapter.SeriesDCGMGPUUtil + "/node-1/0": {Value: 80, Time: at},
		adapter.SeriesDCGMGPUUtil + "/node-1/1": {Value: 30, Time: at},
		adapter.SeriesDCGMGPUUtil + "/node-1/7": {Value: 99, Time: at},
		adapter.SeriesDCGMGPUUtil + "/node-2/1": {Value: 20, Time: at},
		adapter.SeriesDCGMFBUsed + "/node-1/0":  {Value: 4096, Time: at},
		adapter.SeriesDCGMFBUsed + "/node-1/1":  {Value: 1024, Time: at},
	}}
	old := adaptertest.GPUSlice("node-1", adaptertest.GPUDevice{Name: "gpu-a", Index: 7})
	old.Name, old.Spec.Pool.Generation = "node-1-old", 0
	node2 := adaptertest.GPUSlice("node-2", adaptertest.GPUDevice{Name: "gpu-q", Index: -1})
	one := int64(1)
	node2.Spec.Devices[0].Attributes[resourceapi.QualifiedName(v1alpha1.DRADriver+"/index")] = resourceapi.DeviceAttribute{IntValue: &one}
	gpu := func(node, dev string) resourceapi.DeviceRequestAllocationResult {
		return adaptertest.Result(v1alpha1.DRADriver, node, dev)
	}
	claims, slices := adaptertest.DRAListers(t, []*resourceapi.ResourceClaim{
		adaptertest.Claim("ml", "named-gpu", gpu("node-1", "gpu-a")),
		adaptertest.Claim("ml", "templ-gpu-x7k2", gpu("node-1", "gpu-b")),
		adaptertest.Claim("ml", "annotated-gpu", gpu("node-1", "gpu-a")),
		adaptertest.Claim("ml", "multi-nic", adaptertest.Result(nicDriver, "node-1", "eth1")),
		adaptertest.Claim("ml", "multi-gpus", gpu("node-1", "gpu-a"), gpu("node-1", "gpu-b")),
		adaptertest.Claim("ml", "qualified-gpu", gpu("node-2", "gpu-q")),
		adaptertest.Claim("ml", "pending-gpu"),
		adaptertest.Claim("ml", "nic-only", adaptertest.Result(nicDriver, "node-1", "eth0")),
		adaptertest.Claim("ml", "lost-pool", gpu("node-9", "gpu-0")),
		adaptertest.Claim("ml", "lost-device", gpu("node-1", "gpu-z")),
		adaptertest.Claim("ml", "no-index", gpu("node-1", "gpu-c")),
	}, []*resourceapi.ResourceSlice{
		old,
		adaptertest.GPUSlice("node-1", adaptertest.GPUDevice{Name: "gpu-a", Index: 1}, adaptertest.GPUDevice{Name: "gpu-b", Index: 0}, adaptertest.GPUDevice{Name: "gpu-c", Index: -1}),
		node2,
	})
	podLister, deps := adaptertest.Listers(t, pods, []*appsv1.Deployment{
		adaptertest.Deployment("ml", "llm", map[string]string{"app": "llm"}),
	})
	return New(src, podLister, deps).WithDRA("", claims, slices, nil)
}

// In GPU mode dra, a pod without hetsev.io/gpu-index (its claim allocated
// by another scheduler) is joined to the DCGM series of the GPU its claim
// holds: the device's index attribute, not its name or position. The
// annotation wins when present; a pod with several claims is joined
// through the one of the GPU driver, and one holding two GPUs to the
// lower index.
func TestProviderDRAPodGPUFromClaim(t *testing.T) {
	multi := adaptertest.NewPod("ml", "multi").Node("node-1").
		Claim("nic", "multi-nic").TemplateClaim("gpus", "two-gpus", "multi-gpus").
		TemplateClaim("unneeded", "nothing", "").Obj()
	// A template entry whose status names no claim needed none.
	multi.Status.ResourceClaimStatuses = append(multi.Status.ResourceClaimStatuses, corev1.PodResourceClaimStatus{Name: "unneeded"})
	p := draFixture(t,
		adaptertest.NewPod("ml", "named").Label("app", "llm").Ready().Node("node-1").Claim(v1alpha1.PodClaimName, "named-gpu").Obj(),
		adaptertest.NewPod("ml", "templ").Label("app", "llm").Ready().Node("node-1").TemplateClaim(v1alpha1.PodClaimName, "llm-gpu", "templ-gpu-x7k2").Obj(),
		adaptertest.NewPod("ml", "annotated").GPU("node-1", 0).Claim(v1alpha1.PodClaimName, "annotated-gpu").Obj(),
		adaptertest.NewPod("ml", "qualified").Node("node-2").Claim(v1alpha1.PodClaimName, "qualified-gpu").Obj(),
		multi,
	)
	util, mem := adaptertest.PodsInfo(adapter.MetricGPUUtilization), adaptertest.PodsInfo(adapter.MetricGPUMemoryUsed)
	for _, tc := range []struct {
		pod       string
		util, mem float64
		why       string
	}{
		{"named", 30, 1024, "named claim on gpu-a, index 1"},
		{"templ", 80, 4096, "claim generated from a template on gpu-b, index 0"},
		{"annotated", 80, 4096, "the annotation (0) wins over the claim (1)"},
		{"multi", 80, 4096, "claim gpus holds indexes 1 and 0: the lower"},
	} {
		if got := adaptertest.GetValue(t, p, util, adaptertest.NN("ml", tc.pod)); got != tc.util {
			t.Errorf("gpu_utilization_percent of %s = %v, want %v (%s)", tc.pod, got, tc.util, tc.why)
		}
		if got := adaptertest.GetValue(t, p, mem, adaptertest.NN("ml", tc.pod)); got != tc.mem {
			t.Errorf("gpu_memory_used_mib of %s = %v, want %v (%s)", tc.pod, got, tc.mem, tc.why)
		}
	}
	if got := adaptertest.GetValue(t, p, util, adaptertest.NN("ml", "qualified")); got != 20 {
		t.Errorf("gpu_utilization_percent of qualified = %v, want 20 (node-2 GPU 1, attribute %s/index)", got, v1alpha1.DRADriver)
	}
	// A Deployment of such pods, as HPA reads it.
	if got := adaptertest.GetValue(t, p, adaptertest.DepInfo(adapter.MetricGPUUtilization), adaptertest.NN("ml", "llm")); got != 55 {
		t.Errorf("gpu_utilization_percent of deployment llm = %v, want mean(30, 80)", got)
	}
}

// Every reason a pod's GPU cannot be read from its claims is NotFound with
// a reason that names it, never a panic or a zero; so is a pod without the
// annotation in annotation mode, whatever claims it has.
func TestProviderDRAPodGPUErrors(t *testing.T) {
	pod := func(name string) *adaptertest.PodBuilder { return adaptertest.NewPod("ml", name).Node("node-1") }
	pods := []*corev1.Pod{
		pod("no-claims").Obj(),
		pod("missing").Claim(v1alpha1.PodClaimName, "nope").Obj(),
		pod("ungenerated").TemplateClaim(v1alpha1.PodClaimName, "llm-gpu", "").Obj(),
		pod("unallocated").Claim(v1alpha1.PodClaimName, "pending-gpu").Obj(),
		pod("other-driver").Claim(v1alpha1.PodClaimName, "nic-only").Obj(),
		pod("lost-pool").Claim(v1alpha1.PodClaimName, "lost-pool").Obj(),
		pod("lost-device").Claim(v1alpha1.PodClaimName, "lost-device").Obj(),
		pod("no-index").Claim(v1alpha1.PodClaimName, "no-index").Obj(),
		pod("other-node").Claim(v1alpha1.PodClaimName, "qualified-gpu").Obj(), // node-2's device
		pod("one-missing").Claim(v1alpha1.PodClaimName, "named-gpu").Claim("extra", "nope").Obj(),
		adaptertest.NewPod("ml", "unbound").Claim(v1alpha1.PodClaimName, "named-gpu").Obj(),
		pod("bad-annotation").Annotate(v1alpha1.AnnotationGPUIndex, "one").Claim(v1alpha1.PodClaimName, "named-gpu").Obj(),
	}
	p := draFixture(t, pods...)
	for _, tc := range []struct{ pod, want string }{
		{"no-claims", "no ResourceClaims"},
		{"missing", "ResourceClaim ml/nope: not found"},
		{"ungenerated", `pod claim "gpu" (from a template) is not generated yet`},
		{"unallocated", "ResourceClaim ml/pending-gpu is not allocated"},
		{"other-driver", "none of its ResourceClaims ([nic-only]) is allocated a device of driver gpu.nvidia.com"},
		{"lost-pool", `device gpu.nvidia.com/node-9/gpu-0 is not published: no ResourceSlice of driver gpu.nvidia.com has pool "node-9"`},
		{"lost-device", `pool "node-1" (generation 1) of driver gpu.nvidia.com has no device "gpu-z"`},
		{"no-index", `device gpu.nvidia.com/node-1/gpu-c in ResourceSlice node-1-gpu.nvidia.com has neither attribute "uuid" nor "index"`},
		{"other-node", "published by ResourceSlice node-2-gpu.nvidia.com for node node-2, not for the pod's node node-1"},
		{"one-missing", "ResourceClaim ml/nope: not found"},
		{"unbound", "is not bound to a node"},
		{"bad-annotation", `bad hetsev.io/gpu-index "one"`},
	} {
		checkNoGPU(t, p, tc.pod, tc.want)
		if tc.pod != "unbound" && tc.pod != "bad-annotation" {
			checkNoGPU(t, p, tc.pod, "has no hetsev.io/gpu-index annotation, and its GPU cannot be read from its ResourceClaims")
		}
	}

	// Until the claim and slice caches have synced, no pod is read from
	// its claims.
	synced := false
	p.WithDRA("", p.claims, p.slices, func() bool { return synced })
	checkNoGPU(t, p, "missing", "caches have not synced yet")
	synced = true
	checkNoGPU(t, p, "missing", "ResourceClaim ml/nope: not found")

	// Annotation mode reads no claims.
	named := pod("named").Claim(v1alpha1.PodClaimName, "named-gpu").Obj()
	podLister, deps := adaptertest.Listers(t, []*corev1.Pod{named}, nil)
	annotations := New(p.src, podLister, deps)
	checkNoGPU(t, annotations, "named", "pod ml/named has no hetsev.io/gpu-index annotation: ")
}

// checkNoGPU checks that pod ml/name has no GPU metrics (NotFound) and
// that the reason contains want.
func checkNoGPU(t *testing.T, p *Provider, name, want string) {
	t.Helper()
	nn := types.NamespacedName{Namespace: "ml", Name: name}
	if mv, err := p.GetMetricByName(context.Background(), nn, adaptertest.PodsInfo(adapter.MetricGPUUtilization), labels.Everything()); !apierrors.IsNotFound(err) {
		t.Errorf("pod %s: got %v, %v; want NotFound", name, mv, err)
	}
	gpu, err := p.podGPU(nn)
	if !adaptertest.IsNoData(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("pod %s: podGPU = %v, %v; want no data because %q", name, gpu, err, want)
	}
}
