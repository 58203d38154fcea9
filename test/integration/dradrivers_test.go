package integration

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/internal/sim/dradriver"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/catalog"
	"github.com/hetsev/hetsev/pkg/dra"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// driverFixture reads pkg/dra/testdata/drivers/<name>.yaml, the
// ResourceSlices NVIDIA's DRA driver publishes (written from its source),
// for node: its node name and pool renamed, its owner reference (to the
// fixture's node UID) dropped; shared marks every device
// allowMultipleAllocations, as the consumable modes publish them.
func driverFixture(t *testing.T, name, node string, shared bool) []*resourceapi.ResourceSlice {
	t.Helper()
	out, err := dradriver.Fixture(filepath.Join("..", ".."), name)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range out {
		s.ObjectMeta = metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-%d", node, name, i)}
		s.Spec.NodeName, s.Spec.Pool.Name = ptr.To(node), node
		for k := range s.Spec.Devices {
			if shared {
				s.Spec.Devices[k].AllowMultipleAllocations = ptr.To(true)
			}
		}
	}
	return out
}

// TestDRARealDriverSlices replays NVIDIA's driver's slices through a real
// API server and hetsev-scheduler, with the shipped DeviceClass: in integer-shares mode (4 shares a
// GPU), eight claims of 1 GiB go on the node's two T4s, four each, and the
// ninth stays Pending for want of a share though memory is left; a node of
// MIG devices takes no hetsev claim; on a node whose health check tainted
// one GPU, claims go to the other.
func TestDRARealDriverSlices(t *testing.T) {
	cp, ctx := controlPlane(t)
	cat, err := catalog.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	t4, _ := cat.ByName("T4")
	a100, _ := cat.ByName("A100")
	if _, err := cluster.CreateNodes(ctx, cp.Client, []cluster.NodeGroup{
		{Prefix: "shares-", Count: 1, GPUType: t4, GPUsPerNode: 2, CPUs: 40, MemoryGiB: 62},
		{Prefix: "taint-", Count: 1, GPUType: t4, GPUsPerNode: 2, CPUs: 40, MemoryGiB: 62},
		{Prefix: "mig-", Count: 1, GPUType: a100, GPUsPerNode: 1, CPUs: 40, MemoryGiB: 62},
	}); err != nil {
		t.Fatal(err)
	}
	var slices []*resourceapi.ResourceSlice
	slices = append(slices, driverFixture(t, "nvidia-consumable-shares", "shares-0", false)...)
	slices = append(slices, driverFixture(t, "nvidia-taint", "taint-0", true)...)
	slices = append(slices, driverFixture(t, "nvidia-mig", "mig-0", false)...)
	for _, s := range slices {
		if _, err := cp.Client.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatalf("publishing %s: %v", s.Name, err)
		}
	}
	class, err := dradriver.ShippedDeviceClass(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Client.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	startDRAScheduler(ctx, t, cp)

	perDevice := map[string]int{}
	for i := range 8 {
		name := fmt.Sprintf("s%d", i)
		draPod(ctx, t, cp.Client, v1alpha1.SchedulerName, name, fmt.Sprintf("model-%d", i), "1Gi", onNode("shares-0"))
		pl := waitPlaced(ctx, t, cp.Client, name)
		perDevice[pl.device]++
	}
	if perDevice["gpu-0"] != 4 || perDevice["gpu-1"] != 4 {
		t.Errorf("shares mode: claims per GPU %v, want 4 on each (4 shares a GPU)", perDevice)
	}
	draPod(ctx, t, cp.Client, v1alpha1.SchedulerName, "s8", "model-8", "1Gi", onNode("shares-0"))
	waitPending(ctx, t, cp.Client, "s8", "room for another claim")

	draPod(ctx, t, cp.Client, v1alpha1.SchedulerName, "m0", "model-m", "1Gi", onNode("mig-0"))
	waitPending(ctx, t, cp.Client, "m0", "not a full GPU")

	for i := range 2 {
		name := fmt.Sprintf("t%d", i)
		draPod(ctx, t, cp.Client, v1alpha1.SchedulerName, name, fmt.Sprintf("model-t%d", i), "1Gi", onNode("taint-0"))
		if pl := waitPlaced(ctx, t, cp.Client, name); pl.device != "gpu-1" {
			t.Errorf("pod %s on %s of taint-0, want gpu-1 (gpu-0 is tainted gpu.nvidia.com/xid)", name, pl.device)
		}
	}
}

