package scaler

import (
	"strings"
	"testing"
	"time"

	"github.com/hetsev/hetsev/pkg/catalog"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

func defaultCatalog(t *testing.T) catalog.Catalog {
	t.Helper()
	c, err := catalog.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func resnet() *v1alpha1.ModelService {
	return &v1alpha1.ModelService{
		ObjectMeta: metav1.ObjectMeta{Name: "resnet50", Namespace: "default", UID: "u1"},
		Spec: v1alpha1.ModelServiceSpec{
			Model: "resnet50", SLO: v1alpha1.SLO{ResponseTimeMs: 400, ServiceLevel: 0.98}, BatchSize: 8,
			Profiles: []v1alpha1.GPUProfile{
				{GPUType: "T4", ThroughputRPS: 363, LatencyMs: 22.41, GPUMemory: "2Gi", CPU: "2", Memory: "4Gi", LaunchSeconds: 20},
				{GPUType: "V100-32GB", ThroughputRPS: 709, LatencyMs: 11.5, GPUMemory: "2Gi"},
			},
			Template: v1.PodTemplateSpec{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "server", Image: "triton"}}}},
		},
	}
}

func TestValidateAppliesDefaultsAndCatalogPrices(t *testing.T) {
	s, err := validate(resnet(), defaultCatalog(t), wholeGPUDefaults())
	if err != nil {
		t.Fatal(err)
	}
	if s.policy.SaturationThreshold != 0.8 || s.policy.RTMaxMs != 400 || s.policy.MinReplicas != 1 {
		t.Errorf("policy = %+v", s.policy)
	}
	if s.interval != DefaultIntervalSeconds*time.Second || s.policy.ScaleInCoolDown != DefaultScaleInCoolDownSeconds*time.Second {
		t.Errorf("interval %v, cool-down %v", s.interval, s.policy.ScaleInCoolDown)
	}
	// The launch-time forecast measures the rise of W over the decision
	// interval (heterogeneity.Policy.DecisionInterval).
	if s.policy.DecisionInterval != s.interval {
		t.Errorf("policy decision interval %v, want the interval %v", s.policy.DecisionInterval, s.interval)
	}
	// Prices come from data/profiles/gpu_catalog.csv when the spec has none.
	if s.types[0].price != 0.526 || s.types[1].price != 3.9015 || s.types[0].gpuMemMiB != 2048 {
		t.Errorf("types = %+v", s.types)
	}
}

func TestValidateNamesTheBadField(t *testing.T) {
	cases := map[string]func(*v1alpha1.ModelService){
		"spec.model":                     func(m *v1alpha1.ModelService) { m.Spec.Model = "a/resnet50" },
		"spec.profiles[0].gpuType":       func(m *v1alpha1.ModelService) { m.Spec.Profiles[0].GPUType = "NoSuchGPU" },
		"spec.profiles[1].throughputRPS": func(m *v1alpha1.ModelService) { m.Spec.Profiles[1].ThroughputRPS = -3 },
		"spec.profiles[0].gpuMemory":     func(m *v1alpha1.ModelService) { m.Spec.Profiles[0].GPUMemory = "lots" },
		"exceeds one T4":                 func(m *v1alpha1.ModelService) { m.Spec.Profiles[0].GPUMemory = "20Gi" },
		"spec.slo.serviceLevel":          func(m *v1alpha1.ModelService) { m.Spec.SLO.ServiceLevel = 1.5 },
		"listed twice":                   func(m *v1alpha1.ModelService) { m.Spec.Profiles[1].GPUType = "T4" },
		"spec.scaling":                   func(m *v1alpha1.ModelService) { h := 0.95; m.Spec.Scaling.ScaleInHysteresis = &h },
	}
	for want, mutate := range cases {
		ms := resnet()
		mutate(ms)
		_, err := validate(ms, defaultCatalog(t), wholeGPUDefaults())
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v", want, err)
		}
	}
}

