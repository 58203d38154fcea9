package gpuinventory

import (
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	v1 "k8s.io/api/core/v1"
)

// EnvVisibleDevices is the variable the NVIDIA container runtime reads to
// decide which GPUs a container sees (a comma-separated list of indexes).
const EnvVisibleDevices = "NVIDIA_VISIBLE_DEVICES"

// DefaultRuntimeClassName is the RuntimeClass that runs a container with the
// NVIDIA container runtime, as the NVIDIA GPU Operator names it. The runtime
// is what reads NVIDIA_VISIBLE_DEVICES; since the GPU Operator's v25.10 it
// is no longer the node's default runtime (CDI injects the device plugin's
// GPUs instead), so a pod that selects its GPU through the variable must
// name this class. hetsev-scaler's --gpu-runtime-class defaults to it.
const DefaultRuntimeClassName = "nvidia"

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

// IsVisibleDevicesFromGPUIndex says whether e is NVIDIA_VISIBLE_DEVICES taken
// from the scheduler's GPU index through the downward API.
func IsVisibleDevicesFromGPUIndex(e v1.EnvVar) bool {
	return e.Name == EnvVisibleDevices && e.Value == "" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
		e.ValueFrom.FieldRef.FieldPath == GPUIndexFieldPath
}

// SetGPUAccess gives every container of spec, init containers (sidecars
// included) too, NVIDIA_VISIBLE_DEVICES from the scheduler's GPU index
// (SetVisibleDevices), and sets spec.runtimeClassName to runtimeClass when
// spec names none and runtimeClass is not empty. A container without the
// variable would see whatever its image's environment names, with the NVIDIA
// runtime often every GPU of the node.
func SetGPUAccess(spec *v1.PodSpec, runtimeClass string) {
	for i := range spec.InitContainers {
		SetVisibleDevices(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		SetVisibleDevices(&spec.Containers[i])
	}
	if runtimeClass != "" && (spec.RuntimeClassName == nil || *spec.RuntimeClassName == "") {
		spec.RuntimeClassName = &runtimeClass
	}
}
