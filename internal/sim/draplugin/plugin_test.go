package draplugin

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/hetsev/hetsev/internal/sim/dradriver"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/catalog"
)

var v100 = catalog.GPUType{Name: "V100-32GB", ProductLabel: "Tesla-V100-SXM2-32GB", MemoryMiB: 32768}

// claim is a claim with uid whose allocation names the given devices of
// the driver (pool/device), one result per request "gpu-<n>".
func claim(uid string, devices ...[2]string) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "c-" + uid, UID: types.UID(uid)}}
	if devices == nil {
		return c
	}
	c.Status.Allocation = &resourceapi.AllocationResult{}
	for i, d := range devices {
		c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results, resourceapi.DeviceRequestAllocationResult{
			Request: "gpu-" + string(rune('a'+i)), Driver: v1alpha1.DRADriver, Pool: d[0], Device: d[1],
		})
	}
	return c
}

func newPlugin(t *testing.T) (*Plugin, string) {
	t.Helper()
	dir := t.TempDir()
	p, err := New(dradriver.Slice("node1", v100, 4), dir)
	if err != nil {
		t.Fatal(err)
	}
	return p, dir
}

// readEnv reads the CDI spec of uid and returns its one device's env.
func readEnv(t *testing.T, dir, uid string) []string {
	t.Helper()
	b, err := os.ReadFile(SpecFile(dir, v1alpha1.DRADriver, uid))
	if err != nil {
		t.Fatalf("CDI spec of %s: %v", uid, err)
	}
	var s cdiSpec
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("CDI spec of %s: %v\n%s", uid, err, b)
	}
	if s.Version != CDIVersion || s.Kind != "gpu.nvidia.com/claim" || len(s.Devices) != 1 || s.Devices[0].Name != uid {
		t.Fatalf("CDI spec of %s: %s, want one device %s of kind gpu.nvidia.com/claim", uid, b, uid)
	}
	return s.Devices[0].ContainerEdits.Env
}

func TestPrepareGivesTheAllocatedGPUIndex(t *testing.T) {
	p, dir := newPlugin(t)
	res, err := p.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{
		claim("uid-1", [2]string{"node1", "gpu-2"}),
		claim("uid-2", [2]string{"node1", "gpu-3"}, [2]string{"node1", "gpu-0"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"uid-1": "NVIDIA_VISIBLE_DEVICES=2", "uid-2": "NVIDIA_VISIBLE_DEVICES=0,3"}
	for uid, env := range want {
		r := res[types.UID(uid)]
		if r.Err != nil {
			t.Fatalf("%s: %v", uid, r.Err)
		}
		if got := readEnv(t, dir, uid); len(got) != 1 || got[0] != env {
			t.Errorf("%s: env %v, want [%s]", uid, got, env)
		}
		for _, d := range r.Devices {
			if len(d.CDIDeviceIDs) != 1 || d.CDIDeviceIDs[0] != "gpu.nvidia.com/claim="+uid {
				t.Errorf("%s: device %s CDI IDs %v, want [gpu.nvidia.com/claim=%s]", uid, d.DeviceName, d.CDIDeviceIDs, uid)
			}
			if d.PoolName != "node1" || len(d.Requests) != 1 {
				t.Errorf("%s: device %+v, want pool node1 and its one request", uid, d)
			}
		}
	}
	if n := len(res["uid-2"].Devices); n != 2 {
		t.Errorf("uid-2: %d devices, want 2", n)
	}
}

func TestPrepareRefusesClaimsItCannotServe(t *testing.T) {
	p, dir := newPlugin(t)
	other := claim("uid-other", [2]string{"node1", "gpu-0"})
	other.Status.Allocation.Devices.Results[0].Driver = "other.example.com"
	res, err := p.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{
		claim("uid-pending"),
		claim("uid-node2", [2]string{"node2", "gpu-0"}),
		claim("uid-gone", [2]string{"node1", "gpu-9"}),
		other,
		claim("../escape", [2]string{"node1", "gpu-0"}),
		nil,
	})
	if err != nil {
		t.Fatal(err)
	}
	for uid, want := range map[string]string{
		"uid-pending": "not allocated",
		"uid-node2":   "is not a GPU of node node1",
		"uid-gone":    "is not a GPU of node node1",
		"uid-other":   "no device of driver gpu.nvidia.com",
		"../escape":   "cannot name a CDI device",
	} {
		r, ok := res[types.UID(uid)]
		if !ok || r.Err == nil || !strings.Contains(r.Err.Error(), want) {
			t.Errorf("%s: result %+v, want an error with %q", uid, r, want)
		}
		if len(r.Devices) != 0 {
			t.Errorf("%s: devices %+v for a refused claim", uid, r.Devices)
		}
	}
	if files, _ := os.ReadDir(dir); len(files) != 0 {
		t.Errorf("refused claims left files in the CDI dir: %v", files)
	}
}

func TestUnprepareRemovesTheSpec(t *testing.T) {
	p, dir := newPlugin(t)
	ctx := context.Background()
	if res, _ := p.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{claim("uid-1", [2]string{"node1", "gpu-1"})}); res["uid-1"].Err != nil {
		t.Fatal(res["uid-1"].Err)
	}
	objs := []kubeletplugin.NamespacedObject{{UID: "uid-1", NamespacedName: types.NamespacedName{Namespace: "default", Name: "c-uid-1"}}}
	for round := range 2 { // the second: nothing left to remove, still no error
		res, err := p.UnprepareResourceClaims(ctx, objs)
		if err != nil || res["uid-1"] != nil {
			t.Fatalf("unprepare round %d: %v, %v", round, err, res["uid-1"])
		}
	}
	if _, err := os.Stat(SpecFile(dir, v1alpha1.DRADriver, "uid-1")); !os.IsNotExist(err) {
		t.Errorf("CDI spec still there after unprepare: %v", err)
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	noNode := dradriver.Slice("node1", v100, 1)
	noNode.Spec.NodeName = nil
	for name, tc := range map[string]struct {
		s   *resourceapi.ResourceSlice
		dir string
	}{
		"nil slice":  {nil, "/tmp/cdi"},
		"no node":    {noNode, "/tmp/cdi"},
		"no CDI dir": {dradriver.Slice("node1", v100, 1), ""},
	} {
		if _, err := New(tc.s, tc.dir); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
