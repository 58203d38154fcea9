package helmchart

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The CRD is a template, so that helm upgrade applies it: rendered with
// crds.install, kept by helm uninstall with crds.keep, and otherwise the
// file manifests/ applies. A chart crds/ directory, which Helm installs
// once and never upgrades, would hold a second copy.
func TestCRDTemplate(t *testing.T) {
	crd := func(objs []*unstructured.Unstructured) *unstructured.Unstructured {
		for _, o := range objs {
			if o.GetKind() == "CustomResourceDefinition" {
				return o
			}
		}
		return nil
	}
	raw, err := os.ReadFile(filepath.Join(chartDir(), "..", "..", "manifests", "crd-modelservice.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := yaml.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}

	def := crd(render(t, nil))
	if def == nil {
		t.Fatal("default values: no CustomResourceDefinition rendered")
	}
	if got := def.GetAnnotations()["helm.sh/resource-policy"]; got != "keep" {
		t.Errorf("default values: helm.sh/resource-policy %q, want keep", got)
	}
	spec, _, _ := unstructured.NestedMap(def.Object, "spec")
	if !reflect.DeepEqual(jsonRoundTrip(t, spec), jsonRoundTrip(t, want["spec"])) {
		t.Error("the chart's CRD spec differs from manifests/crd-modelservice.yaml: run make generate")
	}
	noKeep := crd(render(t, map[string]any{"crds": map[string]any{"install": true, "keep": false}}))
	if noKeep == nil || noKeep.GetAnnotations()["helm.sh/resource-policy"] != "" {
		t.Errorf("crds.keep false: %v, want the CRD without Helm's keep policy", noKeep.GetAnnotations())
	}
	if o := crd(render(t, map[string]any{"crds": map[string]any{"install": false, "keep": true}})); o != nil {
		t.Error("crds.install false: the CRD is still rendered")
	}
	if _, err := os.Stat(filepath.Join(chartDir(), "crds")); !os.IsNotExist(err) {
		t.Errorf("the chart has a crds/ directory (%v): Helm would install it once and never upgrade it", err)
	}
}

func jsonRoundTrip(t *testing.T, v any) any {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := yaml.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
