package evaluate

import (
	"fmt"
	"slices"

	resourcev1 "k8s.io/api/resource/v1"

	"github.com/hetsev/hetsev/internal/sim/replay"
	"github.com/hetsev/hetsev/pkg/catalog"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/placement"
)

// instance is one simulated model-server pod.
type instance struct {
	svc, typ  int // service index and its type index (service.types)
	node, gpu int
	model     string
	memMiB    int64 // GPU memory claimed: the profile's, or the whole GPU
	// demand is what its pod declares: the model, memMiB, and for
	// hetsev's policies the busy share and inflation limit
	// (scaler.Resolved.Demand).
	demand   gpuinventory.Demand
	cpuMilli int64
	hostMiB  int64
	created  float64          // trace second it was created (billed from then)
	readyAt  float64          // trace second it serves from (created plus the launch time)
	run      *replay.Instance // its server in the replay
	// claim is its ResourceClaim in GPU mode dra (draNode.allocate).
	claim *resourcev1.ResourceClaim
	// moved marks the instance a consolidation move replaces: a removal
	// of its column takes it first (policyRun.stopNewest), as the
	// ReplicaSet does a pod of lower pod-deletion-cost.
	moved bool
}

// node is one GPU server and what runs on it: the simulated pods by GPU
// (onGPU) and, built from them by gpuinventory's rules, its occupancy.
type node struct {
	gpuType          catalog.GPUType
	inv              gpuinventory.NodeGPUs
	freeCPU, freeMiB int64
	onGPU            [][]*instance
	occ              []gpuinventory.GPU // gpus(); nil after a change
	// dra, in GPU mode dra, holds its ResourceSlice and claims, and
	// gpus() is built from them (nil: annotation mode, from onGPU).
	dra *draNode
}

// cluster is the simulated cluster's GPU, CPU and memory accounting.
type cluster struct {
	nodes  []*node
	placer placement.Placer
	// rule, when set, is a peer's own placement rule (gpuRule), used in
	// place of placer's rating by place and slots.
	rule gpuRule
}

// gpuRule is a peer scheduler's choice of GPU for a new instance, for the
// peers whose rule hetsev-scheduler's placer (a rating per node, the best
// node wins) cannot express: it sees every node of the type at once.
type gpuRule interface {
	// pickGPU is the node (index into c.nodes) and GPU index for a new
	// instance of demand d on GPU type t whose pod asks cpu millicores and
	// mem MiB of host memory; ok false when none fits.
	pickGPU(c *cluster, t string, d gpuinventory.Demand, cpu, mem int64) (node, gpu int, ok bool)
	// slots is MaxAdditional under the same rule: how many more such
	// instances fit the type's nodes.
	slots(c *cluster, t string, d gpuinventory.Demand, cpu, mem int64) int
}

// hostFits reports whether node nd is of type t and has cpu millicores
// and mem MiB of host memory free.
func hostFits(nd *node, t string, cpu, mem int64) bool {
	return nd.gpuType.Name == t && nd.freeCPU >= cpu && nd.freeMiB >= mem
}

// inUse reports whether node nd hosts at least one instance.
func (n *node) inUse() bool {
	for _, g := range n.gpus() {
		if g.Instances > 0 {
			return true
		}
	}
	return false
}

// typeInUse reports whether a GPU of type t hosts an instance of another
// model identity than identity (gpuinventory.Demand.Identity).
func (c *cluster) typeInUse(t, identity string) bool {
	for _, nd := range c.nodes {
		if nd.gpuType.Name != t {
			continue
		}
		for _, g := range nd.gpus() {
			if g.HostsOther(identity) {
				return true
			}
		}
	}
	return false
}

// firstEmptyGPU is an empty GPU of type t for an instance of d on a node
// with room for cpu and mem: on a node already in use if there is one
// (its other GPUs cost as much as a new node's and leave the others
// empty), else on the first node; ok false when none.
func (c *cluster) firstEmptyGPU(t string, d gpuinventory.Demand, cpu, mem int64) (node, gpu int, ok bool) {
	for _, used := range []bool{true, false} {
		for i, nd := range c.nodes {
			if !hostFits(nd, t, cpu, mem) || nd.inUse() != used {
				continue
			}
			for _, g := range nd.gpus() {
				if g.Instances == 0 && d.MemoryMiB <= g.FreeMiB() {
					return i, g.Index, true
				}
			}
		}
	}
	return 0, 0, false
}

