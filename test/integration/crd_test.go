package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/scaler"
)

// The CRD generated from pkg/apis/v1alpha1's markers validates on a real
// API server as documented: the schema's bounds, enums and list keys, the
// CEL rule on min/max replicas, the pod template's schema and the
// status's.
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
		"unknown protocol":         {func(m *v1alpha1.ModelService) { m.Spec.Protocol = "tcp" }, "spec.protocol"},
		"unknown model scope":      {func(m *v1alpha1.ModelService) { m.Spec.ModelScope = "Team" }, "spec.modelScope"},
		"overrides": {func(m *v1alpha1.ModelService) {
			m.Spec.Protocol, m.Spec.ModelScope = v1alpha1.ProtocolGRPC, v1alpha1.ModelScopeCluster
			m.Spec.Profiles[0].Overrides = &v1alpha1.TemplateOverrides{Container: "m", Image: "m:t4", Args: []string{"--t4"},
				Env: []v1.EnvVar{{Name: "A", Value: "1"}}, Resources: &v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}}}
		}, ""},
		"override env twice": {func(m *v1alpha1.ModelService) {
			m.Spec.Profiles[0].Overrides = &v1alpha1.TemplateOverrides{Env: []v1.EnvVar{{Name: "A", Value: "1"}, {Name: "A", Value: "2"}}}
		}, "spec.profiles[0].overrides.env[1]"},
		"hysteresis below threshold": {func(m *v1alpha1.ModelService) {
			m.Spec.Scaling.SaturationThreshold, m.Spec.Scaling.ScaleInHysteresis = 0.5, ptr.To(0.4)
		}, ""},
		"hysteresis at threshold": {func(m *v1alpha1.ModelService) {
			m.Spec.Scaling.SaturationThreshold, m.Spec.Scaling.ScaleInHysteresis = 0.5, ptr.To(0.5)
		}, "scaleInHysteresis must be below saturationThreshold"},
		"hysteresis above default threshold": {func(m *v1alpha1.ModelService) { m.Spec.Scaling.ScaleInHysteresis = ptr.To(0.9) }, "scaleInHysteresis must be below saturationThreshold"},
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

	// The template has PodTemplateSpec's schema: a field it does not list
	// is refused with strict field validation (kubectl's default) and
	// pruned without; the status has a schema too: unknown fields are
	// pruned, wrong types refused.
	typo := func(o map[string]any) {
		o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containerz"] = []any{}
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(valid("strict"))
	if err != nil {
		t.Fatal(err)
	}
	typo(obj)
	if _, err := client.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}); err == nil || !strings.Contains(err.Error(), `unknown field "spec.template.spec.containerz"`) {
		t.Errorf("template with spec.containerz, strict: %v, want an unknown field error", err)
	}
	u, err := create(valid("open"), typo)
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "template", "spec", "containerz"); found {
		t.Errorf("spec.template.spec.containerz kept: %v", u.Object["spec"])
	}
	if c, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers"); len(c) != 1 {
		t.Errorf("spec.template.spec.containers %v, want the one container", c)
	}
	// The template's labels and annotations are kept: the scaler's pods
	// carry them (scrape annotations, the user's labels).
	meta := valid("meta")
	meta.Spec.Template.Labels = map[string]string{"app": "resnet"}
	meta.Spec.Template.Annotations = map[string]string{"prometheus.io/scrape": "true"}
	if u, err := create(meta, nil); err != nil {
		t.Fatal(err)
	} else if l, _, _ := unstructured.NestedStringMap(u.Object, "spec", "template", "metadata", "labels"); l["app"] != "resnet" {
		t.Errorf("spec.template.metadata.labels %v after storage, want app=resnet", l)
	} else if a, _, _ := unstructured.NestedStringMap(u.Object, "spec", "template", "metadata", "annotations"); a["prometheus.io/scrape"] != "true" {
		t.Errorf("spec.template.metadata.annotations %v after storage, want prometheus.io/scrape=true", a)
	}
	u.Object["status"] = map[string]any{"replicas": map[string]any{"T4": "two"}}
	if _, err := client.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err == nil || !strings.Contains(err.Error(), "status.replicas") {
		t.Errorf("status.replicas.T4 = \"two\": %v, want refused", err)
	}
	if u, err = client.Get(ctx, "open", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	u.Object["status"] = map[string]any{"arrivalRate": "1.00", "futureField": "pruned",
		"replicas": map[string]any{"T4": int64(2), "V100-32GB": int64(1)}, "totalReplicas": int64(3), "saturation": "0.412",
		"selector":   v1alpha1.LabelModelService + "=open",
		"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Reconciled", "message": "", "lastTransitionTime": "2025-01-01T00:00:00Z"}}}
	u, err = client.UpdateStatus(ctx, u, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "futureField"); found {
		t.Errorf("status.futureField kept: %v", u.Object["status"])
	}

	// Defaults in the schema are the scaler's defaults.
	bare := valid("defaults")
	bare.Spec.Scaling = v1alpha1.Scaling{}
	u, err = create(bare, nil)
	if err != nil {
		t.Fatal(err)
	}
	for field, want := range map[string]float64{
		"intervalSeconds":        scaler.DefaultIntervalSeconds,
		"scaleOutPeriodSeconds":  scaler.DefaultScaleOutPeriodSeconds,
		"scaleInIntervalSeconds": scaler.DefaultScaleInIntervalSeconds,
		"scaleInCoolDownSeconds": scaler.DefaultScaleInCoolDownSeconds,
		"scaleInHysteresis":      scaler.DefaultScaleInHysteresis,
		"lambda":                 scaler.DefaultLambda,
		"minReplicas":            1,
	} {
		v, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "scaling", field)
		if got, ok := asFloat(v); !found || !ok || got != want {
			t.Errorf("spec.scaling.%s defaulted to %v, want %v", field, v, want)
		}
	}
	// The saturation threshold stays unset: hetsev-scaler applies its
	// default or derives one (--model-thresholds).
	if v, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "scaling", "saturationThreshold"); found {
		t.Errorf("spec.scaling.saturationThreshold defaulted to %v, want unset", v)
	}
	if v, _, _ := unstructured.NestedInt64(u.Object, "spec", "servicePort"); v != scaler.DefaultServicePort {
		t.Errorf("spec.servicePort defaulted to %d, want %d", v, scaler.DefaultServicePort)
	}
	if v, _, _ := unstructured.NestedString(u.Object, "spec", "protocol"); v != v1alpha1.ProtocolHTTP {
		t.Errorf("spec.protocol defaulted to %q, want %q", v, v1alpha1.ProtocolHTTP)
	}
	if v, _, _ := unstructured.NestedString(u.Object, "spec", "modelScope"); v != v1alpha1.ModelScopeNamespace {
		t.Errorf("spec.modelScope defaulted to %q, want %q", v, v1alpha1.ModelScopeNamespace)
	}

	// The scale subresource: spec.replicas is spec.scaling.minReplicas (the
	// floor of replicas over all GPU types), status.replicas the total.
	scale, err := client.Get(ctx, "open", metav1.GetOptions{}, "scale")
	if err != nil {
		t.Fatal(err)
	}
	specReplicas, _, _ := unstructured.NestedInt64(scale.Object, "spec", "replicas")
	statusReplicas, _, _ := unstructured.NestedInt64(scale.Object, "status", "replicas")
	selector, _, _ := unstructured.NestedString(scale.Object, "status", "selector")
	if specReplicas != 2 || statusReplicas != 3 || selector != v1alpha1.LabelModelService+"=open" {
		t.Errorf("scale: spec.replicas %d, status.replicas %d, selector %q; want 2 (minReplicas), 3, %s=open", specReplicas, statusReplicas, selector, v1alpha1.LabelModelService)
	}
	_ = unstructured.SetNestedField(scale.Object, int64(3), "spec", "replicas")
	if _, err := client.Update(ctx, scale, metav1.UpdateOptions{}, "scale"); err != nil {
		t.Errorf("scaling to 3: %v", err)
	} else if u, err := client.Get(ctx, "open", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if v, _, _ := unstructured.NestedInt64(u.Object, "spec", "scaling", "minReplicas"); v != 3 {
		t.Errorf("after scaling to 3: spec.scaling.minReplicas %d", v)
	}
	scale, err = client.Get(ctx, "open", metav1.GetOptions{}, "scale")
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(scale.Object, int64(5), "spec", "replicas")
	if _, err := client.Update(ctx, scale, metav1.UpdateOptions{}, "scale"); err == nil || !strings.Contains(err.Error(), "maxReplicas") {
		t.Errorf("scaling to 5 with maxReplicas 4: %v, want refused", err)
	}

	// kubectl get's columns.
	raw, err := cp.Client.CoreV1().RESTClient().Get().AbsPath("/apis", v1alpha1.GroupName, v1alpha1.GroupVersion.Version, "namespaces", "default", v1alpha1.Resource.Resource, "open").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Raw()
	if err != nil {
		t.Fatal(err)
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(raw, table); err != nil {
		t.Fatal(err)
	}
	row := map[string]any{}
	for i, c := range table.ColumnDefinitions {
		if len(table.Rows) == 1 && i < len(table.Rows[0].Cells) {
			row[c.Name] = table.Rows[0].Cells[i]
		}
	}
	for col, want := range map[string]any{"Model": "resnet50", "Replicas": `{"T4":2,"V100-32GB":1}`, "W(req/s)": "1.00", "Saturation": "0.412", "Ready": "True"} {
		if fmt.Sprint(row[col]) != fmt.Sprint(want) {
			t.Errorf("column %s = %v, want %v (row %v)", col, row[col], want, row)
		}
	}
}

func asFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}
