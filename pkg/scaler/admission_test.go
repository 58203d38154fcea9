package scaler

import (
	"fmt"
	"k8s.io/apimachinery/pkg/types"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/placement"
	"github.com/hetsev/hetsev/pkg/schedulerconfig"
)

// busyPod is pod with a declared busy share and, when maxInflation > 0, an
// inflation limit.
func busyPod(name, nodeName, model, mem, gpuIndex string, busy, maxInflation float64) *v1.Pod {
	p := pod(name, nodeName, model, mem, gpuIndex, "2")
	p.Annotations[v1alpha1.AnnotationBusyShare] = fmt.Sprint(busy)
	if maxInflation > 0 {
		p.Annotations[v1alpha1.AnnotationMaxInflation] = fmt.Sprint(maxInflation)
	}
	return p
}

// TestFreeSlotsAreWhatTheSchedulerAdmits: one T4 node with four 16 GiB
// GPUs and CPUs for many instances, under HetsevGPUShare's default
// arguments. A resnet50 instance (2 GiB, busy share 0.4, inflation limit
// 1.5) is admitted by the scheduler's rule (placement.Placer.Admit) on:
//   - GPU 0, hosting resnet50 already: no (anti-affinity);
//   - GPU 1, hosting ssd busy 0.6 whose limit is 1.1: no, ssd would be
//     inflated past it (busy share 1.0 is within maxBusyShare 1);
//   - GPU 2, hosting bert busy 0.2 without a limit: yes;
//   - GPU 3, empty: yes.
//
// Free slots: 2. Memory and busy share alone would say 3.
func TestFreeSlotsAreWhatTheSchedulerAdmits(t *testing.T) {
	nodes := []*v1.Node{node("a", 4, 16384, "64")}
	pods := []*v1.Pod{
		busyPod("r0", "a", "resnet50", "2Gi", "0", 0.3, 0),
		busyPod("s1", "a", "ssd", "4Gi", "1", 0.6, 1.1),
		busyPod("b2", "a", "bert", "4Gi", "2", 0.2, 0),
	}
	d := gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048, BusyShare: 0.4, MaxInflation: 1.5}
	adm := schedulerconfig.DefaultGPUShareArgs().Placer()
	inv, err := gpuinventory.NodeGPUsOf(nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	occ := gpuinventory.NewOccupancy("a", inv)
	for _, p := range pods {
		occ.AddPod(p, nil)
	}
	for i, want := range []string{placement.RefusedAntiAffinity, placement.RefusedInflationLimit, "", ""} {
		got := ""
		if r := adm.Admit(occ.GPUs[i], d); r != nil {
			got = r.Reason
		}
		if got != want {
			t.Errorf("GPU %d: refused for %q, want %q", i, got, want)
		}
	}
	if got := capacityOf(nodes, pods, types.NamespacedName{Name: "resnet50"}, "Tesla-T4", d, adm, adm, nil, false, resource.MustParse("2"), resource.Quantity{}, nil).slots; got != 2 {
		t.Errorf("free slots = %d, want 2 (GPUs 2 and 3)", got)
	}
}

// TestFreeSlotsSkipNodesTheSchedulerRefuses: four T4 nodes with two free
// GPUs each. The scheduler places no resnet50 pod on the cordoned node,
// nor on the node tainted dedicated=batch:NoSchedule or the one tainted
// gpu=broken:NoExecute, which its template does not tolerate; a
// PreferNoSchedule taint only scores. Free slots: 2 (the last node). With a
// toleration of dedicated=batch the tainted node's GPUs count too: 4.
func TestFreeSlotsSkipNodesTheSchedulerRefuses(t *testing.T) {
	cordoned, noSchedule, noExecute, prefer := node("cordoned", 2, 16384, "64"), node("batch", 2, 16384, "64"), node("broken", 2, 16384, "64"), node("prefer", 2, 16384, "64")
	cordoned.Spec.Unschedulable = true
	cordoned.Spec.Taints = []v1.Taint{{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}}
	noSchedule.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "batch", Effect: v1.TaintEffectNoSchedule}}
	noExecute.Spec.Taints = []v1.Taint{{Key: "gpu", Value: "broken", Effect: v1.TaintEffectNoExecute}}
	prefer.Spec.Taints = []v1.Taint{{Key: "spot", Effect: v1.TaintEffectPreferNoSchedule}}
	nodes := []*v1.Node{cordoned, noSchedule, noExecute, prefer}
	d := gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048}
	adm := schedulerconfig.DefaultGPUShareArgs().Placer()
	slots := func(tol []v1.Toleration) int {
		return capacityOf(nodes, nil, types.NamespacedName{Name: "resnet50"}, "Tesla-T4", d, adm, adm, tol, false, resource.MustParse("2"), resource.Quantity{}, nil).slots
	}
	if got := slots(nil); got != 2 {
		t.Errorf("no tolerations: %d free slots, want 2 (node prefer)", got)
	}
	batch := []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "batch", Effect: v1.TaintEffectNoSchedule}}
	if got := slots(batch); got != 4 {
		t.Errorf("tolerating dedicated=batch: %d free slots, want 4 (nodes batch and prefer)", got)
	}
}

