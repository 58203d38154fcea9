package draplugin

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/hetsev/hetsev/internal/sim/dradriver"
	"github.com/hetsev/hetsev/pkg/dra"
)

func TestDriverResourcesHoldTheSliceDevices(t *testing.T) {
	slice := dradriver.Slice("node1", v100, 3)
	res := DriverResources(slice)
	if len(res.Pools) != 1 {
		t.Fatalf("pools %v, want one, node1", res.Pools)
	}
	pool, ok := res.Pools["node1"]
	if !ok || len(pool.Slices) != 1 {
		t.Fatalf("pools %+v, want pool node1 with one slice", res.Pools)
	}
	if got := pool.Slices[0].Devices; !equality.Semantic.DeepEqual(got, dradriver.Slice("node1", v100, 3).Spec.Devices) {
		t.Errorf("devices %+v, want dradriver.Slice's %+v", got, slice.Spec.Devices)
	}
	// The published devices are copies: the plugin's slice stays as built.
	*pool.Slices[0].Devices[0].Attributes[dra.AttributeUUID].StringValue = "GPU-changed"
	if got := *slice.Spec.Devices[0].Attributes[dra.AttributeUUID].StringValue; got != dradriver.UUID("node1", 0) {
		t.Errorf("changing a published device changed the slice's gpu-0 uuid to %s", got)
	}
}
