package cluster

import (
	"context"
	"fmt"
	"strconv"

	"github.com/hetsev/hetsev/pkg/catalog"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// NodeGroup is a set of identical GPU servers.
type NodeGroup struct {
	Prefix      string // node name prefix, e.g. "v100-"
	Count       int
	GPUType     catalog.GPUType
	GPUsPerNode int
	CPUs        int64
	MemoryGiB   int64
	// OutsideGPUPool leaves the nodes without the GPU pool label
	// (v1alpha1.LabelGPUPool), which every other node carries: the
	// manifests' scheduler configuration has gpuPool on.
	OutsideGPUPool bool
	// TaintGPUPool taints the nodes with the pool taint
	// (v1alpha1.TaintGPUPool=true:NoSchedule), as an operator taints the
	// pool beside the GPU Operator; off by default, so that the pods tests
	// make by hand need no toleration.
	TaintGPUPool bool
}

// NodeName is the name of the group's i-th node (from 0).
func (g NodeGroup) NodeName(i int) string { return fmt.Sprintf("%s%d", g.Prefix, i) }

// HetSevTestbed is the cluster of HetSev section 6: four servers with two
// V100 32 GB and four with two T4 16 GB, 40 CPUs (2 x 10 cores x 2 threads)
// and 62 GB each.
func HetSevTestbed(cat catalog.Catalog) ([]NodeGroup, error) {
	v100, ok := cat.ByName("V100-32GB")
	if !ok {
		return nil, fmt.Errorf("catalog has no V100-32GB")
	}
	t4, ok := cat.ByName("T4")
	if !ok {
		return nil, fmt.Errorf("catalog has no T4")
	}
	return []NodeGroup{
		{Prefix: "v100-", Count: 4, GPUType: v100, GPUsPerNode: 2, CPUs: 40, MemoryGiB: 62},
		{Prefix: "t4-", Count: 4, GPUType: t4, GPUsPerNode: 2, CPUs: 40, MemoryGiB: 62},
	}, nil
}

// T4Nodes is count servers named t4-<i> with four T4 GPUs each (the
// catalog's T4), 64 CPUs and 256 GiB: the larger clusters of the scheduler
// tests and benchmark.
func T4Nodes(count int) (NodeGroup, error) {
	cat, err := catalog.DefaultCatalog()
	if err != nil {
		return NodeGroup{}, err
	}
	t4, ok := cat.ByName("T4")
	if !ok {
		return NodeGroup{}, fmt.Errorf("catalog has no T4")
	}
	return NodeGroup{Prefix: "t4-", Count: count, GPUType: t4, GPUsPerNode: 4, CPUs: 64, MemoryGiB: 256}, nil
}

// CreateNodes creates the groups' nodes with GPU Feature Discovery labels,
// the GPU pool label (unless OutsideGPUPool) and taint (with TaintGPUPool),
// a loopback InternalIP and podCIDR each, and capacity, for kwok to manage,
// and the NVIDIA RuntimeClass the GPU Operator installs with them (hetsev's
// GPU pods name it; the API server refuses a pod naming a RuntimeClass that
// does not exist). It returns the node names.
func CreateNodes(ctx context.Context, c kubernetes.Interface, groups []NodeGroup) ([]string, error) {
	if err := CreateNvidiaRuntimeClass(ctx, c); err != nil {
		return nil, err
	}
	var names []string
	n := 0
	for _, g := range groups {
		for i := 0; i < g.Count; i++ {
			n++
			name := g.NodeName(i)
			res := v1.ResourceList{
				v1.ResourceCPU:    *resource.NewQuantity(g.CPUs, resource.DecimalSI),
				v1.ResourceMemory: *resource.NewQuantity(g.MemoryGiB<<30, resource.BinarySI),
				v1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
				"nvidia.com/gpu":  *resource.NewQuantity(int64(g.GPUsPerNode), resource.DecimalSI),
			}
			node := &v1.Node{
				ObjectMeta: metav1.ObjectMeta{
					Name:        name,
					Annotations: map[string]string{KwokNodeAnnotation: "fake"},
					Labels: map[string]string{
						"kubernetes.io/hostname":     name,
						"type":                       "kwok",
						gpuinventory.LabelGPUProduct: g.GPUType.ProductLabel,
						gpuinventory.LabelGPUCount:   strconv.Itoa(g.GPUsPerNode),
						gpuinventory.LabelGPUMemory:  strconv.FormatInt(g.GPUType.MemoryMiB, 10),
					},
				},
				Spec: v1.NodeSpec{PodCIDR: podCIDR(n), PodCIDRs: []string{podCIDR(n)}},
			}
			if !g.OutsideGPUPool {
				node.Labels[v1alpha1.LabelGPUPool] = v1alpha1.GPUPoolValue
			}
			if g.TaintGPUPool {
				node.Spec.Taints = []v1.Taint{{Key: v1alpha1.TaintGPUPool, Value: v1alpha1.GPUPoolValue, Effect: v1.TaintEffectNoSchedule}}
			}
			created, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
			if err != nil {
				return nil, fmt.Errorf("creating node %s: %w", name, err)
			}
			err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
				cur, err := c.CoreV1().Nodes().Get(ctx, created.Name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				cur.Status.Capacity = res
				cur.Status.Allocatable = res
				cur.Status.Addresses = []v1.NodeAddress{
					{Type: v1.NodeInternalIP, Address: nodeIP(n)},
					{Type: v1.NodeHostName, Address: name},
				}
				_, err = c.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				return nil, fmt.Errorf("setting status of node %s: %w", name, err)
			}
			names = append(names, name)
		}
	}
	return names, nil
}

// CreateNvidiaRuntimeClass creates RuntimeClass nvidia (handler nvidia), as
// the NVIDIA GPU Operator does, unless it exists.
func CreateNvidiaRuntimeClass(ctx context.Context, c kubernetes.Interface) error {
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: gpuinventory.DefaultRuntimeClassName}, Handler: gpuinventory.DefaultRuntimeClassName}
	if _, err := c.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating RuntimeClass %s: %w", rc.Name, err)
	}
	return nil
}

// podCIDR and nodeIP are the n-th node's (n >= 1) pod range and address,
// inside 127.0.0.0/8 for any n below 62,500.
func podCIDR(n int) string { return fmt.Sprintf("127.%d.%d.0/24", 1+n/250, n%250) }

func nodeIP(n int) string { return fmt.Sprintf("127.0.%d.%d", 1+n/250, n%250) }