func TestDesiredDeploymentPinsTypeAndGPU(t *testing.T) {
	s, err := validate(resnet(), defaultCatalog(t), wholeGPUDefaults())
	if err != nil {
		t.Fatal(err)
	}
	d := desiredDeployment(s, s.types[0], 3)
	if d.Name != "resnet50-t4" || *d.Spec.Replicas != 3 {
		t.Fatalf("deployment %s with %d replicas", d.Name, *d.Spec.Replicas)
	}
	ps := d.Spec.Template.Spec
	if ps.SchedulerName != v1alpha1.SchedulerName || ps.NodeSelector[gpuinventory.LabelGPUProduct] != "Tesla-T4" {
		t.Errorf("scheduler %q, node selector %v", ps.SchedulerName, ps.NodeSelector)
	}
	ann := d.Spec.Template.Annotations
	if ann[v1alpha1.AnnotationModel] != "resnet50" || ann[v1alpha1.AnnotationGPUMemory] != "2048Mi" {
		t.Errorf("annotations %v", ann)
	}
	env := ps.Containers[0].Env
	if len(env) != 1 || env[0].Name != "NVIDIA_VISIBLE_DEVICES" || env[0].ValueFrom.FieldRef.FieldPath != "metadata.annotations['hetsev.io/gpu-index']" {
		t.Errorf("env %+v", env)
	}
	if got := ps.Containers[0].Resources.Requests[v1.ResourceCPU]; got.Cmp(resource.MustParse("2")) != 0 {
		t.Errorf("cpu request %v", got)
	}
	if d.OwnerReferences[0].Kind != "ModelService" || d.OwnerReferences[0].UID != "u1" {
		t.Errorf("owner %+v", d.OwnerReferences)
	}
}

// A literal NVIDIA_VISIBLE_DEVICES in the template would expose a GPU the
// scheduler did not choose (and is refused by the admission policy): the
// Deployment replaces it with the downward-API form.
func TestDesiredDeploymentReplacesLiteralVisibleDevices(t *testing.T) {
	ms := resnet()
	ms.Spec.Template.Spec.Containers[0].Env = []v1.EnvVar{{Name: "A", Value: "1"}, {Name: "NVIDIA_VISIBLE_DEVICES", Value: "all"}}
	s, err := validate(ms, defaultCatalog(t), wholeGPUDefaults())
	if err != nil {
		t.Fatal(err)
	}
	env := desiredDeployment(s, s.types[0], 1).Spec.Template.Spec.Containers[0].Env
	if len(env) != 2 || env[0].Value != "1" || env[1].Value != "" || env[1].ValueFrom == nil ||
		env[1].ValueFrom.FieldRef.FieldPath != gpuinventory.GPUIndexFieldPath {
		t.Errorf("env %+v", env)
	}
}