func newCluster(cfg *Config, pl placement.Placer) *cluster {
	c := &cluster{placer: pl}
	for _, g := range cfg.Cluster {
		t, _ := cfg.Catalog.ByName(g.GPUType)
		for range g.Nodes {
			nd := &node{
				gpuType: t, inv: gpuinventory.NodeGPUs{Product: t.ProductLabel, Count: g.GPUsPerNode, MemoryMiB: t.MemoryMiB},
				freeCPU: g.CPUMilli, freeMiB: g.MemoryMiB, onGPU: make([][]*instance, g.GPUsPerNode),
			}
			if cfg.GPUMode == GPUModeDRA {
				nd.dra = newDRANode(fmt.Sprintf("node-%d", len(c.nodes)), t, g.GPUsPerNode)
			}
			c.nodes = append(c.nodes, nd)
		}
	}
	return c
}

// gpus is the node's per-GPU occupancy, as the scheduler keeps it: each
// instance placed on its GPU with gpuinventory.Occupancy.Place (its
// declared demand: model, GPU memory in MiB, busy share); in GPU mode dra,
// pkg/dra's occupancy of the node's devices from the instances' allocated
// claims. Kept until the node changes; callers must not
// modify it.
func (n *node) gpus() []gpuinventory.GPU {
	if n.occ != nil {
		return n.occ
	}
	if n.dra != nil {
		n.occ = n.dra.gpus()
		return n.occ
	}
	o := gpuinventory.NewOccupancy("", n.inv)
	for i, on := range n.onGPU {
		for _, in := range on {
			o.Place(gpuinventory.Placement{Index: i, Demand: in.demand})
		}
	}
	n.occ = o.GPUs
	return n.occ
}

// slots is MaxAdditional for GPU type t (constraint 2 of HetSev 4.1), as
// hetsev-scaler counts it: placement.Placer.Slots (the scheduler's
// admission rule, instance after instance) over the type's nodes.
func (c *cluster) slots(t string, d gpuinventory.Demand, cpu, mem int64) int {
	if c.rule != nil {
		return c.rule.slots(c, t, d, cpu, mem)
	}
	n := 0
	var seen []emptySlots
	for _, nd := range c.nodes {
		if nd.gpuType.Name != t {
			continue
		}
		// Empty nodes of one shape with the same free CPU and memory
		// count the same slots: count them once (most of a replay's
		// cluster is empty, and Slots places instance after instance).
		empty := nd.empty()
		if empty {
			if k := slices.IndexFunc(seen, func(e emptySlots) bool { return e.sameAs(nd) }); k >= 0 {
				n += seen[k].slots
				continue
			}
		}
		k := c.placer.Slots(nd.gpus(), d, nd.freeCPU, cpu, nd.freeMiB, mem)
		if empty {
			seen = append(seen, emptySlots{nd, k})
		}
		n += k
	}
	return n
}

// emptySlots is what slots counted on an empty node.
type emptySlots struct {
	nd    *node
	slots int
}

// sameAs says that nd, empty, counts as many slots as e's node: the same
// GPUs (type, number, memory) and the same free CPU and memory.
func (e emptySlots) sameAs(nd *node) bool {
	return nd.gpuType.Name == e.nd.gpuType.Name && nd.freeCPU == e.nd.freeCPU && nd.freeMiB == e.nd.freeMiB && sameEmptyGPUs(nd, e.nd)
}

// sameEmptyGPUs says two empty nodes' GPUs are alike: as many, each with
// the same memory. Pick rates them alike (GPU indices aside).
func sameEmptyGPUs(a, b *node) bool {
	ga, gb := a.gpus(), b.gpus()
	return len(ga) == len(gb) && slices.EqualFunc(ga, gb, func(x, y gpuinventory.GPU) bool { return x.TotalMiB == y.TotalMiB })
}

// empty says no GPU of the node hosts, holds or declares anything.
func (n *node) empty() bool {
	for _, g := range n.gpus() {
		if g.Instances > 0 || g.UsedMiB > 0 || g.BusyShare > 0 || len(g.Models) > 0 || len(g.Shares) > 0 {
			return false
		}
	}
	return true
}

// freeWholeGPUs counts the GPUs of type t that host nothing, on nodes with
// room for cpu and mem: what nvidia.com/gpu: 1 pods can still get.
func (c *cluster) freeWholeGPUs(t string, cpu, mem int64) int {
	n := 0
	for _, nd := range c.nodes {
		if nd.gpuType.Name != t {
			continue
		}
		free := 0
		for _, g := range nd.gpus() {
			if g.Instances == 0 {
				free++
			}
		}
		n += min(free, int(nd.freeCPU/max(cpu, 1)), int(nd.freeMiB/max(mem, 1)))
	}
	return n
}

