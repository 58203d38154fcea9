package scaler

import (
	"context"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// withOverrides is resnet50 with a two-container template and T4
// overrides of the model server: image, args, env merged by name,
// resources merged over the profile's cpu.
func withOverrides() *v1alpha1.ModelService {
	ms := resnet()
	ms.Spec.Template.Spec.Containers = []v1.Container{
		{Name: "server", Image: "triton", Args: []string{"--generic"},
			Env: []v1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}}},
		{Name: "proxy", Image: "envoy"},
	}
	ms.Spec.Profiles[0].Overrides = &v1alpha1.TemplateOverrides{
		Image: "triton-trt-t4", Args: []string{"--model-repository=/models/t4"},
		Env: []v1.EnvVar{{Name: "B", Value: "3"}, {Name: "C", Value: "4"}},
		Resources: &v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("3")},
			Limits:   v1.ResourceList{v1.ResourceMemory: resource.MustParse("8Gi")},
		},
	}
	return ms
}

func envOf(c v1.Container) string {
	var kv []string
	for _, e := range c.Env {
		if e.Name != gpuinventory.EnvVisibleDevices {
			kv = append(kv, e.Name+"="+e.Value)
		}
	}
	return strings.Join(kv, " ")
}

// A GPU type's overrides change its Deployments (its own and its light
// flavors') and no other type's; the GPU access the scaler adds stays.
func TestOverridesApplyPerGPUType(t *testing.T) {
	s, err := validate(withOverrides(), defaultCatalog(t), flavorDefaults())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range s.types {
		spec := desiredDeployment(s, p, 1).Spec.Template.Spec
		server, proxy := spec.Containers[0], spec.Containers[1]
		if proxy.Image != "envoy" {
			t.Errorf("%s: proxy image %q, want envoy (not overridden)", p.column(), proxy.Image)
		}
		hasGPU := false
		for _, e := range server.Env {
			hasGPU = hasGPU || e.Name == gpuinventory.EnvVisibleDevices
		}
		if !hasGPU {
			t.Errorf("%s: server env %v lost %s", p.column(), server.Env, gpuinventory.EnvVisibleDevices)
		}
		if p.gpuType.Name != "T4" {
			if server.Image != "triton" || !reflect.DeepEqual(server.Args, []string{"--generic"}) || envOf(server) != "A=1 B=2" {
				t.Errorf("%s: server %s %v env %q, want the template's", p.column(), server.Image, server.Args, envOf(server))
			}
			continue
		}
		if server.Image != "triton-trt-t4" || !reflect.DeepEqual(server.Args, []string{"--model-repository=/models/t4"}) {
			t.Errorf("%s: server %s %v, want the T4 override", p.column(), server.Image, server.Args)
		}
		if got := envOf(server); got != "A=1 B=3 C=4" {
			t.Errorf("%s: server env %q, want A=1 B=3 C=4 (merged by name)", p.column(), got)
		}
		if cpu, mem := server.Resources.Requests[v1.ResourceCPU], server.Resources.Requests[v1.ResourceMemory]; cpu.String() != "3" || mem.String() != "4Gi" {
			t.Errorf("%s: requests cpu %s memory %s, want 3 (override over the profile's 2) and 4Gi (profile)", p.column(), cpu.String(), mem.String())
		}
		if lim := server.Resources.Limits[v1.ResourceMemory]; lim.String() != "8Gi" {
			t.Errorf("%s: memory limit %s, want 8Gi", p.column(), lim.String())
		}
		if cpu, _ := p.instanceRequests(&s.obj.Spec.Template.Spec); cpu.String() != "3" {
			t.Errorf("%s: free slots counted at cpu %s, want 3", p.column(), cpu.String())
		}
	}
	// The override of a named container changes that one only.
	ms := withOverrides()
	ms.Spec.Profiles[0].Overrides = &v1alpha1.TemplateOverrides{Container: "proxy", Image: "envoy-t4"}
	s, err = validate(ms, defaultCatalog(t), DefaultDefaults)
	if err != nil {
		t.Fatal(err)
	}
	spec := desiredDeployment(s, s.types[0], 1).Spec.Template.Spec
	if spec.Containers[0].Image != "triton" || spec.Containers[1].Image != "envoy-t4" {
		t.Errorf("images %s, %s; want triton, envoy-t4", spec.Containers[0].Image, spec.Containers[1].Image)
	}
}

// Overrides naming a container the template lacks: Ready False
// InvalidSpec naming the field, a Warning event, and the Deployments keep
// the template they had.
func TestOverridesOfAMissingContainerAreInvalid(t *testing.T) {
	ctx := context.Background()
	f := newRoutingFixture(t, withOverrides())
	f.reconcile(t)
	key := types.NamespacedName{Namespace: "default", Name: DeploymentName("resnet50", "T4")}
	before := &appsv1.Deployment{}
	if err := f.api.Get(ctx, key, before); err != nil {
		t.Fatal(err)
	}
	f.events()
	ms := f.modelService(t)
	ms.Spec.Profiles[0].Overrides.Container = "tritonserver"
	ms.Spec.Profiles[0].Overrides.Image = "other"
	ms.Generation++ // the fake API server keeps generations as written
	if err := f.api.Update(ctx, ms); err != nil {
		t.Fatal(err)
	}
	if _, err := f.r.Reconcile(ctx, f.req); err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(f.modelService(t).Status.Conditions, v1alpha1.ConditionReady)
	if c == nil || c.Reason != "InvalidSpec" || !strings.Contains(c.Message, `spec.profiles[0].overrides.container: "tritonserver" is not a container of spec.template (containers: server, proxy)`) {
		t.Errorf("Ready condition %+v, want InvalidSpec naming the container", c)
	}
	if ev := strings.Join(f.events(), "\n"); !strings.Contains(ev, "Warning InvalidSpec") {
		t.Errorf("events %q, want a Warning InvalidSpec", ev)
	}
	after := &appsv1.Deployment{}
	if err := f.api.Get(ctx, key, after); err != nil {
		t.Fatal(err)
	}
	if got := after.Spec.Template.Spec.Containers[0].Image; got != "triton-trt-t4" || after.Annotations[v1alpha1.AnnotationTemplateHash] != before.Annotations[v1alpha1.AnnotationTemplateHash] {
		t.Errorf("deployment changed: image %s, want triton-trt-t4 as before", got)
	}
}
