package gpushare

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/dra"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// Per-GPU gauges on hetsev-scheduler's /metrics (kube-scheduler's legacy
// registry), computed at each scrape from the GPU accounting HetsevGPUShare
// places by (gpuCollector). Every series has the labels node, gpu_index
// (the GPU's index on the node, as in hetsev.io/gpu-index) and gpu_type
// (the node's nvidia.com/gpu.product; in GPU mode dra the device's
// productName as that label, dra.ProductLabel).
const (
	// MetricGPUMemoryUsed is the GPU memory the instances on a GPU declare
	// (hetsev.io/gpu-memory), MiB.
	MetricGPUMemoryUsed = "hetsev_gpu_memory_used_mib"
	// MetricGPUMemoryFree is a GPU's memory not declared by its instances,
	// MiB (negative when pods with malformed annotations were counted on
	// the safe side).
	MetricGPUMemoryFree = "hetsev_gpu_memory_free_mib"
	// MetricGPUBusyShare is the summed declared busy share
	// (hetsev.io/busy-share) of a GPU's instances; 1 = busy all the time.
	MetricGPUBusyShare = "hetsev_gpu_busy_share"
	// MetricGPUInstances is the number of instances on a GPU.
	MetricGPUInstances = "hetsev_gpu_instances"
	// MetricGPUInstanceInflation is the latency inflation (>= 1) the
	// co-location model predicts for one instance beside its neighbours
	// now, with the extra labels namespace and pod.
	MetricGPUInstanceInflation = "hetsev_gpu_instance_predicted_inflation"
)

var (
	gpuLabels      = []string{"node", "gpu_index", "gpu_type"}
	instanceLabels = []string{"node", "gpu_index", "gpu_type", "namespace", "pod"}

	descMemoryUsed = metrics.NewDesc(MetricGPUMemoryUsed, "GPU memory declared by the instances hetsev-scheduler counts on the GPU, MiB.", gpuLabels, nil, metrics.ALPHA, "")
	descMemoryFree = metrics.NewDesc(MetricGPUMemoryFree, "GPU memory not declared by the instances on the GPU, MiB.", gpuLabels, nil, metrics.ALPHA, "")
	descBusyShare  = metrics.NewDesc(MetricGPUBusyShare, "Summed declared busy share (hetsev.io/busy-share) of the instances on the GPU.", gpuLabels, nil, metrics.ALPHA, "")
	descInstances  = metrics.NewDesc(MetricGPUInstances, "Instances hetsev-scheduler counts on the GPU.", gpuLabels, nil, metrics.ALPHA, "")
	descInflation  = metrics.NewDesc(MetricGPUInstanceInflation, "Latency inflation the co-location model predicts for the instance beside its GPU neighbours.", instanceLabels, nil, metrics.ALPHA, "")
)

// gpuStats is a source of the gauges: one entry per GPU of the GPU pool.
type gpuStats interface {
	gpuStats() []gpuStat
}

// gpuStat is one GPU's accounting and the instances on it.
type gpuStat struct {
	node, gpuType string
	gpu           gpuinventory.GPU
	instances     []instanceStat
}

// instanceStat is one instance on a GPU and its predicted inflation.
type instanceStat struct {
	namespace, name string
	inflation       float64
}

// gpuCollector exports the per-GPU gauges of its source, read at scrape.
type gpuCollector struct {
	metrics.BaseStableCollector
	src atomic.Pointer[gpuStats]
}

func newGPUCollector(src gpuStats) *gpuCollector {
	c := &gpuCollector{}
	c.src.Store(&src)
	return c
}

// DescribeWithStability implements metrics.StableCollector.
func (c *gpuCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	for _, d := range []*metrics.Desc{descMemoryUsed, descMemoryFree, descBusyShare, descInstances, descInflation} {
		ch <- d
	}
}

// CollectWithStability implements metrics.StableCollector.
func (c *gpuCollector) CollectWithStability(ch chan<- metrics.Metric) {
	src := c.src.Load()
	if src == nil || *src == nil {
		return
	}
	for _, s := range (*src).gpuStats() {
		idx := strconv.Itoa(s.gpu.Index)
		ch <- metrics.NewLazyConstMetric(descMemoryUsed, metrics.GaugeValue, float64(s.gpu.UsedMiB), s.node, idx, s.gpuType)
		ch <- metrics.NewLazyConstMetric(descMemoryFree, metrics.GaugeValue, float64(s.gpu.FreeMiB()), s.node, idx, s.gpuType)
		ch <- metrics.NewLazyConstMetric(descBusyShare, metrics.GaugeValue, s.gpu.BusyShare, s.node, idx, s.gpuType)
		ch <- metrics.NewLazyConstMetric(descInstances, metrics.GaugeValue, float64(s.gpu.Instances), s.node, idx, s.gpuType)
		for _, in := range s.instances {
			ch <- metrics.NewLazyConstMetric(descInflation, metrics.GaugeValue, in.inflation, s.node, idx, s.gpuType, in.namespace, in.name)
		}
	}
}

