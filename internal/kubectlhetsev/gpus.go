package kubectlhetsev

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/dra"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/interference"
	"github.com/hetsev/hetsev/pkg/placement"
	"github.com/hetsev/hetsev/pkg/scaler"
)

// GPUReport is what `kubectl hetsev gpus` prints: every GPU hetsev
// accounts for, and what could not be read as it is.
type GPUReport struct {
	GPUs []GPUStatus `json:"gpus"`
	// Notes are pods and claims counted on the safe side, pods whose GPU
	// is not known, and objects the user may not read.
	Notes []string `json:"notes,omitempty"`
}

// GPUStatus is one GPU: its occupancy as gpuinventory.Occupancy counts it
// (the scheduler's and the scaler's rule) and the instances on it.
type GPUStatus struct {
	Node string `json:"node"`
	// Index is the GPU's index on its node (hetsev.io/gpu-index, or the
	// DRA device's index attribute).
	Index int `json:"index"`
	// Type is the GPU's product label (nvidia.com/gpu.product, or a DRA
	// device's productName as that label writes it).
	Type string `json:"type"`
	// UUID is a DRA device's uuid attribute, what dcgm-exporter's series
	// and hetsev.io/gpu-uuid name it by; empty in annotation mode.
	UUID string `json:"uuid,omitempty"`
	// Mode is how its tenants reach it: "annotations" or "dra".
	Mode           string `json:"mode"`
	MemoryUsedMiB  int64  `json:"memoryUsedMiB"`
	MemoryTotalMiB int64  `json:"memoryTotalMiB"`
	// BusyShare is the summed declared busy share (hetsev.io/busy-share)
	// of its instances, what the scheduler's cap counts; 1 = one GPU busy
	// all the time.
	BusyShare float64     `json:"busyShare"`
	Tenants   []GPUTenant `json:"tenants,omitempty"`
}

// GPUTenant is one pod on a GPU.
type GPUTenant struct {
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	Model     string `json:"model,omitempty"`
	// GPUMemoryMiB is the GPU memory it declares (hetsev.io/gpu-memory,
	// or its claim's request), MiB.
	GPUMemoryMiB int64 `json:"gpuMemoryMiB"`
	// BusyShare is its busy share as the co-location model takes it: the
	// declared one (hetsev.io/busy-share), or 1 (busy all the time) when
	// BusyShareDeclared is false.
	BusyShare         float64 `json:"busyShare"`
	BusyShareDeclared bool    `json:"busyShareDeclared"`
	// PlacedInflation is hetsev.io/predicted-inflation: the latency
	// inflation hetsev-scheduler predicted beside its neighbours at
	// placement; "" when the pod has none.
	PlacedInflation string `json:"placedInflation,omitempty"`
	// Inflation is the latency inflation the co-location model
	// (pkg/interference: the fitted one, or --interference-model's; in
	// the node's GPU sharing mode) predicts for it beside the GPU's
	// tenants now; 0 when the pod names no model.
	Inflation float64 `json:"inflation,omitempty"`
	// Moving is set for a pod hetsev-scaler marked for a consolidation
	// move (scaler.MarkedForMove): once the move's new replica serves,
	// the ReplicaSet removes this pod first.
	Moving bool `json:"moving,omitempty"`
}

// gpuOptions are `gpus`' flags.
type gpuOptions struct {
	node     string
	occupied bool
}

