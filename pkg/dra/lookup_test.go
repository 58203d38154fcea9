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
	nodes := Inventory([]*resourceapi.ResourceSlice{slice("n1", 1, device("gpu-0", 0, "16Gi", true), device("gpu-1", 1, "16Gi", true))}, v1alpha1.DRADriver)
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
