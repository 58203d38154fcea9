package scaler

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	draCEL "k8s.io/dynamic-resource-allocation/cel"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/dra"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// draDefaults are the scaler's defaults with --gpu-mode=dra.
func draDefaults() Defaults {
	d := wholeGPUDefaults()
	d.GPUMode = v1alpha1.GPUModeDRA
	return d
}

// In DRA mode the pod template claims its GPU from the type's
// ResourceClaimTemplate in every container, keeps the hetsev annotations
// the scheduler reads, and has neither NVIDIA_VISIBLE_DEVICES nor the
// NVIDIA runtime class (CDI injects the device).
func TestDesiredDeploymentDRAModeClaimsTheGPU(t *testing.T) {
	ms := resnet()
	always := v1.ContainerRestartPolicyAlways
	ms.Spec.Template.Spec.InitContainers = []v1.Container{{Name: "fetch-model", Image: "x"}, {Name: "proxy", Image: "y", RestartPolicy: &always}}
	ms.Spec.Template.Spec.Containers = append(ms.Spec.Template.Spec.Containers, v1.Container{Name: "metrics", Image: "z"})
	s, err := validate(ms, defaultCatalog(t), draDefaults())
	if err != nil {
		t.Fatal(err)
	}
	d := desiredDeployment(s, s.types[0], 1)
	ps := d.Spec.Template.Spec
	if len(ps.ResourceClaims) != 1 || ps.ResourceClaims[0].Name != v1alpha1.PodClaimName ||
		ps.ResourceClaims[0].ResourceClaimTemplateName == nil || *ps.ResourceClaims[0].ResourceClaimTemplateName != "resnet50-t4" {
		t.Errorf("spec.resourceClaims %+v, want one %q from template resnet50-t4", ps.ResourceClaims, v1alpha1.PodClaimName)
	}
	for _, c := range ps.Containers {
		if len(c.Resources.Claims) != 1 || c.Resources.Claims[0].Name != v1alpha1.PodClaimName {
			t.Errorf("container %s: resources.claims %+v, want [%s]", c.Name, c.Resources.Claims, v1alpha1.PodClaimName)
		}
	}
	for _, c := range append(append([]v1.Container{}, ps.InitContainers...), ps.Containers...) {
		if i := gpuinventory.VisibleDevicesIndex(c.Env); i >= 0 {
			t.Errorf("container %s: %s set (%+v); CDI injects the device in DRA mode", c.Name, gpuinventory.EnvVisibleDevices, c.Env[i])
		}
	}
	for _, c := range ps.InitContainers {
		if len(c.Resources.Claims) != 0 {
			t.Errorf("init container %s claims %+v: only the serving containers get the GPU", c.Name, c.Resources.Claims)
		}
	}
	if ps.RuntimeClassName != nil {
		t.Errorf("runtimeClassName %q in DRA mode, want none", *ps.RuntimeClassName)
	}
	if ps.SchedulerName != v1alpha1.SchedulerName || ps.NodeSelector[gpuinventory.LabelGPUProduct] != "Tesla-T4" {
		t.Errorf("scheduler %q, node selector %v", ps.SchedulerName, ps.NodeSelector)
	}
	a := d.Spec.Template.Annotations
	if a[v1alpha1.AnnotationModel] != "resnet50" || a[v1alpha1.AnnotationGPUMemory] != "2048Mi" ||
		a[v1alpha1.AnnotationBusyShare] != "1" || a[v1alpha1.AnnotationMaxInflation] != "8.92" {
		t.Errorf("annotations %v: the scheduler needs model, gpu-memory, busy-share and max-inflation in DRA mode too", a)
	}
}

