package integration

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// The CRD generated from pkg/apis/v1alpha1's markers validates on a real
// API server as documented: the schema's bounds, enums and list keys, the
// CEL rule on min/max replicas, and the open (preserved) template and
// status.
func TestModelServiceCRDValidation(t *testing.T) {
	cp, ctx := controlPlane(t)
	if err := cluster.InstallCRDs(ctx, cp); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	client := dyn.Resource(v1alpha1.Resource).Namespace("default")
	valid := func(name string) *v1alpha1.ModelService {
		return &v1alpha1.ModelService{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.Kind},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: v1alpha1.ModelServiceSpec{
				Model: "resnet50", SLO: v1alpha1.SLO{ResponseTimeMs: 400, ServiceLevel: 0.98}, BatchSize: 8,
				Profiles: []v1alpha1.GPUProfile{
					{GPUType: "T4", ThroughputRPS: 363, LatencyMs: 22.41, GPUMemory: "2048Mi"},
					{GPUType: "V100-32GB", ThroughputRPS: 709, LatencyMs: 11.5, GPUMemory: "2Gi"},
				},
				Scaling:  v1alpha1.Scaling{MinReplicas: 2, MaxReplicas: 4},
				Template: v1.PodTemplateSpec{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "m", Image: "m:1"}}}},
			},
		}
	}
	create := func(ms *v1alpha1.ModelService, edit func(map[string]any)) (*unstructured.Unstructured, error) {
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ms)
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			edit(obj)
		}
		return client.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	}

	for name, c := range map[string]struct {
		edit    func(*v1alpha1.ModelService)
		wantErr string // "" accepted
	}{
		"valid":                    {func(*v1alpha1.ModelService) {}, ""},
		"no max cap":               {func(m *v1alpha1.ModelService) { m.Spec.Scaling.MaxReplicas = 0 }, ""},
		"max below min":            {func(m *v1alpha1.ModelService) { m.Spec.Scaling.MaxReplicas = 1 }, "maxReplicas must be 0 (no cap) or at least minReplicas"},
		"max below default min":    {func(m *v1alpha1.ModelService) { m.Spec.Scaling = v1alpha1.Scaling{MaxReplicas: 1} }, ""},
		"no profiles":              {func(m *v1alpha1.ModelService) { m.Spec.Profiles = []v1alpha1.GPUProfile{} }, "spec.profiles"},
		"duplicate gpuType":        {func(m *v1alpha1.ModelService) { m.Spec.Profiles[1].GPUType = "T4" }, "spec.profiles[1]"},
		"bad gpuMemory":            {func(m *v1alpha1.ModelService) { m.Spec.Profiles[0].GPUMemory = "lots" }, "spec.profiles[0].gpuMemory"},
		"zero service level":       {func(m *v1alpha1.ModelService) { m.Spec.SLO.ServiceLevel = 0 }, "spec.slo.serviceLevel"},
		"service level above 1":    {func(m *v1alpha1.ModelService) { m.Spec.SLO.ServiceLevel = 1.5 }, "spec.slo.serviceLevel"},
		"unknown solver":           {func(m *v1alpha1.ModelService) { m.Spec.Scaling.Solver = "greedy" }, "spec.scaling.solver"},
		"batch size above 4096":    {func(m *v1alpha1.ModelService) { m.Spec.BatchSize = 5000 }, "spec.batchSize"},
		"min replicas 0 is absent": {func(m *v1alpha1.ModelService) { m.Spec.Scaling.MinReplicas = 0 }, ""},
	} {
		ms := valid(strings.ReplaceAll(name, " ", "-"))
		c.edit(ms)
		_, err := create(ms, nil)
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%s: rejected: %v", name, err)
		case c.wantErr != "" && err == nil:
			t.Errorf("%s: accepted, want an error about %s", name, c.wantErr)
		case c.wantErr != "" && !strings.Contains(err.Error(), c.wantErr):
			t.Errorf("%s: error %v, want one about %s", name, err, c.wantErr)
		}
	}

	// Required fields.
	if _, err := create(valid("no-template"), func(o map[string]any) { delete(o["spec"].(map[string]any), "template") }); err == nil || !strings.Contains(err.Error(), "spec.template") {
		t.Errorf("spec without template: %v, want required", err)
	}

	// Template and status keep fields the schema does not list.
	u, err := create(valid("open"), func(o map[string]any) {
		o["spec"].(map[string]any)["template"].(map[string]any)["futureField"] = "kept"
	})
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(u.Object, "spec", "template", "futureField"); v != "kept" {
		t.Errorf("spec.template.futureField pruned: %v", u.Object["spec"])
	}
	u.Object["status"] = map[string]any{"arrivalRate": "1.00", "futureField": "kept"}
	u, err = client.UpdateStatus(ctx, u, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(u.Object, "status", "futureField"); v != "kept" {
		t.Errorf("status.futureField pruned: %v", u.Object["status"])
	}
}
