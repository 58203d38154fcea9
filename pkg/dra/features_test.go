package dra

import (
	"testing"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	plfeature "k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
)

// AllocatorFeatures is kube-scheduler's own allocator feature set for the
// same gates: at their defaults and with each gate it reads flipped (gates
// locked to their default cannot be).
func TestAllocatorFeaturesAreUpstreams(t *testing.T) {
	gates := []featuregate.Feature{GateDRAAdminAccess, GateDRAConsumableCapacity, GateDRADeviceBindingConditions, GateDRADeviceTaints,
		GateDRAListTypeAttributes, GateDRAPartitionableDevices, GateDRAPrioritizedList, GateDRAResourceClaimDeviceStatus}
	check := func(what string, g featuregate.FeatureGate) {
		t.Helper()
		want := dynamicresources.AllocatorFeatures(plfeature.NewSchedulerFeaturesFromGates(g))
		if got := AllocatorFeatures(g); got != want {
			t.Errorf("%s: AllocatorFeatures %+v, kube-scheduler's %+v", what, got, want)
		}
	}
	check("defaults", utilfeature.DefaultFeatureGate)
	for _, f := range gates {
		g := utilfeature.DefaultMutableFeatureGate.DeepCopy()
		if err := g.SetFromMap(map[string]bool{string(f): !g.Enabled(f)}); err != nil {
			continue // locked to its default
		}
		check(string(f)+" flipped", g)
	}
	if got := AllocatorFeatures(featuregate.NewFeatureGate()); got.ConsumableCapacity || got.DeviceTaints {
		t.Errorf("a gate without the DRA gates: %+v, want all off", got)
	}
}