func newGPUsCommand(e *env) *cobra.Command {
	var o gpuOptions
	cmd := &cobra.Command{
		Use:   "gpus",
		Short: "Per node and GPU: type, tenants, GPU memory, busy share and predicted inflation",
		Long: `Per node and GPU: the GPU type, the pods on it (namespace/pod and model), GPU
memory used and total (MiB), the summed declared busy share (BUSY, what the
scheduler's cap counts), and per tenant its busy share (SHARE; "1(none)": it
declares none and counts as busy all the time) and the latency inflation hetsev-scheduler predicted at placement
(hetsev.io/predicted-inflation) and the one the co-location model predicts
beside the GPU's tenants now: the fitted model, as hetsev-scheduler's
default arguments, or the file --interference-model names (a copy of the
one its interferenceModelFile argument names). Pods reach GPUs through
hetsev.io/gpu-index or, in GPU mode dra, through their ResourceClaims'
allocated devices. Reads every namespace.`,
		Args: cobra.NoArgs,
	}
	format := addOutputFlag(cmd)
	cmd.Flags().StringVar(&o.node, "node", "", "show this node only")
	cmd.Flags().BoolVar(&o.occupied, "occupied", false, "show only GPUs with tenants")
	model := addInterferenceModelFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := checkOutput(*format); err != nil {
			return err
		}
		m, err := loadInterferenceModel(*model)
		if err != nil {
			return err
		}
		c, err := e.client()
		if err != nil {
			return err
		}
		r, err := GPUs(cmd.Context(), c, o.node, m)
		if err != nil {
			return err
		}
		if o.occupied {
			r.GPUs = slices.DeleteFunc(r.GPUs, func(g GPUStatus) bool { return len(g.Tenants) == 0 })
		}
		return write(e.out, *format, r, func(w io.Writer) error {
			writeNotes(e.errOut, r.Notes)
			return writeGPUTable(w, r)
		})
	}
	return cmd
}

// PrintGPUs writes the `kubectl hetsev gpus` table of the cluster c reads
// to w, and its notes after it.
func PrintGPUs(ctx context.Context, c client.Reader, w io.Writer) error {
	r, err := GPUs(ctx, c, "", interference.FittedColocation())
	if err != nil {
		return err
	}
	if err := writeGPUTable(w, r); err != nil {
		return err
	}
	writeNotes(w, r.Notes)
	return nil
}

// GPUs reads the cluster's GPUs and their tenants (node: that node only),
// each tenant's inflation now predicted with the co-location model m.
// A node publishing shareable devices of a known DRA driver (NVIDIA's,
// HAMi's) in ResourceSlices is counted as GPU mode dra counts it (pkg/dra: claims'
// allocations); any other node with GFD labels as annotation mode does
// (gpuinventory.Occupancy.AddPod). Nodes with neither have no GPUs here.
func GPUs(ctx context.Context, c client.Reader, node string, m interference.Colocation) (GPUReport, error) {
	objs, err := readCluster(ctx, c, node)
	if err != nil {
		return GPUReport{}, err
	}
	return buildGPUReport(objs, placement.Placer{Colocation: m}), nil
}

// buildGPUReport counts every node's GPUs and places each bound pod that
// holds a GPU on it.
func buildGPUReport(objs *clusterObjects, placer placement.Placer) GPUReport {
	r := GPUReport{Notes: objs.notes}
	dv := newDRAView(objs)
	byNode := map[string][]*v1.Pod{}
	for _, p := range objs.pods {
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
	}
	nodes := slices.Clone(objs.nodes)
	slices.SortFunc(nodes, func(a, b v1.Node) int { return cmp.Compare(a.Name, b.Name) })
	for i := range nodes {
		n := &nodes[i]
		gpus, notes := nodeGPUs(n, byNode[n.Name], dv, placer)
		r.GPUs = append(r.GPUs, gpus...)
		r.Notes = append(r.Notes, notes...)
	}
	return r
}

