package scaler

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// overrideTarget is the index, in tpl's containers, of the container a GPU
// type's overrides change: the one named o.Container, or the first when
// it is empty. The error names the field (field, e.g.
// "spec.profiles[1].overrides") and the template's containers.
func overrideTarget(tpl *v1.PodSpec, o *v1alpha1.TemplateOverrides, field string) (int, error) {
	if len(tpl.Containers) == 0 {
		return 0, fmt.Errorf("%s: spec.template has no containers to override", field)
	}
	if o.Container == "" {
		return 0, nil
	}
	names := make([]string, len(tpl.Containers))
	for i, c := range tpl.Containers {
		if c.Name == o.Container {
			return i, nil
		}
		names[i] = c.Name
	}
	return 0, fmt.Errorf("%s.container: %q is not a container of spec.template (containers: %s)", field, o.Container, strings.Join(names, ", "))
}

// applyOverrides changes the container of spec that o names (validate
// checked it exists): image and args replaced when set, env merged by
// name (same name replaced in place, others appended), resources merged
// by resource name over the container's requests and limits.
func applyOverrides(spec *v1.PodSpec, o *v1alpha1.TemplateOverrides) {
	if o == nil {
		return
	}
	i, err := overrideTarget(spec, o, "")
	if err != nil {
		return
	}
	c := &spec.Containers[i]
	if o.Image != "" {
		c.Image = o.Image
	}
	if len(o.Args) > 0 {
		c.Args = append([]string(nil), o.Args...)
	}
	for _, e := range o.Env {
		setEnv(c, *e.DeepCopy())
	}
	if r := o.Resources; r != nil {
		c.Resources.Requests = mergeResources(c.Resources.Requests, r.Requests)
		c.Resources.Limits = mergeResources(c.Resources.Limits, r.Limits)
	}
}

func mergeResources(dst, src v1.ResourceList) v1.ResourceList {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = v1.ResourceList{}
	}
	for k, q := range src {
		dst[k] = q.DeepCopy()
	}
	return dst
}

// instanceRequests are the CPU and memory one instance of p requests for
// the free-slot count: the profile's cpu and memory (put on the first
// container), with the requests of p's overrides applied over them when
// they change that container, added to them when they change another.
func (p gpuProfile) instanceRequests(tpl *v1.PodSpec) (cpu, mem resource.Quantity) {
	if p.spec.CPU != "" {
		cpu = resource.MustParse(p.spec.CPU)
	}
	if p.spec.Memory != "" {
		mem = resource.MustParse(p.spec.Memory)
	}
	o := p.spec.Overrides
	if o == nil || o.Resources == nil {
		return cpu, mem
	}
	i, err := overrideTarget(tpl, o, "")
	if err != nil {
		return cpu, mem
	}
	for _, x := range []struct {
		name v1.ResourceName
		q    *resource.Quantity
	}{{v1.ResourceCPU, &cpu}, {v1.ResourceMemory, &mem}} {
		r, ok := o.Resources.Requests[x.name]
		switch {
		case !ok:
		case i == 0:
			*x.q = r.DeepCopy()
		default:
			x.q.Add(r)
		}
	}
	return cpu, mem
}

// setEnv sets e on c, replacing a variable of the same name.
func setEnv(c *v1.Container, e v1.EnvVar) {
	for i := range c.Env {
		if c.Env[i].Name == e.Name {
			c.Env[i] = e
			return
		}
	}
	c.Env = append(c.Env, e)
}