// Every container of the template, init containers and native sidecars
// included, takes NVIDIA_VISIBLE_DEVICES from the GPU index, and the pods
// run with the NVIDIA runtime class (which reads it) unless the template
// names a class or the scaler is configured with none.
func TestDesiredDeploymentGivesEveryContainerItsGPU(t *testing.T) {
	ms := resnet()
	always := v1.ContainerRestartPolicyAlways
	ms.Spec.Template.Spec.InitContainers = []v1.Container{{Name: "fetch-model", Image: "x"}, {Name: "proxy", Image: "y", RestartPolicy: &always}}
	s, err := validate(ms, defaultCatalog(t), wholeGPUDefaults())
	if err != nil {
		t.Fatal(err)
	}
	ps := desiredDeployment(s, s.types[0], 1).Spec.Template.Spec
	for _, c := range append(append([]v1.Container{}, ps.InitContainers...), ps.Containers...) {
		if i := gpuinventory.VisibleDevicesIndex(c.Env); i < 0 || !gpuinventory.IsVisibleDevicesFromGPUIndex(c.Env[i]) {
			t.Errorf("container %s: env %+v", c.Name, c.Env)
		}
	}
	if ps.RuntimeClassName == nil || *ps.RuntimeClassName != gpuinventory.DefaultRuntimeClassName {
		t.Errorf("runtimeClassName %v, want %q", ps.RuntimeClassName, gpuinventory.DefaultRuntimeClassName)
	}
	own := "nvidia-legacy"
	ms.Spec.Template.Spec.RuntimeClassName = &own
	s, _ = validate(ms, defaultCatalog(t), wholeGPUDefaults())
	if rc := desiredDeployment(s, s.types[0], 1).Spec.Template.Spec.RuntimeClassName; *rc != own {
		t.Errorf("the template's runtime class %q became %q", own, *rc)
	}
	ms.Spec.Template.Spec.RuntimeClassName = nil
	none := wholeGPUDefaults()
	none.RuntimeClassName = ""
	s, _ = validate(ms, defaultCatalog(t), none)
	if rc := desiredDeployment(s, s.types[0], 1).Spec.Template.Spec.RuntimeClassName; rc != nil {
		t.Errorf("--gpu-runtime-class empty: runtimeClassName %q, want none", *rc)
	}
}

func node(name string, gpus int, memMiB int64, cpu string) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			gpuinventory.LabelGPUProduct: "Tesla-T4", gpuinventory.LabelGPUCount: itoa(gpus), gpuinventory.LabelGPUMemory: itoa(int(memMiB)),
		}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("62Gi")}},
	}
}

func itoa(i int) string {
	return strings.TrimSpace(resource.NewQuantity(int64(i), resource.DecimalSI).String())
}

func pod(name, nodeName, model, mem string, gpuIndex string, cpu string) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{v1alpha1.AnnotationModel: model, v1alpha1.AnnotationGPUMemory: mem}},
		Spec: v1.PodSpec{NodeName: nodeName, NodeSelector: map[string]string{gpuinventory.LabelGPUProduct: "Tesla-T4"},
			Containers: []v1.Container{{Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}
	if gpuIndex != "" {
		p.Annotations[v1alpha1.AnnotationGPUIndex] = gpuIndex
	}
	return p
}

// TestFreeSlots works HetSev 4.1 constraint 2 by hand on two T4 nodes with
// two 16 GiB GPUs each.
func TestFreeSlots(t *testing.T) {
	nodes := []*v1.Node{node("a", 2, 16384, "40"), node("b", 2, 16384, "5")}
	pods := []*v1.Pod{
		pod("r0", "a", "resnet50", "2Gi", "0", "2"), // resnet50 on a/0: that GPU is out for resnet50
		pod("s0", "a", "ssd", "14Gi", "1", "2"),     // a/1 has 2 GiB left: enough for resnet50 (2 GiB)
		pod("pending", "", "resnet50", "2Gi", "", "2"),
	}
	d := gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048}
	// a: GPU 1 fits (2048 free, no resnet50) = 1; b: two GPUs fit but 5 CPUs
	// hold only two 2-CPU pods = 2; minus one pending resnet50 = 2.
	if got := freeSlots(nodes, pods, "Tesla-T4", d, resource.MustParse("2"), resource.Quantity{}); got != 2 {
		t.Errorf("free slots = %d, want 2", got)
	}
	// 3 GiB no longer fits a/1.
	d.MemoryMiB = 3072
	if got := freeSlots(nodes, pods, "Tesla-T4", d, resource.MustParse("2"), resource.Quantity{}); got != 1 {
		t.Errorf("free slots for 3 GiB = %d, want 1", got)
	}
	// Another product has no nodes.
	if got := freeSlots(nodes, pods, "Tesla-V100-SXM2-32GB", d, resource.Quantity{}, resource.Quantity{}); got != 0 {
		t.Errorf("V100 slots = %d", got)
	}
}

