package kubectlhetsev

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// ModelServiceExplanation is `explain modelservice`'s answer: the
// ModelService's SLO and the status hetsev-scaler wrote (v1alpha1's own
// types, so -o json and yaml show every field the API has), and its recent
// Events.
type ModelServiceExplanation struct {
	Namespace string                      `json:"namespace"`
	Name      string                      `json:"name"`
	SLO       v1alpha1.SLO                `json:"slo"`
	Status    v1alpha1.ModelServiceStatus `json:"status"`
	Events    []EventSummary              `json:"events,omitempty"`
	Notes     []string                    `json:"notes,omitempty"`
}

// msSection is one section of the -o table explanation; msSections lists
// them in order, so that a section for a new status field is one entry.
type msSection struct {
	title string
	write func(w io.Writer, x *ModelServiceExplanation)
}

var msSections = []msSection{
	{"Scaling", writeMSScaling},
	{"Last decision", writeMSDecision},
	{"Decisions (oldest first)", writeMSHistory},
	{"Conditions", writeMSConditions},
	{"Events (newest first)", func(w io.Writer, x *ModelServiceExplanation) { writeEvents(w, x.Events) }},
}

// ExplainModelService reads the ModelService namespace/name and its Events.
func ExplainModelService(ctx context.Context, c client.Reader, namespace, name string) (*ModelServiceExplanation, error) {
	var ms v1alpha1.ModelService
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &ms); err != nil {
		return nil, apiError(err, "get", "modelservices.hetsev.io", "modelservice", namespace+"/"+name)
	}
	x := &ModelServiceExplanation{Namespace: ms.Namespace, Name: ms.Name, SLO: ms.Spec.SLO, Status: ms.Status}
	evs, note, err := eventsOf(ctx, c, "ModelService", ms.Namespace, ms.Name, ms.UID)
	if err != nil {
		return nil, err
	}
	x.Events = evs
	if note != "" {
		x.Notes = append(x.Notes, note)
	}
	return x, nil
}

// writeText prints the explanation for -o table, section by section.
func (x *ModelServiceExplanation) writeText(w io.Writer) error {
	fmt.Fprintf(w, "ModelService: %s/%s\n", x.Namespace, x.Name)
	for _, s := range msSections {
		fmt.Fprintf(w, "%s:\n", s.title)
		s.write(w, x)
	}
	writeNotes(w, x.Notes)
	return nil
}

func writeMSScaling(w io.Writer, x *ModelServiceExplanation) {
	fmt.Fprintf(w, "  arrival rate:  %s requests/s\n", orDash(x.Status.ArrivalRate))
	fmt.Fprintf(w, "  saturation:    %s\n", orDash(x.Status.Saturation))
	fmt.Fprintf(w, "  SLO:           %g of requests within %g ms\n", x.SLO.ServiceLevel, x.SLO.ResponseTimeMs)
	fmt.Fprintf(w, "  attainment:    %s\n", orDash(x.Status.Attainment))
	if x.Status.LatencyPercentile != "" {
		fmt.Fprintf(w, "  %-14s %s ms\n", x.Status.LatencyPercentile+" latency:", orDash(x.Status.LatencyAtServiceLevelMs))
	}
	fmt.Fprintf(w, "  p98 latency:   %s ms\n", orDash(x.Status.LatencyP98Ms))
	fmt.Fprintf(w, "  replicas:      %d in all\n", x.Status.TotalReplicas)
	// The planned prices: a GPU is billed whole while it hosts anything.
	fmt.Fprintf(w, "  cost:          %s USD/h at the prices the scaler plans with\n", orDash(x.Status.CostUSDPerHour))
	for _, t := range sortedKeys(x.Status.Replicas) {
		weight := "-"
		if v, ok := x.Status.TrafficWeights[t]; ok {
			weight = fmt.Sprintf("%d%%", v)
		}
		fmt.Fprintf(w, "    %-20s %d replicas, traffic %s\n", t, x.Status.Replicas[t], weight)
	}
}

