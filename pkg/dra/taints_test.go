package dra

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// A GPU the driver taints NoSchedule (unhealthy) gets no share under the
// scheduler's default feature gates (DRADeviceTaints is on in 1.36):
// hetsev's device choice drops it and the allocator refuses it; a claim
// whose request tolerates the taint gets it from both. A taint with
// effect None restricts nothing.
func TestTaintedGPUGetsNoShare(t *testing.T) {
	ctx := context.Background()
	gates := utilfeature.DefaultFeatureGate
	features := AllocatorFeatures(gates)
	if !features.DeviceTaints || !features.ConsumableCapacity {
		t.Errorf("default allocator features %+v, want DeviceTaints and ConsumableCapacity on", features)
	}
	s := slice("n1", 1, device("gpu-0", 0, "16Gi", true), device("gpu-1", 1, "16Gi", true), device("gpu-2", 2, "16Gi", true))
	unhealthy := resourceapi.DeviceTaint{Key: "gpu.nvidia.com/unhealthy", Value: "xid-79", Effect: resourceapi.DeviceTaintEffectNoSchedule}
	s.Spec.Devices[0].Taints = []resourceapi.DeviceTaint{unhealthy}
	s.Spec.Devices[2].Taints = []resourceapi.DeviceTaint{{Key: "gpu.nvidia.com/note", Effect: resourceapi.DeviceTaintEffectNone}}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	classes := classList{&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.DeviceClassName}}}
	empty := structured.AllocatedState{AllocatedDevices: sets.New[structured.DeviceID](), AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](), AggregatedCapacity: structured.NewConsumedCapacityCollection()}
	gpu0 := Inventory([]*resourceapi.ResourceSlice{s}, NVIDIA)["n1"].Devices[0]

	plain := claim("c", "4Gi")
	nodes := Inventory([]*resourceapi.ResourceSlice{s}, NVIDIA)
	SelectTolerated(nodes, RequestTolerations(plain, v1alpha1.ClaimRequestName))
	n := nodes["n1"]
	if len(n.Devices) != 2 || n.Devices[0].Name != "gpu-1" || n.Devices[1].Name != "gpu-2" {
		t.Errorf("devices offered %v, want [gpu-1 gpu-2] (gpu-0 is tainted NoSchedule)", deviceNames(n.Devices))
	}
	if len(n.Unusable) != 1 || n.Unusable[0].Device != "gpu-0" || !strings.Contains(n.Unusable[0].Reason, "gpu.nvidia.com/unhealthy=xid-79:NoSchedule") {
		t.Errorf("unusable %+v, want gpu-0 with its taint", n.Unusable)
	}
	if a, err := Allocate(ctx, features, empty, classes, NewCELCache(gates), node, gpu0, plain); err == nil {
		t.Errorf("claim without toleration allocated on tainted gpu-0: %+v", a.Devices.Results)
	}

	tolerant := plain.DeepCopy()
	tolerant.Spec.Devices.Requests[0].Exactly.Tolerations = []resourceapi.DeviceToleration{{Key: unhealthy.Key, Operator: resourceapi.DeviceTolerationOpExists, Effect: resourceapi.DeviceTaintEffectNoSchedule}}
	nodes = Inventory([]*resourceapi.ResourceSlice{s}, NVIDIA)
	SelectTolerated(nodes, RequestTolerations(tolerant, v1alpha1.ClaimRequestName))
	if n := nodes["n1"]; len(n.Devices) != 3 || len(n.Unusable) != 0 {
		t.Errorf("tolerating claim: devices %v unusable %v, want all three offered", deviceNames(n.Devices), n.Unusable)
	}
	a, err := Allocate(ctx, features, empty, classes, NewCELCache(gates), node, gpu0, tolerant)
	if err != nil {
		t.Fatalf("claim tolerating the taint: %v", err)
	}
	if r := a.Devices.Results[0]; r.Device != "gpu-0" {
		t.Errorf("tolerating claim allocated on %s, want gpu-0", r.Device)
	}
}

func deviceNames(ds []Device) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Name)
	}
	return out
}