func TestTemplateHashFollowsSpec(t *testing.T) {
	s, err := validate(resnet(), defaultCatalog(t), wholeGPUDefaults())
	if err != nil {
		t.Fatal(err)
	}
	h1, _ := templateHash(desiredDeployment(s, s.types[0], 1))
	h2, _ := templateHash(desiredDeployment(s, s.types[0], 5))
	if h1 != h2 {
		t.Error("replicas changed the template hash")
	}
	ms := resnet()
	ms.Spec.Template.Spec.Containers[0].Image = "triton:new"
	s2, _ := validate(ms, defaultCatalog(t), wholeGPUDefaults())
	if h3, _ := templateHash(desiredDeployment(s2, s2.types[0], 1)); h3 == h1 {
		t.Error("a new image did not change the template hash")
	}
}

func TestSolverChoice(t *testing.T) {
	s, err := validate(resnet(), defaultCatalog(t), wholeGPUDefaults())
	if err != nil || s.policy.Solver != heterogeneity.SolverExact || s.policy.SLOCheck != heterogeneity.SLOCheckPaper {
		t.Fatalf("defaults: %+v %v", s.policy, err)
	}
	ms := resnet()
	ms.Spec.Scaling.Solver = "heuristic"
	s, err = validate(ms, defaultCatalog(t), wholeGPUDefaults())
	if err != nil || s.policy.Solver != heterogeneity.SolverHeuristic {
		t.Fatalf("spec.scaling.solver=heuristic: %+v %v", s.policy, err)
	}
	ms.Spec.Scaling.Solver = "simplex"
	if _, err := validate(ms, defaultCatalog(t), wholeGPUDefaults()); err == nil {
		t.Error("unknown solver accepted")
	}
}

// TestModelThresholdsReplaceTheDefaultOnly: with Defaults.ModelThresholds
// a ModelService without spec.scaling.saturationThreshold gets the
// threshold the latency model gives its GPU types at SL_min; one that
// sets it keeps its own; without the option the default stays.
func TestModelThresholdsReplaceTheDefaultOnly(t *testing.T) {
	d := wholeGPUDefaults()
	d.ModelThresholds = true
	s, err := validate(resnet(), defaultCatalog(t), d)
	if err != nil {
		t.Fatal(err)
	}
	want := modelThreshold(s.policy, s.types, 8, 0)
	if want == 0 || want == v1alpha1.DefaultSaturationThreshold || s.policy.SaturationThreshold != want {
		t.Errorf("derived threshold %v, want the model's %v (not the default %v)", s.policy.SaturationThreshold, want, v1alpha1.DefaultSaturationThreshold)
	}
	own := resnet()
	own.Spec.Scaling.SaturationThreshold = 0.6
	if s, err := validate(own, defaultCatalog(t), d); err != nil || s.policy.SaturationThreshold != 0.6 {
		t.Errorf("spec.scaling.saturationThreshold 0.6: got %v (%v), want 0.6 kept", s.policy.SaturationThreshold, err)
	}
	if s, err := validate(resnet(), defaultCatalog(t), wholeGPUDefaults()); err != nil || s.policy.SaturationThreshold != v1alpha1.DefaultSaturationThreshold {
		t.Errorf("without ModelThresholds: got %v (%v), want the default", s.policy.SaturationThreshold, err)
	}
}

