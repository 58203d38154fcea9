package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"

	"github.com/hetsev/hetsev/internal/cluster"
)

// TestGPUPoolKeepsAllocatorsApart: hetsev beside the GPU Operator's device
// plugin. Two T4 servers of two GPUs, each advertising nvidia.com/gpu: 2:
// pool-0 in hetsev's GPU pool (labelled and tainted hetsev.io/gpu-pool=true)
// and other-0 outside it. The shipped scheduler configuration (gpuPool on)
// runs with a default-scheduler profile of upstream's plugins.
//
//   - Three default-scheduler pods of nvidia.com/gpu: 1 each: two land on
//     other-0, and the third stays Pending (other-0 is full, pool-0 is
//     tainted) rather than taking a GPU of the pool.
//   - Three hetsev instances of one model, tolerating the pool taint (as
//     hetsev-scaler's and the webhook's pods do) but not selecting the pool:
//     two land on pool-0, one per GPU, and the third stays Pending with
//     hetsev-scheduler's reason, although other-0 has CPU and, by hetsev's
//     accounting, free GPU memory.
func TestGPUPoolKeepsAllocatorsApart(t *testing.T) {
	cp, ctx := controlPlane(t)
	t4 := catalogT4(t)
	if _, err := cluster.CreateNodes(ctx, cp.Client, []cluster.NodeGroup{
		{Prefix: "pool-", Count: 1, GPUType: t4, GPUsPerNode: 2, CPUs: 40, MemoryGiB: 62, TaintGPUPool: true},
		{Prefix: "other-", Count: 1, GPUType: t4, GPUsPerNode: 2, CPUs: 40, MemoryGiB: 62, OutsideGPUPool: true},
	}); err != nil {
		t.Fatal(err)
	}
	kwok, err := cluster.StartKwok(ctx, cp, cluster.BinDir()+"/kwok")
	if err != nil {
		t.Fatalf("kwok: %v", err)
	}
	stopOnCleanup(t, kwok)
	cfg, err := cluster.SchedulerConfig(cp.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cfg, "gpuPool: true") {
		t.Fatal("manifests/scheduler-config.yaml does not turn gpuPool on")
	}
	cfg = withDefaultSchedulerProfile(cfg)
	sched, err := cluster.StartSchedulerWithConfig(ctx, cp, v1alpha1.SchedulerName, cfg)
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, sched)
	c := cp.Client

	for i := range 3 {
		devicePluginPod(ctx, t, c, fmt.Sprintf("whole-gpu-%d", i))
	}
	for i := range 3 {
		b := modelPod(fmt.Sprintf("resnet50-%d", i), "resnet50", "2Gi").on("Tesla-T4")
		b.pod.Spec.Tolerations = []v1.Toleration{gpuinventory.GPUPoolToleration()}
		b.create(ctx, t, c)
	}

	// Each group's two bound pods, then the third's FailedScheduling.
	bound := func(prefix string) map[string]string {
		t.Helper()
		out := map[string]string{}
		waitFor(ctx, t, 60*time.Second, "two bound pods "+prefix+"*", func(ctx context.Context) (bool, error) {
			pods, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			clear(out)
			for _, p := range pods.Items {
				if strings.HasPrefix(p.Name, prefix) && p.Spec.NodeName != "" {
					out[p.Name] = p.Spec.NodeName
				}
			}
			return len(out) >= 2, nil
		})
		return out
	}
	whole, hetsev := bound("whole-gpu-"), bound("resnet50-")
	for name, node := range whole {
		if node != "other-0" {
			t.Errorf("default-scheduler pod %s (nvidia.com/gpu: 1) bound to %s, want other-0: the pool's GPUs are hetsev's", name, node)
		}
	}
	for name, node := range hetsev {
		if node != "pool-0" {
			t.Errorf("hetsev pod %s bound to %s, want pool-0: hetsev places only in its GPU pool", name, node)
		}
	}
	for prefix, want := range map[string]string{
		"whole-gpu-": "untolerated taint",
		"resnet50-":  "outside hetsev's GPU pool",
	} {
		var pending string
		for i := range 3 {
			if name := fmt.Sprintf("%s%d", prefix, i); whole[name] == "" && hetsev[name] == "" {
				pending = name
			}
		}
		if pending == "" {
			t.Errorf("all three %s* pods bound (%v %v), want one Pending", prefix, whole, hetsev)
			continue
		}
		waitFor(ctx, t, 30*time.Second, pending+" FailedScheduling event", func(ctx context.Context) (bool, error) {
			msgs, err := eventsFor(ctx, c, "default", pending)
			return err == nil && strings.Contains(msgs, "FailedScheduling") && strings.Contains(msgs, want), nil
		})
		p, err := c.CoreV1().Pods("default").Get(ctx, pending, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != "" {
			t.Errorf("%s bound to %s after its FailedScheduling event, want Pending", pending, p.Spec.NodeName)
		}
	}
}

// devicePluginPod creates a default-scheduler pod that asks for one whole
// GPU through the device plugin's resource, nvidia.com/gpu.
func devicePluginPod(ctx context.Context, t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	gpu := v1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name: "cuda", Image: "cuda:sim",
			Resources: v1.ResourceRequirements{Limits: gpu, Requests: gpu},
		}}},
	}
	if _, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
}
