package dradriver

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/catalog"
	"github.com/hetsev/hetsev/pkg/dra"
)

// The stand-ins publish what the drivers publish (pkg/dra/testdata/
// drivers, written from their sources) for two T4s: NVIDIA's in its memory
// mode (nvidia-consumable-memory.yaml), HAMi's in its default mode
// (hami.yaml): the same driver, pool per node, device names, the
// attributes hetsev reads (productName "Tesla T4", uuid, type) and no
// attribute the driver lacks (no index), allowMultipleAllocations, and
// the same capacities with the same request policies (a claim asking for
// none takes all of a capacity; memory requests in steps of 1Mi up to all
// of it). Only the memory differs: the catalog's, as Slice says.
func TestStandInsMatchTheDrivers(t *testing.T) {
	cat, err := catalog.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	t4, _ := cat.ByName("T4")
	for _, c := range []struct{ profile, fixture string }{
		{dra.ProfileNVIDIA, "nvidia-consumable-memory"},
		{dra.ProfileHAMi, "hami"},
	} {
		all, err := Fixture(filepath.Join("..", "..", ".."), c.fixture)
		if err != nil {
			t.Fatal(err)
		}
		real := all[0]
		ours, err := ProfileSlice(c.profile, *real.Spec.NodeName, t4, len(real.Spec.Devices))
		if err != nil {
			t.Fatal(err)
		}
		if ours.Spec.Driver != real.Spec.Driver || ours.Spec.Pool.Name != real.Spec.Pool.Name || len(ours.Spec.Devices) != len(real.Spec.Devices) {
			t.Fatalf("%s: slice %+v; the driver's %+v", c.profile, ours.Spec, real.Spec)
		}
		for i, d := range ours.Spec.Devices {
			r := real.Spec.Devices[i]
			if d.Name != r.Name || (d.AllowMultipleAllocations == nil) != (r.AllowMultipleAllocations == nil) {
				t.Errorf("%s: device %d: %s, allowMultipleAllocations %v; the driver's %s, %v", c.profile, i, d.Name, d.AllowMultipleAllocations, r.Name, r.AllowMultipleAllocations)
			}
			for _, a := range []resourcev1.QualifiedName{dra.AttributeProductName, dra.AttributeType} {
				if got, want := d.Attributes[a].StringValue, r.Attributes[a].StringValue; got == nil || want == nil || *got != *want {
					t.Errorf("%s: device %s: attribute %s %v, the driver's %v", c.profile, d.Name, a, got, want)
				}
			}
			if d.Attributes[dra.AttributeUUID].StringValue == nil {
				t.Errorf("%s: device %s: no uuid", c.profile, d.Name)
			}
			for a := range d.Attributes {
				if _, ok := r.Attributes[a]; !ok {
					t.Errorf("%s: device %s: attribute %s, which the driver does not publish", c.profile, d.Name, a)
				}
			}
			if got, want := slices.Sorted(maps.Keys(d.Capacity)), slices.Sorted(maps.Keys(r.Capacity)); !slices.Equal(got, want) {
				t.Errorf("%s: device %s: capacities %v, the driver's %v", c.profile, d.Name, got, want)
			}
			for name, rc := range r.Capacity {
				oc := d.Capacity[name]
				p, rp := oc.RequestPolicy, rc.RequestPolicy
				if p == nil || p.ValidRange == nil || rp == nil || rp.ValidRange == nil {
					t.Fatalf("%s: device %s: %s request policy %+v, the driver's %+v", c.profile, d.Name, name, p, rp)
				}
				// Default and maximum are the whole capacity in both; the
				// minimum and step the same quantities; cores the same
				// value.
				if p.Default.Cmp(oc.Value) != 0 || rp.Default.Cmp(rc.Value) != 0 || p.ValidRange.Max.Cmp(oc.Value) != 0 || rp.ValidRange.Max.Cmp(rc.Value) != 0 ||
					p.ValidRange.Min.Cmp(*rp.ValidRange.Min) != 0 || p.ValidRange.Step.Cmp(*rp.ValidRange.Step) != 0 ||
					(name != v1alpha1.DRAMemoryCapacity && oc.Value.Cmp(rc.Value) != 0) {
					t.Errorf("%s: device %s: %s %s with policy %+v; the driver's %s with %+v", c.profile, d.Name, name, oc.Value.String(), p, rc.Value.String(), rp)
				}
			}
		}
	}
	if _, err := ProfileSlice("amd", "n", t4, 1); err == nil {
		t.Error("an unknown profile's stand-in slice: no error")
	}
}

// The shipped DeviceClass selects the stand-in's GPUs and the driver's
// full GPUs (type "gpu"), and leaves out its MIG devices even where they
// allow multiple allocations: the class and hetsev's device view agree.
func TestShippedDeviceClassSelectsFullGPUsOnly(t *testing.T) {
	class, err := ShippedDeviceClass(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) *resourcev1.ResourceSlice {
		all, err := Fixture(filepath.Join("..", "..", ".."), name)
		if err != nil {
			t.Fatal(err)
		}
		s := all[0]
		for i := range s.Spec.Devices {
			shared := true
			s.Spec.Devices[i].AllowMultipleAllocations = &shared
		}
		return s
	}
	cat, err := catalog.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	t4, _ := cat.ByName("T4")
	for _, c := range []struct {
		name     string
		slice    *resourcev1.ResourceSlice
		selected int
	}{
		{"stand-in", Slice("n", t4, 2), 2},
		{"NVIDIA memory mode", read("nvidia-consumable-memory"), 2},
		{"NVIDIA MIG devices", read("nvidia-mig"), 0},
	} {
		// Every device as hetsev would share it, then the class's verdict.
		nd := &dra.NodeDevices{Node: "n"}
		for _, d := range c.slice.Spec.Devices {
			nd.Devices = append(nd.Devices, dra.Device{Driver: c.slice.Spec.Driver, Pool: c.slice.Spec.Pool.Name, Name: d.Name, Slice: c.slice})
		}
		nodes := map[string]*dra.NodeDevices{"n": nd}
		dra.SelectByClass(context.Background(), nodes, class, dra.DefaultCELCache())
		if got := len(nodes["n"].Devices); got != c.selected {
			t.Errorf("%s: the shipped class selects %d devices (left out: %v), want %d", c.name, got, nodes["n"].Unusable, c.selected)
		}
	}
}
