package kubectlhetsev

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// ModelServiceExplanation is `explain modelservice`'s answer: the
// scaler's status of the ModelService and its recent Events. The status
// fields are v1alpha1's own types, so -o json and yaml show every field
// the API has.
type ModelServiceExplanation struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// LastDecision is status.lastDecision.
	LastDecision *v1alpha1.Decision `json:"lastDecision,omitempty"`
	// Decisions is status.decisions: the scaler's recent decisions, oldest
	// first, the newest being LastDecision.
	Decisions  []v1alpha1.Decision `json:"decisions,omitempty"`
	Conditions []metav1.Condition  `json:"conditions,omitempty"`
	// Replicas per GPU type and light flavor (status.replicas).
	Replicas      map[string]int32 `json:"replicas,omitempty"`
	TotalReplicas int32            `json:"totalReplicas"`
	// ArrivalRate is W, requests/s; Saturation is W / sum T_i N_i.
	ArrivalRate  string `json:"arrivalRate,omitempty"`
	Saturation   string `json:"saturation,omitempty"`
	LatencyP98Ms string `json:"latencyP98Ms,omitempty"`
	// Attainment is the fraction of requests within RT_max over the
	// metrics adapter's rate window; LatencyAtServiceLevelMs the latency at
	// the percentile LatencyPercentile that matches SL_min (status).
	Attainment              string `json:"attainment,omitempty"`
	LatencyPercentile       string `json:"latencyPercentile,omitempty"`
	LatencyAtServiceLevelMs string `json:"latencyAtServiceLevelMs,omitempty"`
	// RTMaxMs and ServiceLevel are the SLO (spec.slo).
	RTMaxMs        float64          `json:"rtMaxMs"`
	ServiceLevel   float64          `json:"serviceLevel"`
	TrafficWeights map[string]int32 `json:"trafficWeights,omitempty"`
	Events         []EventSummary   `json:"events,omitempty"`
	Notes          []string         `json:"notes,omitempty"`
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

func newExplainModelServiceCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "modelservice NAME",
		Aliases: []string{"modelservices", "ms"},
		Short:   "A ModelService's last scaling decision, conditions, replicas per GPU type, arrival rate, saturation and events",
		Args:    cobra.ExactArgs(1),
	}
	format := addOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := checkOutput(*format); err != nil {
			return err
		}
		ns, err := e.namespace()
		if err != nil {
			return err
		}
		c, err := e.client()
		if err != nil {
			return err
		}
		x, err := ExplainModelService(cmd.Context(), c, ns, args[0])
		if err != nil {
			return err
		}
		return write(e.out, *format, x, x.writeText)
	}
	return cmd
}

// ExplainModelService reads the ModelService namespace/name and its Events.
func ExplainModelService(ctx context.Context, c client.Reader, namespace, name string) (*ModelServiceExplanation, error) {
	var ms v1alpha1.ModelService
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &ms); err != nil {
		return nil, apiError(err, "get", "modelservices.hetsev.io", "modelservice", namespace+"/"+name)
	}
	st := ms.Status
	x := &ModelServiceExplanation{
		Namespace: ms.Namespace, Name: ms.Name,
		LastDecision: st.LastDecision, Decisions: st.Decisions, Conditions: st.Conditions,
		Replicas: st.Replicas, TotalReplicas: st.TotalReplicas,
		ArrivalRate: st.ArrivalRate, Saturation: st.Saturation,
		LatencyP98Ms: st.LatencyP98Ms, TrafficWeights: st.TrafficWeights,
		Attainment: st.Attainment, LatencyPercentile: st.LatencyPercentile, LatencyAtServiceLevelMs: st.LatencyAtServiceLevelMs,
		RTMaxMs: ms.Spec.SLO.ResponseTimeMs, ServiceLevel: ms.Spec.SLO.ServiceLevel,
	}
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
	fmt.Fprintf(w, "  arrival rate:  %s requests/s\n", orDash(x.ArrivalRate))
	fmt.Fprintf(w, "  saturation:    %s\n", orDash(x.Saturation))
	fmt.Fprintf(w, "  SLO:           %g of requests within %g ms\n", x.ServiceLevel, x.RTMaxMs)
	fmt.Fprintf(w, "  attainment:    %s\n", orDash(x.Attainment))
	if x.LatencyPercentile != "" {
		fmt.Fprintf(w, "  %-14s %s ms\n", x.LatencyPercentile+" latency:", orDash(x.LatencyAtServiceLevelMs))
	}
	fmt.Fprintf(w, "  p98 latency:   %s ms\n", orDash(x.LatencyP98Ms))
	fmt.Fprintf(w, "  replicas:      %d in all\n", x.TotalReplicas)
	for _, t := range sortedKeys(x.Replicas) {
		weight := "-"
		if v, ok := x.TrafficWeights[t]; ok {
			weight = fmt.Sprintf("%d%%", v)
		}
		fmt.Fprintf(w, "    %-20s %d replicas, traffic %s\n", t, x.Replicas[t], weight)
	}
}

func writeMSDecision(w io.Writer, x *ModelServiceExplanation) {
	d := x.LastDecision
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
		fmt.Fprintf(w, "  replacement: %d of %s by %d of %s (%d removed)\n", r.Remove, r.From, r.Add, r.To, r.Removed)
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
	if len(x.Decisions) == 0 {
		fmt.Fprintf(w, "  none recorded\n")
		return
	}
	for _, d := range x.Decisions {
		var delta []string
		for _, t := range sortedKeys(d.Delta) {
			delta = append(delta, fmt.Sprintf("%s %+d", t, d.Delta[t]))
		}
		fmt.Fprintf(w, "  %s  %-14s %-20s %s\n", d.Time.UTC().Format("2006-01-02T15:04:05Z"), d.Action, orDash(strings.Join(delta, ", ")), d.Reason)
	}
}

func writeMSConditions(w io.Writer, x *ModelServiceExplanation) {
	if len(x.Conditions) == 0 {
		fmt.Fprintf(w, "  none\n")
		return
	}
	for _, c := range x.Conditions {
		fmt.Fprintf(w, "  %s=%s  %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
}

// sortedKeys are m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