// nodeGPUs is one node's GPUs with their tenants, inflation predicted by
// placer.
func nodeGPUs(n *v1.Node, pods []*v1.Pod, dv *draView, placer placement.Placer) ([]GPUStatus, []string) {
	var (
		occ   *gpuinventory.Occupancy
		gpuOf func(*v1.Pod) (int, bool)
		notes []string
		out   []GPUStatus
	)
	nd := dv.nodes[n.Name]
	mode := v1alpha1.GPUModeAnnotations
	if nd != nil && len(nd.Devices) > 0 {
		mode = v1alpha1.GPUModeDRA
		occ, notes = draOccupancy(nd, pods, dv)
		gpuOf = func(p *v1.Pod) (int, bool) {
			for _, c := range dv.podClaims(p) {
				for _, k := range dra.AllocatedDevices(c, nd.Devices[0].Driver) {
					if i, ok := nd.Position(k); ok {
						return i, true
					}
				}
			}
			if idx, ok, err := gpuinventory.ParseGPUIndex(p.Annotations); ok && err == nil {
				for i, d := range nd.Devices {
					if d.Index == idx {
						return i, true
					}
				}
			}
			return 0, false
		}
	} else {
		inv, err := gpuinventory.NodeGPUsOf(n)
		if errors.Is(err, gpuinventory.ErrNoGPULabels) {
			return nil, nil
		}
		if err != nil {
			return nil, []string{fmt.Sprintf("node %s: %v", n.Name, err)}
		}
		occ = gpuinventory.NewOccupancy(n.Name, inv)
		for _, p := range pods {
			occ.AddPod(p, nil)
		}
		for _, is := range occ.Issues {
			notes = append(notes, fmt.Sprintf("pod %s/%s on node %s: %v; counted %s", is.Pod.Namespace, is.Pod.Name, n.Name, is.Err, is.Counted))
		}
		gpuOf = func(p *v1.Pod) (int, bool) {
			idx, ok, err := gpuinventory.ParseGPUIndex(p.Annotations)
			return idx, ok && err == nil && idx < len(occ.GPUs)
		}
	}
	pl := placer.OnNode(n.Labels)
	for i, g := range occ.GPUs {
		st := GPUStatus{
			Node: n.Name, Index: g.Index, Type: occ.Node.Product, Mode: mode,
			MemoryUsedMiB: g.UsedMiB, MemoryTotalMiB: g.TotalMiB, BusyShare: g.BusyShare,
		}
		if mode == v1alpha1.GPUModeDRA {
			st.Index, st.UUID = nd.Devices[i].Index, nd.Devices[i].UUID
			if t := dra.ProductLabel(nd.Devices[i].Product); t != "" {
				st.Type = t
			}
		}
		out = append(out, st)
	}
	for _, p := range pods {
		if !holdsGPU(p) {
			continue
		}
		pos, ok := gpuOf(p)
		if !ok {
			notes = append(notes, fmt.Sprintf("pod %s/%s on node %s: no GPU known (no valid %s, no allocated ResourceClaim device)", p.Namespace, p.Name, n.Name, v1alpha1.AnnotationGPUIndex))
			continue
		}
		t := tenantOf(p, dv)
		if t.Model != "" {
			t.Inflation = pl.Inflation(occ.GPUs[pos], gpuinventory.ModelOf(p))
		}
		out[pos].Tenants = append(out[pos].Tenants, t)
	}
	for i := range out {
		slices.SortFunc(out[i].Tenants, func(a, b GPUTenant) int {
			return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Pod, b.Pod))
		})
	}
	return out, notes
}

// draOccupancy is a node's occupancy in GPU mode dra, as hetsev-scheduler
// builds it: every allocated claim's usage (dra.NodeDevices.Occupancy),
// then the bound hetsev pods whose claim holds no device here on their
// hetsev.io/gpu-index (dra.AddUnclaimedPod).
func draOccupancy(nd *dra.NodeDevices, pods []*v1.Pod, dv *draView) (*gpuinventory.Occupancy, []string) {
	occ, byClaim, issues := nd.Occupancy(dv.usages, dv.consumers)
	var notes []string
	for _, u := range nd.Unusable {
		notes = append(notes, "not shared by hetsev: "+u.String())
	}
	for _, is := range issues {
		notes = append(notes, fmt.Sprintf("node %s: %s", nd.Node, is.String()))
	}
	for _, p := range pods {
		if byClaim[p.UID] || !dra.HasHetsevClaim(p) {
			continue
		}
		var mem int64
		if c := dra.PodClaim(p, v1alpha1.PodClaimName, dv.getClaim); c != nil {
			mem = dra.RequestedMiB(c)
		}
		if what := dra.AddUnclaimedPod(occ, nd, p, mem); what != "" {
			notes = append(notes, fmt.Sprintf("pod %s/%s on node %s: %s", p.Namespace, p.Name, nd.Node, what))
		}
	}
	return occ, notes
}

