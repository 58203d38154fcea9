package dra

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// The profiles and their overrides; bad configuration is an error that
// names what is wrong.
func TestDriverConfig(t *testing.T) {
	for _, c := range []struct {
		cfg     DriverConfig
		name    string
		gpuType string
		cores   string // the claims' cores request, "" for none
		err     string
	}{
		{DriverConfig{}, "gpu.nvidia.com", "gpu", "", ""},
		{DriverConfig{Profile: "hami"}, "hami-core-gpu.project-hami.io", "hami-gpu", "0", ""},
		{DriverConfig{Profile: "hami", ClaimRequests: "cores=30"}, "hami-core-gpu.project-hami.io", "hami-gpu", "30", ""},
		{DriverConfig{Profile: "hami", ClaimRequests: "-"}, "hami-core-gpu.project-hami.io", "hami-gpu", "", ""},
		{DriverConfig{Name: "gpu.example.com", GPUType: "full"}, "gpu.example.com", "full", "", ""},
		{DriverConfig{Profile: "amd"}, "", "", "", `unknown DRA driver profile "amd"`},
		{DriverConfig{Name: "Not_A_Name"}, "", "", "", `DRA driver name "Not_A_Name"`},
		{DriverConfig{ClaimRequests: "memory=1Gi"}, "", "", "", `capacity "memory" is set per instance`},
		{DriverConfig{ClaimRequests: "cores"}, "", "", "", "want capacity=quantity"},
		{DriverConfig{ClaimRequests: "cores=lots"}, "", "", "", `"cores=lots"`},
		{DriverConfig{ClaimRequests: "cores=-1"}, "", "", "", "negative"},
		{DriverConfig{ClaimRequests: "cores=1,cores=2"}, "", "", "", "named twice"},
	} {
		d, err := c.cfg.Driver()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%+v: error %v, want one saying %q", c.cfg, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%+v: %v", c.cfg, err)
		}
		q, ok := d.ClaimRequests["cores"]
		got := ""
		if ok {
			got = q.String()
		}
		if d.Name != c.name || d.GPUType != c.gpuType || got != c.cores || len(d.ClaimRequests) > 1 {
			t.Errorf("%+v: %s, want %s type %q cores %q", c.cfg, d, c.name, c.gpuType, c.cores)
		}
	}
}

// A claim request is consumed by the allocator's rounding rule: up to the
// range's minimum, then to its step; to the next valid value; as asked
// without a policy.
func TestConsumedOfRoundsLikeTheAllocator(t *testing.T) {
	q := resource.MustParse
	rng := &resourceapi.CapacityRequestPolicy{ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: ptr.To(q("10")), Step: ptr.To(q("4"))}}
	vals := &resourceapi.CapacityRequestPolicy{ValidValues: []resource.Quantity{q("1"), q("8")}}
	for _, c := range []struct {
		req    string
		policy *resourceapi.CapacityRequestPolicy
		want   int64
	}{
		{"3", nil, 3}, {"3", rng, 10}, {"10", rng, 10}, {"11", rng, 14}, {"14", rng, 14},
		{"0", vals, 1}, {"2", vals, 8}, {"9", vals, 9},
	} {
		got := consumedOf(q(c.req), c.policy)
		if got.Value() != c.want {
			t.Errorf("request %s under %+v: consumes %s, want %d", c.req, c.policy, got.String(), c.want)
		}
	}
}

// A device that lacks a capacity the driver's claims request is skipped
// with the reason: the allocator would find it no match.
func TestDeviceWithoutARequestedCapacityIsSkipped(t *testing.T) {
	d := NVIDIA
	d.ClaimRequests = map[resourceapi.QualifiedName]resource.Quantity{"cores": resource.MustParse("0")}
	nd := Inventory([]*resourceapi.ResourceSlice{slice("n1", 1, device("gpu-0", 0, "16Gi", true))}, d)["n1"]
	if len(nd.Devices) != 0 || len(nd.Unusable) != 1 || !strings.Contains(nd.Unusable[0].Reason, `no capacity "cores"`) {
		t.Errorf("device without cores under claims requesting cores: %+v, want it unusable, naming the capacity", nd)
	}
}

// The shipped DeviceClass selects with NVIDIA's DeviceClassSelector.
func TestShippedDeviceClassIsNVIDIAsSelector(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "manifests", "dra", "deviceclass.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	class := &resourceapi.DeviceClass{}
	if err := yaml.Unmarshal(raw, class); err != nil {
		t.Fatal(err)
	}
	if len(class.Spec.Selectors) != 1 || class.Spec.Selectors[0].CEL == nil || class.Spec.Selectors[0].CEL.Expression != NVIDIA.DeviceClassSelector() {
		t.Errorf("manifests/dra/deviceclass.yaml selects %+v, want %q", class.Spec.Selectors, NVIDIA.DeviceClassSelector())
	}
}

// Without an index attribute a node's GPUs take their position in name
// order, numbers as numbers: gpu-10 after gpu-9.
func TestPositionsFollowNumberedNames(t *testing.T) {
	var devs []resourceapi.Device
	for _, n := range []string{"gpu-10", "gpu-2", "gpu-0", "gpu-11", "gpu-1"} {
		devs = append(devs, device(n, -1, "16Gi", true))
	}
	nd := Inventory([]*resourceapi.ResourceSlice{slice("n1", 1, devs...)}, NVIDIA)["n1"]
	var got []string
	for i, d := range nd.Devices {
		if d.Index != i {
			t.Errorf("%s has index %d at position %d", d.Name, d.Index, i)
		}
		got = append(got, d.Name)
	}
	if want := "gpu-0 gpu-1 gpu-2 gpu-10 gpu-11"; strings.Join(got, " ") != want {
		t.Errorf("order %v, want %s", got, want)
	}
}
