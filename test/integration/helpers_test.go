package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/hetsev/hetsev/pkg/catalog"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// podBuilder builds model-server pods fluently.
type podBuilder struct{ pod *v1.Pod }

func modelPod(name, model, gpuMemory string) *podBuilder {
	return &podBuilder{pod: &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default",
			Annotations: map[string]string{v1alpha1.AnnotationModel: model, v1alpha1.AnnotationGPUMemory: gpuMemory},
			Labels:      map[string]string{"app": model},
		},
		Spec: v1.PodSpec{
			SchedulerName: "hetsev-scheduler",
			Containers: []v1.Container{{
				Name: "server", Image: "model-server:sim",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
					v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi"),
				}},
			}},
		},
	}}
}

func (b *podBuilder) on(product string) *podBuilder {
	b.pod.Spec.NodeSelector = map[string]string{gpuinventory.LabelGPUProduct: product}
	return b
}

func (b *podBuilder) create(ctx context.Context, t *testing.T, c kubernetes.Interface) *v1.Pod {
	t.Helper()
	p, err := c.CoreV1().Pods(b.pod.Namespace).Create(ctx, b.pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s: %v", b.pod.Name, err)
	}
	return p
}

// waitFor polls cond every 100 ms until it holds or timeout passes.
func waitFor(ctx context.Context, t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// gpuKey names one GPU in the cluster.
type gpuKey struct {
	node  string
	index int
}

// checkPlacements asserts every bound hetsev pod carries a GPU index, that no
// GPU holds more GPU memory than it has and that no GPU holds two instances
// of one model. It returns the pods per GPU.
func checkPlacements(ctx context.Context, t *testing.T, c kubernetes.Interface) map[gpuKey][]v1.Pod {
	t.Helper()
	pods, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	capacity := map[string]gpuinventory.NodeGPUs{}
	for _, n := range nodes.Items {
		if g, err := gpuinventory.NodeGPUsOf(&n); err == nil {
			capacity[n.Name] = g
		}
	}
	byGPU := map[gpuKey][]v1.Pod{}
	used := map[gpuKey]int64{}
	for _, p := range pods.Items {
		d, ok, err := gpuinventory.DemandOf(&p)
		if !ok || err != nil || p.Spec.NodeName == "" {
			continue
		}
		idx, has, err := gpuinventory.ParseGPUIndex(p.Annotations)
		if !has || err != nil {
			t.Errorf("bound pod %s has no valid %s (%v)", p.Name, v1alpha1.AnnotationGPUIndex, err)
			continue
		}
		k := gpuKey{p.Spec.NodeName, idx}
		for _, other := range byGPU[k] {
			if other.Annotations[v1alpha1.AnnotationModel] == d.Model {
				t.Errorf("identical model %s co-located on %s GPU %d: %s and %s", d.Model, k.node, k.index, other.Name, p.Name)
			}
		}
		byGPU[k] = append(byGPU[k], p)
		used[k] += d.MemoryMiB
		if capG, ok := capacity[k.node]; !ok || idx >= capG.Count {
			t.Errorf("pod %s on GPU %d of %s, which has %d GPUs", p.Name, idx, k.node, capG.Count)
		} else if used[k] > capG.MemoryMiB {
			t.Errorf("GPU %d of %s over-committed: %d MiB > %d MiB", idx, k.node, used[k], capG.MemoryMiB)
		}
	}
	return byGPU
}

// eventsFor returns the messages of the events about a pod.
func eventsFor(ctx context.Context, c kubernetes.Interface, ns, name string) (string, error) {
	evs, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fmt.Sprintf("involvedObject.name=%s", name)})
	if err != nil {
		return "", err
	}
	var msgs []string
	for _, e := range evs.Items {
		msgs = append(msgs, e.Reason+": "+e.Message)
	}
	return strings.Join(msgs, "\n"), nil
}

// catalogT4 is the default GPU catalog's T4.
func catalogT4(t *testing.T) catalog.GPUType {
	t.Helper()
	cat, err := catalog.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	t4, ok := cat.ByName("T4")
	if !ok {
		t.Fatal("catalog has no T4")
	}
	return t4
}

// withDefaultSchedulerProfile appends to the KubeSchedulerConfiguration cfg
// a default-scheduler profile with upstream's plugins, so that one process
// schedules hetsev's pods and others; the queue sort must be the same in
// every profile, so it is hetsev's.
func withDefaultSchedulerProfile(cfg string) string {
	return strings.TrimRight(cfg, "\n") + `
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
`
}