// holdsGPU reports whether the pod asks for a GPU share: hetsev's
// annotations, or GPU mode dra's pod claim.
func holdsGPU(p *v1.Pod) bool {
	if _, ok, _ := gpuinventory.DemandOf(p); ok {
		return true
	}
	if _, ok := p.Annotations[v1alpha1.AnnotationGPUIndex]; ok {
		return true
	}
	return dra.HasHetsevClaim(p)
}

// tenantOf is what the pod declares: model, GPU memory (its annotation,
// else its claim's request) and busy share, and the inflation recorded at
// placement. Malformed annotations read as gpuinventory reads them (the
// Notes say what was counted).
func tenantOf(p *v1.Pod, dv *draView) GPUTenant {
	d, _, _ := gpuinventory.DemandOf(p)
	t := GPUTenant{
		Namespace: p.Namespace, Pod: p.Name,
		Model:             p.Annotations[v1alpha1.AnnotationModel],
		GPUMemoryMiB:      d.MemoryMiB,
		BusyShare:         d.Busy(),
		BusyShareDeclared: d.BusyShare > 0 && d.BusyShare <= 1,
		PlacedInflation:   p.Annotations[v1alpha1.AnnotationPredictedInflation],
		Moving:            scaler.MarkedForMove(p),
	}
	if t.GPUMemoryMiB == 0 {
		if c := dra.PodClaim(p, v1alpha1.PodClaimName, dv.getClaim); c != nil {
			t.GPUMemoryMiB = dra.RequestedMiB(c)
		}
	}
	return t
}

// busyCell is the tenant's declared busy share, or "1(none)" when it
// declares none (the model takes it as busy all the time).
func (t GPUTenant) busyCell() string {
	if !t.BusyShareDeclared {
		return "1(none)"
	}
	return fmt.Sprintf("%.2f", t.BusyShare)
}

// writeGPUTable prints one line per tenant; a GPU's columns are on its
// first line only, and a GPU without tenants has one line with "-". BUSY
// is the GPU's summed declared busy share (what the scheduler's cap
// counts), SHARE each tenant's.
func writeGPUTable(w io.Writer, r GPUReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tGPU\tTYPE\tMEMORY(MiB)\tBUSY\tTENANT\tMODEL\tSHARE\tINFLATION(PLACED)\tINFLATION(NOW)")
	for _, g := range r.GPUs {
		head := fmt.Sprintf("%s\t%d\t%s\t%d/%d\t%.2f", g.Node, g.Index, g.Type, g.MemoryUsedMiB, g.MemoryTotalMiB, g.BusyShare)
		if len(g.Tenants) == 0 {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\n", head)
			continue
		}
		for i, t := range g.Tenants {
			if i > 0 {
				head = "\t\t\t\t"
			}
			moving := ""
			if t.Moving {
				moving = " (moving)"
			}
			fmt.Fprintf(tw, "%s\t%s/%s%s\t%s\t%s\t%s\t%s\n", head, t.Namespace, t.Pod, moving, orDash(t.Model), t.busyCell(), orDash(t.PlacedInflation), inflationCell(t.Inflation))
		}
	}
	return tw.Flush()
}

// writeNotes prints the report's notes, one per line.
func writeNotes(w io.Writer, notes []string) {
	for _, n := range notes {
		fmt.Fprintln(w, "note:", n)
	}
}

func inflationCell(f float64) string {
	if f == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", f)
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}