// schedulerGPUCollector is the collector registered in kube-scheduler's
// legacy registry, once per process (registerGPUStats); the plugin built
// last is its source.
var (
	schedulerGPUCollector = &gpuCollector{}
	registerCollector     sync.Once
)

// registerGPUStats makes src the source of hetsev-scheduler's per-GPU
// gauges.
func registerGPUStats(src gpuStats) {
	schedulerGPUCollector.src.Store(&src)
	registerCollector.Do(func() { legacyregistry.CustomMustRegister(schedulerGPUCollector) })
}

// annotationStats is AnnotationGPUShare's accounting for the gauges, from
// the scheduler's informers: every node of the GPU pool (with the arg
// gpuPool on, the nodes labelled into it; otherwise every node with
// readable GFD labels) and its pods, counted by gpuinventory's occupancy
// rule with the plugin's reservations, as Filter counts them.
type annotationStats struct {
	p     *AnnotationGPUShare
	nodes corelisters.NodeLister
	pods  corelisters.PodLister
}

func (a annotationStats) gpuStats() []gpuStat {
	nodes, err := a.nodes.List(labels.Everything())
	if err != nil {
		return nil
	}
	pods, err := a.pods.List(labels.Everything())
	if err != nil {
		return nil
	}
	byNode := map[string][]*v1.Pod{}
	for _, pod := range pods {
		node := pod.Spec.NodeName
		if node == "" {
			r, ok := a.p.reservationOf(pod.UID)
			if !ok {
				continue
			}
			node = r.node
		}
		byNode[node] = append(byNode[node], pod)
	}
	var out []gpuStat
	for _, n := range nodes {
		if a.p.pool && !gpuinventory.InGPUPool(n) {
			continue
		}
		inv, err := gpuinventory.NodeGPUsOf(n)
		if err != nil {
			continue
		}
		occ := gpuinventory.NewOccupancy(n.Name, inv)
		for _, pod := range byNode[n.Name] {
			occ.AddPod(pod, a.p.reservedGPU)
		}
		pl := a.p.placer.OnNode(n.Labels)
		first := len(out)
		for _, g := range occ.GPUs {
			out = append(out, gpuStat{node: n.Name, gpuType: inv.Product, gpu: g})
		}
		for _, pod := range byNode[n.Name] {
			idx, ok := a.p.podGPU(pod, n.Name)
			if !ok || idx < 0 || idx >= len(occ.GPUs) {
				continue
			}
			s := &out[first+idx]
			s.instances = append(s.instances, instanceStat{
				namespace: pod.Namespace, name: pod.Name,
				inflation: pl.Inflation(s.gpu, gpuinventory.ModelOf(pod)),
			})
		}
	}
	return out
}

// draStats is DRAGPUShare's accounting for the gauges: the shareable GPUs
// of hetsev's DeviceClass per node from the ResourceSlices, and what every
// allocated claim (in flight included) holds on them with its pods' model
// and busy share (dra.NodeDevices.Occupancy), as PreFilter snapshots
// them; pods counted only on the safe side (a bound pod whose claim holds
// no GPU) are not. Nodes outside the GPU pool are left out when the arg
// gpuPool is on. gpu_type is the devices' productName as a GFD product
// label (dra.ProductLabel).
type draStats struct {
	p     *DRAGPUShare
	nodes corelisters.NodeLister
}

func (s draStats) gpuStats() []gpuStat {
	ctx := context.Background()
	class, err := s.p.draManager.DeviceClasses().Get(v1alpha1.DeviceClassName)
	if err != nil {
		return nil
	}
	view, err := s.p.draSnapshot(ctx, class)
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(view.nodes))
	for name := range view.nodes {
		names = append(names, name)
	}
	slices.Sort(names)
	var out []gpuStat
	for _, name := range names {
		nd := view.nodes[name]
		if len(nd.Devices) == 0 {
			continue
		}
		node, err := s.nodes.Get(name)
		if err != nil || (s.p.pool && !gpuinventory.InGPUPool(node)) {
			continue
		}
		occ, _, _ := nd.Occupancy(view.usages, s.p.consumers)
		pl := s.p.placer.OnNode(node.Labels)
		for i, d := range nd.Devices {
			st := gpuStat{node: name, gpuType: dra.ProductLabel(d.Product), gpu: occ.GPUs[i]}
			st.gpu.Index = d.Index
			seen := map[types.UID]bool{}
			for _, u := range view.usages[d.Key()] {
				for _, pod := range s.p.consumers(u.Claim) {
					if seen[pod.UID] || gpuinventory.Terminal(pod) {
						continue
					}
					seen[pod.UID] = true
					st.instances = append(st.instances, instanceStat{
						namespace: pod.Namespace, name: pod.Name,
						inflation: pl.Inflation(occ.GPUs[i], gpuinventory.ModelOf(pod)),
					})
				}
			}
			out = append(out, st)
		}
	}
	return out
}
