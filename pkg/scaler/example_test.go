package scaler

import (
	"os"
	"strings"
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

// TestMaxBatchDelayLowersTheModelThreshold: a server that waits up to
// spec.maxBatchDelayMs for a batch adds that wait to the SLO latency
// model, so SSD on T4 and V100 at RT_max 900 ms (0.93 without a delay:
// queueing 728 + batch 106 ms on the T4) gets a lower threshold with
// TorchServe's default 100 ms, and an out-of-range delay is refused with
// its field.
func TestMaxBatchDelayLowersTheModelThreshold(t *testing.T) {
	cat := defaultCatalog(t)
	ssd := func(delay float64) *v1alpha1.ModelService {
		ms := resnet()
		ms.Spec.Model, ms.Spec.BatchSize, ms.Spec.SLO.ResponseTimeMs = "ssd-resnet50", 4, 900
		ms.Spec.Scaling.SaturationThreshold = 0
		ms.Spec.Profiles[0].ThroughputRPS, ms.Spec.Profiles[0].LatencyMs = 37.71, 106.21 // T4
		ms.Spec.Profiles[1].ThroughputRPS, ms.Spec.Profiles[1].LatencyMs = 55.41, 72.19  // V100-32GB
		ms.Spec.MaxBatchDelayMs = delay
		return ms
	}
	threshold := func(delay float64) float64 {
		r, err := Resolve(ssd(delay), cat, DefaultDefaults)
		if err != nil {
			t.Fatal(err)
		}
		return r.Policy().SaturationThreshold
	}
	if got := threshold(0); got != 0.93 {
		t.Fatalf("no delay: threshold %v, want 0.93", got)
	}
	if got := threshold(100); !(got < 0.93) || got < 0.3 {
		t.Errorf("100 ms delay: threshold %v, want below 0.93", got)
	}
	if _, err := Resolve(ssd(-1), cat, DefaultDefaults); err == nil || !strings.Contains(err.Error(), "spec.maxBatchDelayMs") {
		t.Errorf("negative delay: %v, want an error naming spec.maxBatchDelayMs", err)
	}
}