// TestDRAHAMiDriverSlices replays HAMi's driver's slices through a real
// API server and hetsev-scheduler configured with the hami profile
// (draDriver: hami), its DeviceClass from that profile and the claims
// hetsev-scaler writes for it (memory and cores 0): six instances of 5 GiB
// share the node's two T4s (15 GiB each), three on each, every claim
// consuming 0 cores, so none is charged the whole GPU; the seventh stays
// Pending for want of GPU memory. The allocator's records never exceed a
// GPU's memory.
func TestDRAHAMiDriverSlices(t *testing.T) {
	cp, ctx := controlPlane(t)
	hami, err := dra.Profile(dra.ProfileHAMi)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	t4, _ := cat.ByName("T4")
	if _, err := cluster.CreateNodes(ctx, cp.Client, []cluster.NodeGroup{
		{Prefix: "hami-", Count: 1, GPUType: t4, GPUsPerNode: 2, CPUs: 40, MemoryGiB: 62},
	}); err != nil {
		t.Fatal(err)
	}
	for _, s := range driverFixture(t, "hami", "hami-0", false) {
		if _, err := cp.Client.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatalf("publishing %s: %v", s.Name, err)
		}
	}
	class := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.DeviceClassName},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: hami.DeviceClassSelector()}}}}}
	if _, err := cp.Client.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := draSchedulerConfig(t, cp.Kubeconfig)
	if !strings.Contains(cfg, "gpuMode: dra\n") {
		t.Fatal("the DRA scheduler config sets no gpuMode: dra")
	}
	cfg = strings.Replace(cfg, "gpuMode: dra\n", "gpuMode: dra\n          draDriver: hami\n", 1)
	sched, err := cluster.StartSchedulerWithConfig(ctx, cp, v1alpha1.SchedulerName, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sched.Stop(5 * time.Second)
		if t.Failed() {
			t.Logf("--- last lines of hetsev-scheduler ---\n%s", sched.Tail(80))
		}
	})

	pod := func(name string) {
		claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name + "-gpu", Namespace: "default"},
			Spec: gpuinventory.GPUClaimSpec(5*1024, hami.ClaimRequests)}
		if _, err := cp.Client.ResourceV1().ResourceClaims("default").Create(ctx, claim, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		draPod(ctx, t, cp.Client, v1alpha1.SchedulerName, name, "model-"+name, "5Gi", onNode("hami-0"))
	}
	perDevice := map[string]int{}
	for i := range 6 {
		name := fmt.Sprintf("h%d", i)
		pod(name)
		pl := waitPlaced(ctx, t, cp.Client, name)
		perDevice[pl.device]++
		c, err := cp.Client.ResourceV1().ResourceClaims("default").Get(ctx, name+"-gpu", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := c.Status.Allocation.Devices.Results[0].ConsumedCapacity
		mem := got[v1alpha1.DRAMemoryCapacity]
		if cores, ok := got["cores"]; !ok || !cores.IsZero() || mem.Value() != 5<<30 {
			t.Errorf("claim of %s consumed %v, want cores 0 and 5Gi of memory", name, got)
		}
	}
	if perDevice["hami-gpu-0"] != 3 || perDevice["hami-gpu-1"] != 3 {
		t.Errorf("instances per GPU %v, want 3 on each T4", perDevice)
	}
	pod("h6")
	waitPending(ctx, t, cp.Client, "h6", "")
	for dev, b := range checkDRAAllocations(ctx, t, cp.Client) {
		if b > 15<<30 {
			t.Errorf("%s holds %d bytes of claims, over its 15 GiB", dev, b)
		}
	}
}
