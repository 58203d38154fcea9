package gpuinventory

import (
	"strings"
	"testing"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

func TestParseNodeGPUs(t *testing.T) {
	cases := []struct {
		name    string
		labels  map[string]string
		want    NodeGPUs
		wantErr string
	}{
		{"t4 node", map[string]string{LabelGPUProduct: "Tesla-T4", LabelGPUCount: "2", LabelGPUMemory: "16384"}, NodeGPUs{"Tesla-T4", 2, 16384}, ""},
		{"no labels", map[string]string{}, NodeGPUs{}, "no nvidia.com/gpu.count"},
		{"bad count", map[string]string{LabelGPUCount: "two", LabelGPUMemory: "1"}, NodeGPUs{}, LabelGPUCount},
		{"zero count", map[string]string{LabelGPUCount: "0", LabelGPUMemory: "1"}, NodeGPUs{}, LabelGPUCount},
		{"missing memory", map[string]string{LabelGPUCount: "2"}, NodeGPUs{}, LabelGPUMemory},
		{"negative memory", map[string]string{LabelGPUCount: "2", LabelGPUMemory: "-5"}, NodeGPUs{}, LabelGPUMemory},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseNodeGPUs(c.labels)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want mention of %q", err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

func TestParseDemand(t *testing.T) {
	cases := []struct {
		name    string
		ann     map[string]string
		want    Demand
		wantOK  bool
		wantErr string
	}{
		{"not a gpu pod", map[string]string{"x": "y"}, Demand{}, false, ""},
		{"gi", map[string]string{v1alpha1.AnnotationModel: "resnet50", v1alpha1.AnnotationGPUMemory: "2Gi"}, Demand{Model: "resnet50", MemoryMiB: 2048}, true, ""},
		{"rounds up to MiB", map[string]string{v1alpha1.AnnotationGPUMemory: "1500000"}, Demand{Model: "", MemoryMiB: 2}, true, ""},
		{"malformed", map[string]string{v1alpha1.AnnotationModel: "m", v1alpha1.AnnotationGPUMemory: "lots"}, Demand{}, true, v1alpha1.AnnotationGPUMemory},
		{"negative", map[string]string{v1alpha1.AnnotationModel: "m", v1alpha1.AnnotationGPUMemory: "-1Gi"}, Demand{}, true, "must be positive"},
		{"zero", map[string]string{v1alpha1.AnnotationGPUMemory: "0"}, Demand{}, true, "must be positive"},
		{"model without memory", map[string]string{v1alpha1.AnnotationModel: "m"}, Demand{}, true, "is required"},
		{"model with a slash", map[string]string{v1alpha1.AnnotationModel: "a/resnet50", v1alpha1.AnnotationGPUMemory: "2Gi"}, Demand{}, true, `must not contain "/"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok, err := ParseDemand(c.ann)
			if ok != c.wantOK {
				t.Fatalf("ok = %v, want %v", ok, c.wantOK)
			}
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want mention of %q", err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

// TestAccount: placements add up per GPU; an index beyond the node's GPUs
// is returned as stray and not counted. (Worst fit on the same GPUs:
// pkg/placement's TestWorstFit.)
func TestAccount(t *testing.T) {
	node := NodeGPUs{Product: "Tesla-T4", Count: 2, MemoryMiB: 16384}
	placed := []Placement{
		{0, Demand{Model: "resnet50", MemoryMiB: 2048}},
		{1, Demand{Model: "ssd", MemoryMiB: 3072}},
		{1, Demand{Model: "bert", MemoryMiB: 6144}},
		{7, Demand{Model: "ghost", MemoryMiB: 1}}, // out of range
	}
	gpus, stray := Account(node, placed)
	if len(stray) != 1 || stray[0].Demand.Model != "ghost" {
		t.Fatalf("stray = %+v", stray)
	}
	if gpus[0].FreeMiB() != 14336 || gpus[1].FreeMiB() != 7168 {
		t.Fatalf("free = %d, %d", gpus[0].FreeMiB(), gpus[1].FreeMiB())
	}
}
