package dra

import (
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
)

// ExtendedResourceBackedByClass is the first extended resource pod
// requests that a DeviceClass of classes backs with DRA devices (its
// spec.extendedResourceName, or the implicit
// deviceclass.resource.kubernetes.io/<class>), with that class; ok is false
// when there is none. Upstream's DynamicResources plugin allocates such a
// request through a claim of its own making; a scheduler profile without
// it can only refuse the pod.
func ExtendedResourceBackedByClass(pod *v1.Pod, classes []*resourceapi.DeviceClass) (resource v1.ResourceName, class string, ok bool) {
	requested := map[v1.ResourceName]bool{}
	add := func(cs []v1.Container) {
		for _, c := range cs {
			for n := range c.Resources.Requests {
				requested[n] = true
			}
			for n := range c.Resources.Limits {
				requested[n] = true
			}
		}
	}
	add(pod.Spec.InitContainers)
	add(pod.Spec.Containers)
	if len(requested) == 0 {
		return "", "", false
	}
	for _, c := range classes {
		names := []v1.ResourceName{v1.ResourceName(resourceapi.ResourceDeviceClassPrefix + c.Name)}
		if c.Spec.ExtendedResourceName != nil {
			names = append(names, v1.ResourceName(*c.Spec.ExtendedResourceName))
		}
		for _, n := range names {
			if requested[n] {
				return n, c.Name, true
			}
		}
	}
	return "", "", false
}
