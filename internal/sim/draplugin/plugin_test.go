package draplugin

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/hetsev/hetsev/internal/sim/dradriver"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/catalog"
	"github.com/hetsev/hetsev/pkg/dra"
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

// A GPU prepared for a claim under one configuration of the driver takes
// no claim under another, as NVIDIA's driver refuses to mix sharing
// configurations on a GPU; claims alike share it, another GPU is free,
// and once the first claim is unprepared the GPU takes the other.
func TestPrepareRefusesAConflictingConfiguration(t *testing.T) {
	p, _ := newPlugin(t)
	withConfig := func(c *resourceapi.ResourceClaim, params string) *resourceapi.ResourceClaim {
		c.Status.Allocation.Devices.Config = []resourceapi.DeviceAllocationConfiguration{{Source: resourceapi.AllocationConfigSourceClaim,
			DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: v1alpha1.DRADriver, Parameters: runtime.RawExtension{Raw: []byte(params)}}}}}
		return c
	}
	ctx := context.Background()
	prep := func(c *resourceapi.ResourceClaim) error {
		res, err := p.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c})
		if err != nil {
			t.Fatal(err)
		}
		return res[c.UID].Err
	}
	timeSliced := `{"kind":"GpuConfig","sharing":{"strategy":"TimeSlicing"}}`
	if err := prep(withConfig(claim("ts-1", [2]string{"node1", "gpu-0"}), timeSliced)); err != nil {
		t.Fatal(err)
	}
	if err := prep(withConfig(claim("ts-2", [2]string{"node1", "gpu-0"}), timeSliced)); err != nil {
		t.Errorf("a second claim with the same configuration: %v", err)
	}
	if err := prep(claim("plain-1", [2]string{"node1", "gpu-0"})); err == nil || !strings.Contains(err.Error(), "another configuration") {
		t.Errorf("a claim without the configuration on the time-sliced GPU: %v, want it refused", err)
	}
	if err := prep(claim("plain-2", [2]string{"node1", "gpu-1"})); err != nil {
		t.Errorf("a claim on another GPU: %v", err)
	}
	if _, err := p.UnprepareResourceClaims(ctx, []kubeletplugin.NamespacedObject{{UID: "ts-1"}, {UID: "ts-2"}}); err != nil {
		t.Fatal(err)
	}
	if err := prep(claim("plain-1", [2]string{"node1", "gpu-0"})); err != nil {
		t.Errorf("after the configured claims left: %v", err)
	}
}

// Standing in for HAMi's driver, the plugin prepares claims on HAMi's
// devices (hami-gpu-<n>, no index attribute: the position) under HAMi's
// driver name, and refuses claims of NVIDIA's.
func TestPrepareServesTheHAMiProfile(t *testing.T) {
	dir := t.TempDir()
	s, err := dradriver.ProfileSlice(dra.ProfileHAMi, "node1", v100, 3)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(s, dir)
	if err != nil {
		t.Fatal(err)
	}
	c := claim("h-1", [2]string{"node1", "hami-gpu-2"})
	c.Status.Allocation.Devices.Results[0].Driver = dra.DriverHAMi
	nv := claim("n-1", [2]string{"node1", "gpu-2"})
	res, err := p.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{c, nv})
	if err != nil {
		t.Fatal(err)
	}
	if r := res["h-1"]; r.Err != nil || len(r.Devices) != 1 || r.Devices[0].CDIDeviceIDs[0] != dra.DriverHAMi+"/claim=h-1" {
		t.Errorf("HAMi claim: %+v", r)
	}
	b, err := os.ReadFile(SpecFile(dir, dra.DriverHAMi, "h-1"))
	if err != nil || !strings.Contains(string(b), "NVIDIA_VISIBLE_DEVICES=2") {
		t.Errorf("HAMi claim's CDI spec %s (%v), want NVIDIA_VISIBLE_DEVICES=2", b, err)
	}
	if res["n-1"].Err == nil {
		t.Error("a claim of NVIDIA's driver was prepared by HAMi's stand-in")
	}
}