// The ResourceClaimTemplate of a type requests one device of hetsev's
// DeviceClass with the instance's GPU memory (the pods' hetsev.io/gpu-memory,
// in bytes) as consumable capacity, pinned to the type's GPUs by a CEL
// selector that the upstream DRA CEL environment compiles and that matches
// the productName NVIDIA's DRA driver publishes for that type only.
func TestDesiredClaimTemplateRequestsGPUMemoryOfTheType(t *testing.T) {
	s, err := validate(resnet(), defaultCatalog(t), draDefaults())
	if err != nil {
		t.Fatal(err)
	}
	compiler := draCEL.GetCompiler(draCEL.Features{EnableConsumableCapacity: true})
	device := func(attrs map[resourcev1.QualifiedName]resourcev1.DeviceAttribute) draCEL.Device {
		return draCEL.Device{Driver: v1alpha1.DRADriver, AllowMultipleAllocations: new(true), Attributes: attrs,
			Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{v1alpha1.DRAMemoryCapacity: {Value: resource.MustParse("16Gi")}}}
	}
	product := func(name string) map[resourcev1.QualifiedName]resourcev1.DeviceAttribute {
		return map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"productName": {StringValue: &name}}
	}
	for i, want := range []struct{ name, matches, other string }{
		{"resnet50-t4", "Tesla T4", "Tesla V100-SXM2-32GB"},
		{"resnet50-v100-32gb", "Tesla V100-SXM2-32GB", "Tesla T4"},
	} {
		tpl := desiredClaimTemplate(s, s.types[i])
		if tpl.Name != want.name || tpl.Namespace != "default" {
			t.Errorf("template %s/%s, want default/%s", tpl.Namespace, tpl.Name, want.name)
		}
		if ref := metav1.GetControllerOf(tpl); ref == nil || ref.Kind != v1alpha1.Kind || ref.UID != "u1" {
			t.Errorf("%s: controller %+v, want ModelService resnet50", tpl.Name, ref)
		}
		if tpl.Labels[v1alpha1.LabelModelService] != "resnet50" {
			t.Errorf("%s: labels %v", tpl.Name, tpl.Labels)
		}
		reqs := tpl.Spec.Spec.Devices.Requests
		if len(reqs) != 1 || reqs[0].Name != v1alpha1.ClaimRequestName || reqs[0].Exactly == nil {
			t.Fatalf("%s: requests %+v, want one exact request %q", tpl.Name, reqs, v1alpha1.ClaimRequestName)
		}
		ex := reqs[0].Exactly
		if ex.DeviceClassName != v1alpha1.DeviceClassName || ex.Count != 1 || ex.AllocationMode != resourcev1.DeviceAllocationModeExactCount {
			t.Errorf("%s: class %q, %s %d", tpl.Name, ex.DeviceClassName, ex.AllocationMode, ex.Count)
		}
		mem, ok := ex.Capacity.Requests[v1alpha1.DRAMemoryCapacity]
		if !ok || mem.Value() != 2048<<20 || mem.Cmp(resource.MustParse(desiredDeployment(s, s.types[i], 0).Spec.Template.Annotations[v1alpha1.AnnotationGPUMemory])) != 0 {
			t.Errorf("%s: capacity.requests %v, want %s = 2048Mi, the pods' %s", tpl.Name, ex.Capacity.Requests, v1alpha1.DRAMemoryCapacity, v1alpha1.AnnotationGPUMemory)
		}
		if len(ex.Selectors) != 1 || ex.Selectors[0].CEL == nil {
			t.Fatalf("%s: selectors %+v, want one CEL selector", tpl.Name, ex.Selectors)
		}
		sel := compiler.CompileCELExpression(ex.Selectors[0].CEL.Expression, draCEL.Options{})
		if sel.Error != nil {
			t.Fatalf("%s: selector %q does not compile: %v", tpl.Name, ex.Selectors[0].CEL.Expression, sel.Error)
		}
		for _, c := range []struct {
			attrs map[resourcev1.QualifiedName]resourcev1.DeviceAttribute
			want  bool
		}{{product(want.matches), true}, {product(want.other), false}, {nil, false}} {
			got, _, err := sel.DeviceMatches(context.Background(), device(c.attrs))
			if err != nil || got != c.want {
				t.Errorf("%s: selector %q on a device with attributes %v: %v (%v), want %v", tpl.Name, ex.Selectors[0].CEL.Expression, c.attrs, got, err, c.want)
			}
		}
	}
}