func writeMSDecision(w io.Writer, x *ModelServiceExplanation) {
	d := x.Status.LastDecision
	if d == nil {
		fmt.Fprintf(w, "  none yet\n")
		return
	}
	fmt.Fprintf(w, "  action:  %s at %s\n", d.Action, d.Time.UTC().Format("2006-01-02T15:04:05Z"))
	for _, t := range sortedKeys(d.Delta) {
		fmt.Fprintf(w, "  delta:   %s %+d\n", t, d.Delta[t])
	}
	fmt.Fprintf(w, "  reason:  %s\n", d.Reason)
	if r := d.Replacement; r != nil {
		writeReplacement(w, r)
	}
	if d.Objective != "" {
		fmt.Fprintf(w, "  objective: %s USD/h\n", d.Objective)
	}
	if a := d.Alternative; a != nil {
		var delta []string
		for _, t := range sortedKeys(a.Delta) {
			delta = append(delta, fmt.Sprintf("%s %+d", t, a.Delta[t]))
		}
		fmt.Fprintf(w, "  rejected:  %s, objective %s USD/h: %s\n", strings.Join(delta, ", "), a.Objective, orDash(a.Why))
	}
	if len(d.Types) > 0 {
		fmt.Fprintf(w, "  %-20s %8s %14s %10s %10s\n", "GPU TYPE", "REPLICAS", "CAPACITY(RPS)", "FREE SLOTS", "COST/REQ")
		for _, t := range d.Types {
			ratio := "-"
			if t.CostRatio != "" {
				ratio = t.CostRatio + "x"
			}
			fmt.Fprintf(w, "  %-20s %8d %14s %10d %10s\n", t.GPUType, t.Replicas, orDash(t.CapacityRPS), t.FreeSlots, ratio)
		}
	}
}

// writeMSHistory prints status.decisions, one line each.
func writeMSHistory(w io.Writer, x *ModelServiceExplanation) {
	if len(x.Status.Decisions) == 0 {
		fmt.Fprintf(w, "  none recorded\n")
		return
	}
	for _, d := range x.Status.Decisions {
		var delta []string
		for _, t := range sortedKeys(d.Delta) {
			delta = append(delta, fmt.Sprintf("%s %+d", t, d.Delta[t]))
		}
		fmt.Fprintf(w, "  %s  %-14s %-20s %s\n", d.Time.UTC().Format("2006-01-02T15:04:05Z"), d.Action, orDash(strings.Join(delta, ", ")), d.Reason)
	}
}

func writeMSConditions(w io.Writer, x *ModelServiceExplanation) {
	if len(x.Status.Conditions) == 0 {
		fmt.Fprintf(w, "  none\n")
		return
	}
	for _, c := range x.Status.Conditions {
		fmt.Fprintf(w, "  %s=%s  %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
}

// sortedKeys are m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// writeReplacement prints the replacement a decision recorded: a
// consolidation move (From equal to To) in its own words, since "1 of T4
// by 1 of T4" would read as doing nothing; the phase ("waiting" when the
// decision left it in flight untouched) and the capacity floor it keeps.
func writeReplacement(w io.Writer, r *v1alpha1.Replacement) {
	phase := r.Phase
	if phase == "" {
		phase = "waiting"
	}
	floor := ""
	if r.FloorRPS != "" {
		floor = ", floor " + r.FloorRPS + " requests/s"
	}
	if r.From == r.To {
		fmt.Fprintf(w, "  move:    %d of %s onto a GPU in use (consolidation): %s%s, %d of %d old removed\n",
			r.Add, r.From, phase, floor, r.Removed, r.Remove)
		return
	}
	fmt.Fprintf(w, "  replacement: %d of %s by %d of %s: %s%s, %d of %d old removed\n", r.Remove, r.From, r.Add, r.To, phase, floor, r.Removed, r.Remove)
}
