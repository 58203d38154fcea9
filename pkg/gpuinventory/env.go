package gpuinventory

import (
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	v1 "k8s.io/api/core/v1"
)

// EnvVisibleDevices is the variable the NVIDIA container runtime reads to
// decide which GPUs a container sees (a comma-separated list of indexes).
const EnvVisibleDevices = "NVIDIA_VISIBLE_DEVICES"

// GPUIndexFieldPath is the downward-API path of v1alpha1.AnnotationGPUIndex. The
// kubelet resolves it when it starts the container; the scheduler's binding
// wrote it together with the node.
const GPUIndexFieldPath = "metadata.annotations['" + v1alpha1.AnnotationGPUIndex + "']"

// VisibleDevicesEnv is NVIDIA_VISIBLE_DEVICES taken from the GPU index the
// scheduler chose, the only form manifests/admission's policy admits.
func VisibleDevicesEnv() v1.EnvVar {
	return v1.EnvVar{
		Name:      EnvVisibleDevices,
		ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: GPUIndexFieldPath}},
	}
}

// VisibleDevicesIndex returns the index of NVIDIA_VISIBLE_DEVICES in env, or
// -1 when the container does not set it.
func VisibleDevicesIndex(env []v1.EnvVar) int {
	for i, e := range env {
		if e.Name == EnvVisibleDevices {
			return i
		}
	}
	return -1
}

// SetVisibleDevices makes c take NVIDIA_VISIBLE_DEVICES from the scheduler's
// GPU index, replacing any value c had (a literal would expose a GPU the
// scheduler did not assign).
func SetVisibleDevices(c *v1.Container) {
	if i := VisibleDevicesIndex(c.Env); i >= 0 {
		c.Env[i] = VisibleDevicesEnv()
		return
	}
	c.Env = append(c.Env, VisibleDevicesEnv())
}
