package dra

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// ReservedPods keeps the reservedFor pods found with the UID reservedFor
// names, and no consumer of another kind; AllocatedDevices and Position
// find the GPU an allocation names among a node's devices.
func TestLookups(t *testing.T) {
	c := allocated(claim("c", "4Gi"), "n1", "gpu-1", "4Gi")
	c.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{
		{Resource: "pods", Name: "same", UID: "same-uid"},
		{Resource: "pods", Name: "recreated", UID: "old-uid"},
		{Resource: "pods", Name: "gone", UID: "gone-uid"},
		{APIGroup: "batch", Resource: "jobs", Name: "same", UID: "same-uid"},
	}
	pods := map[string]*v1.Pod{
		"same":      {ObjectMeta: metav1.ObjectMeta{Name: "same", Namespace: "default", UID: "same-uid"}},
		"recreated": {ObjectMeta: metav1.ObjectMeta{Name: "recreated", Namespace: "default", UID: "new-uid"}},
	}
	got := ReservedPods(c, func(_, name string) (*v1.Pod, error) {
		if p, ok := pods[name]; ok {
			return p, nil
		}
		return nil, errors.New("not found")
	})
	var names []string
	for _, p := range got {
		names = append(names, p.Name)
	}
	if len(names) != 1 || names[0] != "same" {
		t.Errorf("ReservedPods = %v, want only pod same", names)
	}
	nodes := Inventory([]*resourceapi.ResourceSlice{slice("n1", 1, device("gpu-0", 0, "16Gi", true), device("gpu-1", 1, "16Gi", true))}, NVIDIA)
	keys := AllocatedDevices(c, v1alpha1.DRADriver)
	if len(keys) != 1 {
		t.Fatalf("AllocatedDevices = %v, want gpu-1", keys)
	}
	if i, ok := nodes["n1"].Position(keys[0]); !ok || nodes["n1"].Devices[i].Name != "gpu-1" {
		t.Errorf("Position(%s) = %d, %v; want gpu-1's", keys[0], i, ok)
	}
	if _, ok := nodes["n1"].Position(DeviceKey{Driver: "other", Pool: "n1", Device: "gpu-1"}); ok {
		t.Errorf("Position found a device of another driver")
	}
}

// TestPodGPUByUUID: a device NVIDIA's driver publishes has a uuid and no
// index attribute: the pod's GPU is named by its UUID (index -1); with
// both, both are read; with neither, it is an error.
func TestPodGPUByUUID(t *testing.T) {
	withUUID := func(d resourceapi.Device, uuid string, keepIndex bool) resourceapi.Device {
		if !keepIndex {
			delete(d.Attributes, AttributeIndex)
		}
		if uuid != "" {
			d.Attributes[AttributeUUID] = resourceapi.DeviceAttribute{StringValue: &uuid}
		}
		return d
	}
	slices := []*resourceapi.ResourceSlice{slice("n1", 1,
		withUUID(device("gpu-0", 0, "16Gi", true), "GPU-aaa", false),
		withUUID(device("gpu-1", 1, "16Gi", true), "GPU-bbb", true),
		withUUID(device("gpu-2", 2, "16Gi", true), "", false))}
	for dev, want := range map[string]GPUID{"gpu-0": {Index: -1, UUID: "GPU-aaa"}, "gpu-1": {Index: 1, UUID: "GPU-bbb"}} {
		got, err := PublishedGPU(slices, "n1", DeviceKey{Driver: v1alpha1.DRADriver, Pool: "n1", Device: dev})
		if err != nil || got != want {
			t.Errorf("%s: %+v, %v; want %+v", dev, got, err, want)
		}
	}
	if _, err := PublishedGPU(slices, "n1", DeviceKey{Driver: v1alpha1.DRADriver, Pool: "n1", Device: "gpu-2"}); err == nil {
		t.Error("a device with neither uuid nor index: no error")
	}
}
