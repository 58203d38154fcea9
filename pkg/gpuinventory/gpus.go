package gpuinventory

// GPU is the accounting of one GPU on a node.
type GPU struct {
	Index     int
	TotalMiB  int64
	UsedMiB   int64
	Models    map[string]int // instances per model placed on this GPU
	Instances int
}

// FreeMiB is the GPU memory not claimed by placed instances, MiB.
func (g GPU) FreeMiB() int64 { return g.TotalMiB - g.UsedMiB }

// Fits reports whether d fits on g: enough free GPU memory and, when d names a
// model, no instance of the same model already there (HetSev 4.2 anti-affinity).
func (g GPU) Fits(d Demand) bool {
	if d.MemoryMiB > g.FreeMiB() {
		return false
	}
	return d.Model == "" || g.Models[d.Model] == 0
}

// Placement is a placed instance: which GPU index holds which demand.
type Placement struct {
	Index  int
	Demand Demand
}

// Account builds the per-GPU accounting of a node from the instances placed on
// it. Placements whose index is out of range are returned in stray so the
// caller can log them; they are not counted.
func Account(n NodeGPUs, placed []Placement) (gpus []GPU, stray []Placement) {
	gpus = make([]GPU, n.Count)
	for i := range gpus {
		gpus[i] = GPU{Index: i, TotalMiB: n.MemoryMiB, Models: map[string]int{}}
	}
	for _, p := range placed {
		if p.Index < 0 || p.Index >= n.Count {
			stray = append(stray, p)
			continue
		}
		g := &gpus[p.Index]
		g.UsedMiB += p.Demand.MemoryMiB
		g.Instances++
		if p.Demand.Model != "" {
			g.Models[p.Demand.Model]++
		}
	}
	return gpus, stray
}

// WorstFit returns the index of the GPU that fits d with the most free GPU
// memory (HetSev 4.2: worst fit spreads instances and so limits
// interference); ties go to the lower index. ok is false when none fits.
func WorstFit(gpus []GPU, d Demand) (idx int, ok bool) {
	best := int64(-1)
	for _, g := range gpus {
		if g.Fits(d) && g.FreeMiB() > best {
			best, idx, ok = g.FreeMiB(), g.Index, true
		}
	}
	return idx, ok
}
