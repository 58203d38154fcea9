package evaluate

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/dynamic-resource-allocation/structured"
	_ "k8s.io/kubernetes/pkg/features" // kube-scheduler's feature gates, at their defaults

	"github.com/hetsev/hetsev/internal/sim/trace"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/catalog"
	"github.com/hetsev/hetsev/pkg/dra"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// runMode is run with the cluster's GPU accounting in mode, decision times
// (wall clock) left out.
func runMode(t *testing.T, mode string, rates trace.Rates, cluster []NodeGroup, policy string, services ...Service) PolicyResult {
	t.Helper()
	cfg, err := Base("test", "test", rates, cluster, services...)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Policies, cfg.GPUMode = []string{policy}, mode
	r, err := Evaluate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := r.Policies[0]
	p.DecisionTimeUs = 0
	for i := range p.Services {
		p.Services[i].DecisionTimeUs = 0
	}
	return p
}

// TestGPUModesReplayAlike: GPU mode dra accounts the simulated GPUs as
// hetsev-scheduler and hetsev-scaler do in DRA mode (a ResourceSlice per
// node, an allocated ResourceClaim per instance, pkg/dra's occupancy), and
// places and bills exactly as annotation mode: a half-hour ramp that scales
// ResNet-50 and SSD out onto shared T4s (busy share 0.3 each) gives the
// same result in both modes, and one identity for both services (identical
// models may not share a GPU) leaves as many instances unplaced in both.
func TestGPUModesReplayAlike(t *testing.T) {
	ramp := make(trace.Rates, 1800)
	for i := range ramp {
		ramp[i] = float64(i) / 3
	}
	cluster := []NodeGroup{{GPUType: "T4", Nodes: 2, GPUsPerNode: 2, CPUMilli: 64000, MemoryMiB: 256 * 1024}}
	svcs := DemoServices()
	for i := range svcs {
		svcs[i].BusyShare = 0.3
	}
	ann := runMode(t, GPUModeAnnotations, ramp, cluster, PolicyExact, svcs...)
	dra := runMode(t, GPUModeDRA, ramp, cluster, PolicyExact, svcs...)
	instanceHours := ann.Services[0].InstanceHours["T4"] + ann.Services[1].InstanceHours["T4"]
	if ann.ScalingActions == 0 || ann.PeakGPUs["T4"] < 2 || !(instanceHours > ann.GPUHours["T4"]+0.1) {
		t.Fatalf("annotation mode: %d scaling actions, peak %d T4s, %.2f instance-hours on %.2f GPU-hours: the ramp should scale out onto several shared GPUs",
			ann.ScalingActions, ann.PeakGPUs["T4"], instanceHours, ann.GPUHours["T4"])
	}
	if !reflect.DeepEqual(ann, dra) {
		t.Errorf("dra mode differs from annotation mode:\n annotations: cost %.4f USD, peak %v, %d actions, services %+v\n dra:         cost %.4f USD, peak %v, %d actions, services %+v",
			ann.CostUSD, ann.PeakGPUs, ann.ScalingActions, ann.Services, dra.CostUSD, dra.PeakGPUs, dra.ScalingActions, dra.Services)
	}
	for i := range svcs {
		svcs[i].Identity = "one-model"
	}
	ann = runMode(t, GPUModeAnnotations, ramp, cluster, PolicyExact, svcs...)
	dra = runMode(t, GPUModeDRA, ramp, cluster, PolicyExact, svcs...)
	if !reflect.DeepEqual(ann, dra) {
		t.Errorf("one identity: dra mode differs from annotation mode: unplaced %d+%d vs %d+%d, cost %.4f vs %.4f USD",
			ann.Services[0].Unplaced, ann.Services[1].Unplaced, dra.Services[0].Unplaced, dra.Services[1].Unplaced, ann.CostUSD, dra.CostUSD)
	}
}

// TestDRAClaimIsWhatUpstreamAllocates: the allocation the evaluator writes
// for an instance's claim (device, consumed GPU memory) is what
// k8s.io/dynamic-resource-allocation's structured allocator, the upstream
// DynamicResources plugin's, writes for that device (dra.Allocate), so the
// replay's DRA accounting rounds as a cluster's would.
func TestDRAClaimIsWhatUpstreamAllocates(t *testing.T) {
	cat, err := catalog.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	t4, _ := cat.ByName("T4")
	n := newDRANode("n1", t4, 2)
	in := &instance{demand: gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2049, BusyShare: 0.3, MaxInflation: 2.5}}
	n.allocate(in, 1)
	if got := n.gpus(); len(got) != 2 || got[1].UsedMiB != 2049 || got[1].Models["resnet50"] != 1 || got[1].BusyShare != 0.3 || got[0].Instances != 0 {
		t.Fatalf("occupancy after one claim on GPU 1: %+v", got)
	}
	bare := in.claim.DeepCopy()
	bare.Status = resourcev1.ResourceClaimStatus{}
	classes := classList{&resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.DeviceClassName}}}
	empty := structured.AllocatedState{AllocatedDevices: sets.New[structured.DeviceID](), AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](), AggregatedCapacity: structured.NewConsumedCapacityCollection()}
	up, err := dra.Allocate(context.Background(), dra.AllocatorFeatures(utilfeature.DefaultFeatureGate), empty, classes, dra.NewCELCache(utilfeature.DefaultFeatureGate), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, n.devices.Devices[1], bare)
	if err != nil {
		t.Fatal(err)
	}
	want, got := up.Devices.Results[0], in.claim.Status.Allocation.Devices.Results[0]
	wq, gq := want.ConsumedCapacity[v1alpha1.DRAMemoryCapacity], got.ConsumedCapacity[v1alpha1.DRAMemoryCapacity]
	if want.Driver != got.Driver || want.Pool != got.Pool || want.Device != got.Device || want.Request != got.Request || wq.Cmp(gq) != 0 {
		t.Errorf("evaluator's allocation %s/%s/%s request %s consumed %s; upstream's %s/%s/%s request %s consumed %s",
			got.Driver, got.Pool, got.Device, got.Request, gq.String(), want.Driver, want.Pool, want.Device, want.Request, wq.String())
	}
	n.release(in)
	if got := n.gpus(); got[1].Instances != 0 || got[1].UsedMiB != 0 {
		t.Errorf("after release: GPU 1 %+v, want empty", got[1])
	}
}

type classList []*resourcev1.DeviceClass

func (l classList) List() ([]*resourcev1.DeviceClass, error) { return l, nil }
func (l classList) Get(name string) (*resourcev1.DeviceClass, error) {
	for _, c := range l {
		if c.Name == name {
			return c, nil
		}
	}
	return nil, fmt.Errorf("DeviceClass %s not found", name)
}
