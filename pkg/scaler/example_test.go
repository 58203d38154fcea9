package scaler

import (
	"os"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// TestExampleGetsTheShippedThreshold: the ModelService a user copies from
// manifests/examples runs at the threshold hetsev-scaler derives from the
// SLO latency model, not at a pinned one that turns the rule off.
func TestExampleGetsTheShippedThreshold(t *testing.T) {
	raw, err := os.ReadFile("../../manifests/examples/modelservice-resnet50.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ms v1alpha1.ModelService
	if err := yaml.UnmarshalStrict(raw, &ms); err != nil {
		t.Fatal(err)
	}
	ms.Namespace = "default"
	r, err := Resolve(&ms, defaultCatalog(t), DefaultDefaults)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Policy().SaturationThreshold; got != 0.96 {
		t.Errorf("example's saturation threshold %v, want 0.96 (ResNet-50 on T4 and V100 at RT_max 400 ms, SL_min 98 %%)", got)
	}
}
