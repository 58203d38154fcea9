package gpuinventory

// GPU is the occupancy of one GPU on a node (see Occupancy).
type GPU struct {
	Index     int
	TotalMiB  int64          // the GPU's memory, MiB
	UsedMiB   int64          // GPU memory held by the instances on it, MiB
	Models    map[string]int // instances per model identity (Demand.Identity) placed on this GPU
	Instances int            // instances on it, with or without a model
	// BusyShare is the summed declared busy share (hetsev.io/busy-share) of
	// the instances on it; dimensionless, 1 = one GPU busy all the time.
	// Instances that declare none are not in it (see FitsBusyShare).
	BusyShare float64
	// Shares are the instances on it in the order placed, with their busy
	// shares, for the co-location model (pkg/placement). Placing on a copy
	// of a GPU may share this slice's backing array: copy it first.
	Shares []InstanceShare
	// Capped says the GPU takes at most MaxInstances instances: a DRA
	// device charges every claim a capacity other than its memory
	// (NVIDIA's shares, HAMi's cores), so its free memory alone does not
	// say whether the allocator admits one more (pkg/dra).
	Capped       bool
	MaxInstances int
}

// HasRoom says g takes one more instance by its instance cap (Capped).
func (g GPU) HasRoom() bool { return !g.Capped || g.Instances < g.MaxInstances }

// InstanceShare is one instance on a GPU: its model (may be empty) and the
// scope of its identity (Demand.Scope: its namespace, or empty for a
// cluster-wide model), busy share in (0, 1] and the latency inflation its
// SLO allows (0: no limit). The co-location model reads Model; which
// tenant an instance is reads Identity.
type InstanceShare struct {
	Model        string
	Scope        string
	BusyShare    float64
	MaxInflation float64
}

// Identity is the anti-affinity identity of the instance's model
// (Demand.Identity).
func (s InstanceShare) Identity() string {
	return Demand{Model: s.Model, Scope: s.Scope}.Identity()
}

// busyShareSlack absorbs float rounding in summed busy shares (0.1+0.2+0.7
// must fit a cap of 1).
const busyShareSlack = 1e-9

// DefaultMaxBusyShare caps a GPU's summed declared busy share at 1, for
// hetsev-scheduler (plugin argument maxBusyShare) and hetsev-scaler's free
// slots (which read the scheduler's arguments) alike: a GPU is busy at most all the time, and
// the co-location measurements (data/measurements) show summed throughput
// does not grow under time-slicing, so instances whose shares sum past 1
// only queue.
const DefaultMaxBusyShare = 1.0

// FitsBusyShare reports whether d's busy share fits on g under cap (the
// most summed declared busy share a GPU may carry); cap <= 0 is no cap.
// Until hetsev-scaler writes hetsev.io/busy-share into its templates,
// instances that declare none are outside the cap: a new one always fits,
// and those on g are not in g.BusyShare. They still count as busy all the
// time in the inflation rating (GPU.Shares, Demand.Busy).
func (g GPU) FitsBusyShare(d Demand, cap float64) bool {
	return cap <= 0 || !(d.BusyShare > 0) || g.BusyShare+d.Busy() <= cap+busyShareSlack
}

// FreeMiB is the GPU memory not claimed by placed instances, MiB.
func (g GPU) FreeMiB() int64 { return g.TotalMiB - g.UsedMiB }

// HostsOther reports whether g hosts an instance of a model identity other
// than identity (Demand.Identity): a tenant that keeps g billed and whose
// GPU anti-affinity does not close to identity's instances.
func (g GPU) HostsOther(identity string) bool { return g.Instances > g.Models[identity] }

// Fits reports whether d fits on g: enough free GPU memory, room under its
// instance cap (HasRoom) and, when d names a model, no instance of the same model identity already there (HetSev 4.2
// anti-affinity, Demand.Identity).
func (g GPU) Fits(d Demand) bool {
	if d.MemoryMiB > g.FreeMiB() || !g.HasRoom() {
		return false
	}
	return d.Model == "" || g.Models[d.Identity()] == 0
}

// Fit says which of the GPUs a demand fits is chosen.
type Fit string

const (
	// FitWorst takes the GPU with the most free GPU memory (HetSev 4.2:
	// spreading instances limits interference).
	FitWorst Fit = "WorstFit"
	// FitBest takes the GPU with the least free GPU memory that still fits:
	// it packs instances and leaves whole GPUs free for large models.
	FitBest Fit = "BestFit"
)

// Choice says which GPU a model instance takes among those that fit it;
// pkg/placement admits (placement.Placer.Admit) and rates them.
type Choice struct {
	Fit Fit // empty means FitWorst
	// SoftAntiAffinity lets an instance share a GPU with one of its own
	// model when no GPU without it fits. HetSev 4.2's rule is hard (false).
	SoftAntiAffinity bool
	// MaxBusyShare is the most summed busy share (Demand.Busy) a GPU may
	// carry with the new instance; <= 0 is no cap (memory only).
	MaxBusyShare float64
	// Consolidate rates every GPU already in use above every empty one for
	// an instance that declares its busy share (placement.Placer.Rate):
	// GPUs are billed while they host an instance, and a declared share
	// lets the cap and the co-location model keep the packing within what
	// the instances allow. Worst fit still orders the GPUs in use, and the
	// empty ones. Instances that declare none are placed as before.
	Consolidate bool
}

// SlotsOnNode is how many more instances of d fit one node (HetSev 4.1
// constraint 2): one per GPU that fits d (free GPU memory, anti-affinity,
// and d's busy share under busyShareCap as FitsBusyShare counts it; <= 0:
// no cap), bounded by the node's free CPU and memory. freeCPU and cpu are
// millicores, freeMem and mem any one unit (bytes, MiB); a request <= 0
// does not bound. The trace-driven evaluator counts with it. It does not
// apply hetsev.io/max-inflation (that needs the co-location model) nor
// count several instances on one GPU: hetsev-scaler counts with
// placement.Placer.Slots, the scheduler's rule.
func SlotsOnNode(gpus []GPU, d Demand, busyShareCap float64, freeCPU, cpu, freeMem, mem int64) int {
	n := 0
	for _, g := range gpus {
		if g.Fits(d) && g.FitsBusyShare(d, busyShareCap) {
			n++
		}
	}
	if cpu > 0 && freeCPU/cpu < int64(n) {
		n = int(max(freeCPU/cpu, 0))
	}
	if mem > 0 && freeMem/mem < int64(n) {
		n = int(max(freeMem/mem, 0))
	}
	return n
}
