package dra

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/placement"
)

// Capacity parity: over the real drivers' slices, hetsev's admission of a
// memory-only claim on a device (its occupancy from the allocated claims,
// placement.Placer.Admit) says yes exactly when the structured allocator
// allocates it, claim after claim until the device is full: NVIDIA's
// unlimited and memory modes (memory alone), its shares mode (4 claims at
// most, whatever their memory) and HAMi's, under its profile (claims
// request 0 cores: memory alone) and without the profile's request (100
// cores charged to every claim: one claim per GPU).
func TestCapacityParityWithTheAllocator(t *testing.T) {
	ctx := context.Background()
	features := AllocatorFeatures(utilfeature.DefaultFeatureGate)
	cache := NewCELCache(utilfeature.DefaultFeatureGate)
	classes := classList{&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.DeviceClassName}}}
	for _, c := range []struct {
		fixture   string
		driver    Driver
		maxClaims int // the most claims the device took: the charged capacity's bound, else 0
	}{
		{"nvidia-consumable-unlimited", NVIDIA, 0},
		{"nvidia-consumable-memory", NVIDIA, 0},
		{"nvidia-consumable-shares", NVIDIA, 4},
		{"hami", hamiWithoutRequests, 1},
		{"hami", hami(t), 0},
	} {
		t.Run(c.fixture+"/"+c.driver.String(), func(t *testing.T) {
			var nd *NodeDevices
			for _, n := range Inventory(driverSlices(t, c.fixture), c.driver) {
				if len(n.Devices) > 0 {
					nd = n
				}
			}
			if nd == nil {
				t.Fatalf("no shareable device")
			}
			node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nd.Node}}
			rng := rand.New(rand.NewPCG(7, uint64(len(c.fixture))))
			for trial := range 20 {
				state := structured.AllocatedState{AllocatedDevices: sets.New[structured.DeviceID](), AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](), AggregatedCapacity: structured.NewConsumedCapacityCollection()}
				var claims []*resourceapi.ResourceClaim
				refusals := 0
				for step := range 30 {
					dev := nd.Devices[rng.IntN(len(nd.Devices))]
					mem := int64(256 * (1 + rng.IntN(24))) // MiB
					usages := Usages(claims, c.driver.Name)
					occ, _, _ := nd.Occupancy(usages, func(*resourceapi.ResourceClaim) []*v1.Pod { return nil })
					pos, _ := nd.Position(dev.Key())
					admits := placement.Placer{}.Admit(occ.GPUs[pos], gpuinventory.Demand{MemoryMiB: mem}) == nil
					cl := claim(fmt.Sprintf("t%d-c%d", trial, step), fmt.Sprintf("%dMi", mem))
					maps.Copy(cl.Spec.Devices.Requests[0].Exactly.Capacity.Requests, c.driver.ClaimRequests)
					alloc, err := Allocate(ctx, features, state, classes, cache, node, dev, cl)
					if admits != (err == nil) {
						t.Fatalf("trial %d, claim %d of %d MiB on %s (%d claims there, %d MiB free): hetsev admits %v, the allocator: %v",
							trial, step, mem, dev.Name, len(usages[dev.Key()]), occ.GPUs[pos].FreeMiB(), admits, err)
					}
					if err != nil {
						refusals++
						continue
					}
					cl.Status.Allocation = alloc
					claims = append(claims, cl)
					for _, r := range alloc.Devices.Results {
						id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
						state.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, r.ShareID))
						state.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity))
					}
				}
				most := 0
				for _, u := range Usages(claims, c.driver.Name) {
					most = max(most, len(u))
				}
				if refusals == 0 || (c.maxClaims > 0 && most != c.maxClaims) {
					t.Errorf("trial %d: %d refusals, at most %d claims on a device; want refusals and, for a charged capacity, %d claims", trial, refusals, most, c.maxClaims)
				}
			}
		})
	}
}

// A GPU whose allocated claim carries the driver's own configuration (a
// GpuConfig with a time-slicing strategy, say) takes no hetsev claim: the
// driver would refuse to prepare one beside it. A configuration for
// another driver, or for a request that got another device, changes
// nothing. Partitionable devices (DynamicMIG's counters) are refused.
func TestDriverConfigurationsAndCountersKeepHetsevOff(t *testing.T) {
	nodes := Inventory([]*resourceapi.ResourceSlice{slice("n1", 1, device("gpu-0", 0, "16Gi", true))}, NVIDIA)
	nd := nodes["n1"]
	withConfig := func(driver string, requests ...string) *resourceapi.ResourceClaim {
		c := allocated(claim("other", "2Gi"), "n1", "gpu-0", "2Gi")
		c.Status.Allocation.Devices.Config = []resourceapi.DeviceAllocationConfiguration{{Source: resourceapi.AllocationConfigSourceClaim, Requests: requests,
			DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: driver, Parameters: runtime.RawExtension{Raw: []byte(`{"kind":"GpuConfig"}`)}}}}}
		return c
	}
	for _, c := range []struct {
		name  string
		claim *resourceapi.ResourceClaim
		room  bool
	}{
		{"NVIDIA's config for every request", withConfig(v1alpha1.DRADriver), false},
		{"NVIDIA's config for the GPU request", withConfig(v1alpha1.DRADriver, v1alpha1.ClaimRequestName), false},
		{"NVIDIA's config for another request", withConfig(v1alpha1.DRADriver, "nic"), true},
		{"another driver's config", withConfig("nic.example.com"), true},
	} {
		occ, _, issues := nd.Occupancy(Usages([]*resourceapi.ResourceClaim{c.claim}, v1alpha1.DRADriver), func(*resourceapi.ResourceClaim) []*v1.Pod { return nil })
		if got := occ.GPUs[0].HasRoom(); got != c.room || (!c.room && (len(issues) != 1 || !strings.Contains(issues[0].What, "own configuration"))) {
			t.Errorf("%s: room %v, issues %v; want room %v and, without room, an issue saying why", c.name, got, issues, c.room)
		}
	}
	d := device("gpu-0", 0, "16Gi", true)
	d.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0-counters", Counters: map[string]resourceapi.Counter{"memory": {Value: resource.MustParse("16Gi")}}}}
	nd = Inventory([]*resourceapi.ResourceSlice{slice("n1", 1, d)}, NVIDIA)["n1"]
	if len(nd.Devices) != 0 || len(nd.Unusable) != 1 || !strings.Contains(nd.Unusable[0].Reason, "DynamicMIG") {
		t.Errorf("a device drawing on shared counters: %+v; want it unusable, naming DynamicMIG", nd)
	}
}