// schedulerConfig writes a KubeSchedulerConfiguration whose hetsev-scheduler
// profile gives HetsevGPUShare args (YAML lines at the args' indentation).
func schedulerConfig(t *testing.T, args string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "scheduler-config.yaml")
	cfg := `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: default-scheduler
  - schedulerName: hetsev-scheduler
    pluginConfig:
      - name: HetsevGPUShare
        args:
` + args
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSchedulerConfigSetsTheFreeSlots: --scheduler-config is the one source
// of hetsev-scheduler's arguments for the free slots. On a T4 node whose
// two GPUs each host an instance busy 0.3, a resnet50 instance of busy
// share 0.4 fits both under the default maxBusyShare 1, and neither under
// maxBusyShare 0.5 from the scheduler's file. A file with a bad value is
// refused when the flags are validated, naming the file and the field.
func TestSchedulerConfigSetsTheFreeSlots(t *testing.T) {
	nodes := []*v1.Node{node("a", 2, 16384, "64")}
	pods := []*v1.Pod{busyPod("b0", "a", "bert", "2Gi", "0", 0.3, 0), busyPod("b1", "a", "bert", "2Gi", "1", 0.3, 0)}
	d := gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048, BusyShare: 0.4}
	slotsWith := func(o *Options) int {
		t.Helper()
		r := reconcilerWithArgs(t, o)
		return capacityOf(nodes, pods, types.NamespacedName{Name: "resnet50"}, "Tesla-T4", d, r.admission(), r.admission(), nil, false, resource.MustParse("2"), resource.Quantity{}, nil).slots
	}
	o := NewOptions()
	if got := slotsWith(o); got != 2 {
		t.Errorf("default arguments: %d free slots, want 2", got)
	}
	o.SchedulerConfig = schedulerConfig(t, "          maxBusyShare: 0.5\n")
	if got := slotsWith(o); got != 0 {
		t.Errorf("maxBusyShare 0.5 from %s: %d free slots, want 0", o.SchedulerConfig, got)
	}

	for args, field := range map[string]string{
		"          maxBusyShare: -1\n":                         "profiles[1].pluginConfig[0].args.maxBusyShare",
		"          maxBusyShare: lots\n":                       "profiles[1].pluginConfig[0].args",
		"          antiAffinity: Never\n":                      "profiles[1].pluginConfig[0].args.antiAffinity",
		"          maxBusyShares: 0.5\n":                       "maxBusyShares",
		"          interferenceModelFile: /nonexistent.yaml\n": "profiles[1].pluginConfig[0].args.interferenceModelFile",
	} {
		o := NewOptions()
		o.SchedulerConfig = schedulerConfig(t, args)
		err := o.Validate()
		if err == nil || !strings.Contains(err.Error(), "--scheduler-config") || !strings.Contains(err.Error(), o.SchedulerConfig) || !strings.Contains(err.Error(), field) {
			t.Errorf("args %q: Validate() = %v, want an error naming --scheduler-config, %s and %s", strings.TrimSpace(args), err, o.SchedulerConfig, field)
		}
	}
}

// reconcilerWithArgs validates o and returns a Reconciler with the
// HetsevGPUShare arguments its --scheduler-config gives.
func reconcilerWithArgs(t *testing.T, o *Options) *Reconciler {
	t.Helper()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	args, err := o.GPUShareArgs()
	if err != nil {
		t.Fatal(err)
	}
	return &Reconciler{Admission: &args}
}