// TestModelThresholdBelowHysteresisKeepsTheDefault: a hysteresis the CRD
// admits (below the default 0.8) but at or above the derived threshold
// leaves the service at the default threshold rather than invalid.
func TestModelThresholdBelowHysteresisKeepsTheDefault(t *testing.T) {
	d := wholeGPUDefaults()
	d.ModelThresholds = true
	ms := resnet()
	// One T4 profile of unbatched 50 ms requests: the latency model meets
	// RT_max 300 ms only up to a saturation of 0.65.
	ms.Spec.SLO.ResponseTimeMs, ms.Spec.BatchSize = 300, 1
	ms.Spec.Profiles = ms.Spec.Profiles[:1]
	ms.Spec.Profiles[0].ThroughputRPS, ms.Spec.Profiles[0].LatencyMs = 20, 50
	s, err := validate(ms, defaultCatalog(t), d)
	if err != nil {
		t.Fatal(err)
	}
	th := s.policy.SaturationThreshold
	if th != 0.65 {
		t.Fatalf("derived threshold %v, want 0.65", th)
	}
	h := th
	ms.Spec.Scaling.ScaleInHysteresis = &h
	s, err = validate(ms, defaultCatalog(t), d)
	if err != nil {
		t.Fatalf("hysteresis %v at the derived threshold: %v; want the default threshold and no error", h, err)
	}
	if s.policy.SaturationThreshold != v1alpha1.DefaultSaturationThreshold {
		t.Errorf("hysteresis %v at the derived threshold: threshold %v, want the default %v", h, s.policy.SaturationThreshold, v1alpha1.DefaultSaturationThreshold)
	}
}

// TestDefaultIntervalFiveSeconds: a ModelService without
// spec.scaling.intervalSeconds is decided every 5 s, and its launch-time
// forecast counts 5 s to the next decision. `make evaluate --ablation`
// measured 5 s against 15 s at equal or lower cost or excess missed
// requests on every replay.
func TestDefaultIntervalFiveSeconds(t *testing.T) {
	s, err := validate(resnet(), defaultCatalog(t), wholeGPUDefaults())
	if err != nil {
		t.Fatal(err)
	}
	if s.interval != 5*time.Second || s.policy.DecisionInterval != 5*time.Second {
		t.Errorf("interval %v, policy decision interval %v; want 5s for a spec without intervalSeconds", s.interval, s.policy.DecisionInterval)
	}
}

// TestValidateIntervalAtLeastTheMinimum: a ModelService stored with an
// interval below the CRD's minimum (before it had one) decides every
// 100 ms, not every 0 ns (which would never decide again).
func TestValidateIntervalAtLeastTheMinimum(t *testing.T) {
	ms := resnet()
	ms.Spec.Scaling.IntervalSeconds = 1e-10
	s, err := validate(ms, defaultCatalog(t), wholeGPUDefaults())
	if err != nil {
		t.Fatal(err)
	}
	if s.interval != 100*time.Millisecond || s.policy.DecisionInterval != 100*time.Millisecond {
		t.Errorf("interval %v, decision interval %v; want 100 ms", s.interval, s.policy.DecisionInterval)
	}
}

// TestReplicaCeiling: --max-replicas bounds every ModelService's replicas,
// spec.scaling.maxReplicas 0 (no cap of its own) included, and a lower
// maxReplicas of its own stands; with the ceiling at 0 the spec's stands
// alone. A ceiling below minReplicas yields to it.
func TestReplicaCeiling(t *testing.T) {
	for _, c := range []struct {
		ceiling, maxReplicas, minReplicas, want int
	}{
		{100, 0, 0, 100},
		{100, 500, 0, 100},
		{100, 10, 0, 10},
		{0, 0, 0, 0},
		{0, 500, 0, 500},
		{4, 0, 6, 6},
	} {
		ms := resnet()
		ms.Spec.Scaling.MaxReplicas, ms.Spec.Scaling.MinReplicas = c.maxReplicas, c.minReplicas
		d := wholeGPUDefaults()
		d.ReplicaCeiling = c.ceiling
		s, err := validate(ms, defaultCatalog(t), d)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if s.policy.MaxReplicas != c.want {
			t.Errorf("ceiling %d, maxReplicas %d, minReplicas %d: policy max replicas %d, want %d", c.ceiling, c.maxReplicas, c.minReplicas, s.policy.MaxReplicas, c.want)
		}
	}
}