// place puts in on a GPU of type t the way hetsev-scheduler does: among the
// nodes with room for its CPU and memory, the GPU with the best
// placement.Placer rating (worst fit, anti-affinity, interference); ties go
// to the first node, where the scheduler picks one of them at random. A
// cluster with a rule (gpuRule) places by the rule instead.
func (c *cluster) place(in *instance, t string) bool {
	d := in.demand
	if c.rule != nil {
		n, g, ok := c.rule.pickGPU(c, t, d, in.cpuMilli, in.hostMiB)
		if ok {
			c.add(in, n, g)
		}
		return ok
	}
	best, bestGPU, bestRating := -1, 0, 0.0
	var rated []*node // empty nodes rated: a later one like them rates the same and loses the tie
	for i, nd := range c.nodes {
		if nd.gpuType.Name != t || nd.freeCPU < in.cpuMilli || nd.freeMiB < in.hostMiB {
			continue
		}
		if nd.empty() {
			if slices.ContainsFunc(rated, func(o *node) bool { return sameEmptyGPUs(nd, o) }) {
				continue
			}
			rated = append(rated, nd)
		}
		idx, r, _, ok := c.placer.Pick(nd.gpus(), d)
		if ok && (best < 0 || r > bestRating) {
			best, bestGPU, bestRating = i, idx, r
		}
	}
	if best < 0 {
		return false
	}
	c.add(in, best, bestGPU)
	return true
}

// placeWhole puts in on a GPU of type t of its own, the way the default
// scheduler places a pod that asks for nvidia.com/gpu: 1: the node with the
// most free GPUs (NodeResourcesFit's LeastAllocated), its lowest free index
// (the device plugin's choice). in.memMiB should be the GPU's memory.
func (c *cluster) placeWhole(in *instance, t string) bool {
	best, bestGPU, bestFree := -1, 0, 0
	for i, nd := range c.nodes {
		if nd.gpuType.Name != t || nd.freeCPU < in.cpuMilli || nd.freeMiB < in.hostMiB {
			continue
		}
		free, first := 0, -1
		for _, g := range nd.gpus() {
			if g.Instances == 0 {
				free++
				if first < 0 {
					first = g.Index
				}
			}
		}
		if free > bestFree {
			best, bestGPU, bestFree = i, first, free
		}
	}
	if best < 0 {
		return false
	}
	c.add(in, best, bestGPU)
	return true
}

func (c *cluster) add(in *instance, n, g int) {
	nd := c.nodes[n]
	in.node, in.gpu = n, g
	nd.onGPU[g] = append(nd.onGPU[g], in)
	if nd.dra != nil {
		nd.dra.allocate(in, g)
	}
	nd.occ = nil
	nd.freeCPU -= in.cpuMilli
	nd.freeMiB -= in.hostMiB
}

func (c *cluster) remove(in *instance) {
	nd := c.nodes[in.node]
	on := nd.onGPU[in.gpu]
	for i, x := range on {
		if x == in {
			nd.onGPU[in.gpu] = append(on[:i:i], on[i+1:]...)
			if nd.dra != nil {
				nd.dra.release(in)
			}
			nd.occ = nil
			break
		}
	}
	nd.freeCPU += in.cpuMilli
	nd.freeMiB += in.hostMiB
}

// movable reports whether in is alone on its GPU and the scheduler's rule
// admits an instance of its demand on another GPU of its type in use
// (placement.Placer.AdmitsInUse), on a node with room for its CPU and
// memory: the rule hetsev-scaler counts heterogeneity.TypeState.Movable
// by (pkg/scaler capacityOf).
func (c *cluster) movable(in *instance) bool {
	nd := c.nodes[in.node]
	if len(nd.onGPU[in.gpu]) != 1 {
		return false
	}
	for i, o := range c.nodes {
		if o.gpuType.Name != nd.gpuType.Name || o.freeCPU < in.cpuMilli || o.freeMiB < in.hostMiB {
			continue
		}
		except := -1
		if i == in.node {
			except = in.gpu
		}
		if c.placer.AdmitsInUse(o.gpus(), in.demand, except) {
			return true
		}
	}
	return false
}

// inflation is the mean latency inflation (>= 1) the co-location model
// predicts for ins where they run, at their GPUs' declared busy shares
// (placement.Placer.Inflation, as hetsev-scaler counts it); 1 for none.
func (c *cluster) inflation(ins []*instance) float64 {
	if len(ins) == 0 {
		return 1
	}
	var sum float64
	for _, in := range ins {
		sum += c.placer.Inflation(c.nodes[in.node].gpus()[in.gpu], in.demand)
	}
	return sum / float64(len(ins))
}
