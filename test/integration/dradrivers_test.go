package integration

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/internal/sim/dradriver"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/catalog"
)

// driverFixture reads pkg/dra/testdata/drivers/<name>.yaml, the
// ResourceSlices NVIDIA's DRA driver publishes (written from its source),
// for node: its node name and pool renamed, its owner reference (to the
// fixture's node UID) dropped; shared marks every device
// allowMultipleAllocations, as the consumable modes publish them.
func driverFixture(t *testing.T, name, node string, shared bool) []*resourceapi.ResourceSlice {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "pkg", "dra", "testdata", "drivers", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []*resourceapi.ResourceSlice
	for i, doc := range bytes.Split(raw, []byte("\n---")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		s := &resourceapi.ResourceSlice{}
		if err := yaml.UnmarshalStrict(doc, s); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s.ObjectMeta = metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-%d", node, name, i)}
		s.Spec.NodeName, s.Spec.Pool.Name = ptr.To(node), node
		for k := range s.Spec.Devices {
			if shared {
				s.Spec.Devices[k].AllowMultipleAllocations = ptr.To(true)
			}
		}
		out = append(out, s)
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
