package dra

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// driverSlices reads the ResourceSlices of testdata/drivers/<name>.yaml:
// what NVIDIA's and HAMi's DRA drivers publish, written from their
// sources (each file's header names them and what is filled in).
func driverSlices(t *testing.T, name string) []*resourceapi.ResourceSlice {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "drivers", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []*resourceapi.ResourceSlice
	for _, doc := range bytes.Split(raw, []byte("\n---")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		s := &resourceapi.ResourceSlice{}
		if err := yaml.UnmarshalStrict(doc, s); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if s.Kind != "" && s.Kind != "ResourceSlice" {
			continue
		}
		out = append(out, s)
	}
	return out
}

// hamiWithoutRequests is HAMi's driver read without its profile's claim
// requests: every claim charged the cores' default.
var hamiWithoutRequests = Driver{Name: DriverHAMi, GPUType: TypeHAMiGPU}

func hami(t *testing.T) Driver {
	t.Helper()
	d, err := Profile(ProfileHAMi)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestRealDriversSlices: what hetsev shares of what the real drivers
// publish. NVIDIA's driver in its consumable "unlimited" mode: both T4s,
// named by UUID (no index attribute: the position stands in), 15360 MiB
// each, and so in its memory mode; in its integer-shares mode too, each
// claim charged one of 4 shares (at most 4 claims a GPU). Its default
// mode (no sharing), MIG and VFIO devices: none, each with its reason. A
// GPU its health check taints NoSchedule is left out once taints apply.
// HAMi's driver under its profile: both T4s (type "hami-gpu"), each
// claim requesting and charged 0 cores; under HAMi's name without the
// profile's request, each claim charged all 100 cores; under NVIDIA's
// profile, none of it.
func TestRealDriversSlices(t *testing.T) {
	for _, c := range []struct {
		fixture   string
		driver    Driver
		shared    int
		unusable  string // in every unusable device's reason
		wantUUIDs bool
		charges   []Charge
	}{
		{"nvidia-consumable-unlimited", NVIDIA, 2, "", true, nil},
		{"nvidia-consumable-memory", NVIDIA, 2, "", true, nil},
		{"nvidia-full-gpu", NVIDIA, 0, "allowMultipleAllocations is not true", false, nil},
		{"nvidia-consumable-shares", NVIDIA, 2, "", true, []Charge{{Name: "shares", Value: 4000, PerClaim: 1000}}},
		{"nvidia-mig", NVIDIA, 0, "", false, nil},
		{"nvidia-vfio", NVIDIA, 0, "", false, nil},
		{"hami", hamiWithoutRequests, 2, "", true, []Charge{{Name: "cores", Value: 100000, PerClaim: 100000}}},
		{"hami", hami(t), 2, "", true, nil},
	} {
		nodes := Inventory(driverSlices(t, c.fixture), c.driver)
		var shared []Device
		var unusable []Unusable
		for _, nd := range nodes {
			shared = append(shared, nd.Devices...)
			unusable = append(unusable, nd.Unusable...)
		}
		if len(shared) != c.shared {
			t.Errorf("%s: %d shareable devices %v, want %d (unusable: %v)", c.fixture, len(shared), shared, c.shared, unusable)
		}
		for _, u := range unusable {
			if !strings.Contains(u.Reason, c.unusable) {
				t.Errorf("%s: %s, want a reason saying %q", c.fixture, u, c.unusable)
			}
		}
		for i, d := range shared {
			if c.wantUUIDs && (!strings.HasPrefix(d.UUID, "GPU-") || d.Index != i || d.MemoryMiB() != 15360) {
				t.Errorf("%s: device %+v, want a UUID, index %d by position and 15360 MiB", c.fixture, d, i)
			}
			if !slices.Equal(d.Charges, c.charges) {
				t.Errorf("%s: device %s charges every claim %+v, want %+v", c.fixture, d.Name, d.Charges, c.charges)
			}
		}
	}
	mig := Inventory(driverSlices(t, "nvidia-mig"), NVIDIA)
	migReasons := ""
	for _, nd := range mig {
		for _, u := range nd.Unusable {
			migReasons += u.Reason + "\n"
		}
	}
	if !strings.Contains(migReasons, `type "mig", not a full GPU`) {
		t.Errorf("MIG devices' reasons %q, want them refused as not full GPUs", migReasons)
	}
	vfio := Inventory(driverSlices(t, "nvidia-vfio"), NVIDIA)
	vfioReasons := ""
	for _, nd := range vfio {
		for _, u := range nd.Unusable {
			vfioReasons += u.Reason + "\n"
		}
	}
	if !strings.Contains(vfioReasons, `type "vfio"`) {
		t.Errorf("VFIO devices' reasons %q, want the vfio device refused by its type", vfioReasons)
	}

	// The health taint, on a shareable GPU as consumable mode publishes it.
	tainted := driverSlices(t, "nvidia-taint")
	for _, s := range tainted {
		for i := range s.Spec.Devices {
			yes := true
			s.Spec.Devices[i].AllowMultipleAllocations = &yes
		}
	}
	nodes := Inventory(tainted, NVIDIA)
	before := 0
	for _, nd := range nodes {
		before += len(nd.Devices)
	}
	SelectUsable(context.Background(), nodes, &resourceapi.DeviceClass{}, v1alpha1.DeviceClassName, DefaultCELCache(), true, nil)
	after := 0
	for _, nd := range nodes {
		after += len(nd.Devices)
		for _, u := range nd.Unusable {
			if !strings.Contains(u.Reason, "taint gpu.nvidia.com/xid=") {
				t.Errorf("tainted fixture: %s, want the xid taint", u)
			}
		}
	}
	if before != 2 || after != 1 {
		t.Errorf("health taint: %d devices before, %d after taints; want 2 and 1", before, after)
	}

	if hami := Inventory(driverSlices(t, "hami"), NVIDIA); len(hami) != 0 {
		t.Errorf("HAMi's slices under %s: %v, want none (another driver)", v1alpha1.DRADriver, hami)
	}
}
