package scaler

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// The scaler counts free GPU slots from every pod bound to a GPU node,
// not only its own, so it cannot cache pods by label. It caches every
// pod that has not finished, and of each only what its rules read:
// names, labels, annotations, owners, node, scheduler, tolerations,
// resource requests and claims, and the status. A pod's environment,
// command, volumes and probes are most of its size (an Istio-injected
// pod carries the sidecar's), and nothing in the scaler reads them.

// PodCacheFieldSelector leaves finished pods (phase Succeeded or Failed)
// out of the scaler's cache: they hold no GPU, CPU or memory
// (gpuinventory.Terminal), serve nothing and are never replicas that add
// capacity, and in a cluster that runs Jobs they outnumber the rest.
func PodCacheFieldSelector() fields.Selector {
	return fields.AndSelectors(
		fields.OneTermNotEqualSelector("status.phase", string(v1.PodSucceeded)),
		fields.OneTermNotEqualSelector("status.phase", string(v1.PodFailed)),
	)
}

// TrimPod is the scaler's cache transform for pods: managed fields, the
// last-applied-configuration annotation, volumes, ephemeral containers
// and, in every container and init container, the environment, command,
// arguments, volume mounts, probes and lifecycle hooks are dropped. A pod
// read from the cache is therefore not one to write back. Objects other
// than pods only lose their managed fields.
func TrimPod(obj any) (any, error) {
	obj, err := cache.TransformStripManagedFields()(obj)
	if err != nil {
		return nil, fmt.Errorf("pod cache transform: %w", err)
	}
	p, ok := obj.(*v1.Pod)
	if !ok {
		return obj, nil
	}
	delete(p.Annotations, v1.LastAppliedConfigAnnotation)
	p.Spec.Volumes = nil
	p.Spec.EphemeralContainers = nil
	p.Status.EphemeralContainerStatuses = nil
	for i := range p.Spec.InitContainers {
		trimContainer(&p.Spec.InitContainers[i])
	}
	for i := range p.Spec.Containers {
		trimContainer(&p.Spec.Containers[i])
	}
	return p, nil
}

// trimContainer keeps a container's name, image, ports, resources and
// restart policy (a restartable init container is a sidecar whose
// requests count for the whole pod).
func trimContainer(c *v1.Container) {
	c.Command, c.Args, c.WorkingDir = nil, nil, ""
	c.Env, c.EnvFrom = nil, nil
	c.VolumeMounts, c.VolumeDevices = nil, nil
	c.LivenessProbe, c.ReadinessProbe, c.StartupProbe = nil, nil, nil
	c.Lifecycle = nil
}