// In DRA mode the reconciler writes one ResourceClaimTemplate per
// Deployment, rewrites it only when the demand changed (replacing it: a
// template's spec is immutable), and deletes it with its retired GPU type;
// in annotation mode it writes none.
func TestReconcileDRAModeKeepsClaimTemplates(t *testing.T) {
	ctx := context.Background()
	ms := resnet()
	ms.Generation = 1
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	r, c := newFakeReconciler(t, ms, &now)
	key := types.NamespacedName{Namespace: ms.Namespace, Name: ms.Name}
	reconcileOnce := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
			t.Fatal(err)
		}
	}
	templates := func() map[string]*resourcev1.ResourceClaimTemplate {
		t.Helper()
		var list resourcev1.ResourceClaimTemplateList
		if err := c.List(ctx, &list, client.InNamespace("default")); err != nil {
			t.Fatal(err)
		}
		out := map[string]*resourcev1.ResourceClaimTemplate{}
		for i := range list.Items {
			out[list.Items[i].Name] = &list.Items[i]
		}
		return out
	}

	reconcileOnce()
	if got := templates(); len(got) != 0 {
		t.Fatalf("annotation mode wrote resourceclaimtemplates %v", got)
	}

	r.Defaults = draDefaults()
	now = now.Add(time.Hour)
	reconcileOnce()
	got := templates()
	for _, name := range []string{"resnet50-t4", "resnet50-v100-32gb"} {
		tpl, ok := got[name]
		if !ok {
			t.Fatalf("no resourceclaimtemplate %s; have %v", name, got)
		}
		if ref := metav1.GetControllerOf(tpl); ref == nil || ref.UID != ms.UID {
			t.Errorf("%s: controller %+v", name, ref)
		}
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: "default", Name: name}, d); err != nil {
			t.Fatal(err)
		}
		rc := d.Spec.Template.Spec.ResourceClaims
		if len(rc) != 1 || *rc[0].ResourceClaimTemplateName != name {
			t.Errorf("deployment %s: resourceClaims %+v, want template %s", name, rc, name)
		}
	}
	t4 := got["resnet50-t4"]

	now = now.Add(time.Hour)
	reconcileOnce()
	if again := templates()["resnet50-t4"]; again.UID != t4.UID || again.ResourceVersion != t4.ResourceVersion {
		t.Errorf("unchanged spec: template rewritten (uid %s -> %s, resourceVersion %s -> %s)", t4.UID, again.UID, t4.ResourceVersion, again.ResourceVersion)
	}

	// More GPU memory on the T4: the template is replaced.
	cur := &v1alpha1.ModelService{}
	if err := c.Get(ctx, key, cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Profiles[0].GPUMemory = "3Gi"
	cur.Generation = 2
	if err := c.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	reconcileOnce()
	replaced := templates()["resnet50-t4"]
	if replaced == nil {
		t.Fatal("resourceclaimtemplate resnet50-t4 gone after a change of GPU memory")
	}
	if mem := replaced.Spec.Spec.Devices.Requests[0].Exactly.Capacity.Requests[v1alpha1.DRAMemoryCapacity]; mem.Value() != 3<<30 {
		t.Errorf("after gpuMemory 3Gi the template requests %s", mem.String())
	}

	// The V100 type, serving two pods, is removed: its Deployment is
	// scaled to 0, then deleted once empty; the template goes with the
	// Deployment.
	v100 := &appsv1.Deployment{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "resnet50-v100-32gb"}, v100); err != nil {
		t.Fatal(err)
	}
	two := int32(2)
	v100.Spec.Replicas, v100.Status.Replicas = &two, 2
	if err := c.Update(ctx, v100); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, key, cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Profiles = cur.Spec.Profiles[:1]
	cur.Generation = 3
	if err := c.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	reconcileOnce()
	if _, ok := templates()["resnet50-v100-32gb"]; !ok {
		t.Error("template of the retired V100 deleted while its Deployment is still there")
	}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "resnet50-v100-32gb"}, v100); err != nil {
		t.Fatal(err)
	}
	if replicasOf(v100) != 0 {
		t.Fatalf("retired deployment has %d replicas, want 0", replicasOf(v100))
	}
	v100.Status.ObservedGeneration, v100.Status.Replicas = v100.Generation, 0
	if err := c.Update(ctx, v100); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	reconcileOnce() // deletes the Deployment
	if err := c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "resnet50-v100-32gb"}, v100); !apierrors.IsNotFound(err) {
		t.Fatalf("retired deployment: %v, want it deleted", err)
	}
	now = now.Add(time.Hour)
	reconcileOnce() // the deletion's reconcile
	got = templates()
	if _, ok := got["resnet50-v100-32gb"]; ok {
		t.Error("template of the retired V100 kept after its Deployment was deleted")
	}
	if _, ok := got["resnet50-t4"]; !ok {
		t.Error("template of the kept T4 deleted")
	}
}

// Under HAMi's profile the scaler's templates request cores 0 beside the
// memory and select by HAMi's driver's productName.
func TestDesiredClaimTemplateFollowsTheDriver(t *testing.T) {
	hami, err := dra.Profile(dra.ProfileHAMi)
	if err != nil {
		t.Fatal(err)
	}
	d := draDefaults()
	d.DRADriver = hami
	s, err := validate(resnet(), defaultCatalog(t), d)
	if err != nil {
		t.Fatal(err)
	}
	ex := desiredClaimTemplate(s, s.types[0]).Spec.Spec.Devices.Requests[0].Exactly
	if cores, ok := ex.Capacity.Requests["cores"]; !ok || !cores.IsZero() {
		t.Errorf("requests %v, want cores 0", ex.Capacity.Requests)
	}
	if got, want := ex.Selectors[0].CEL.Expression, dra.ProductSelector(dra.DriverHAMi, "Tesla-T4"); got != want {
		t.Errorf("selector %q, want HAMi's %q", got, want)
	}
}
