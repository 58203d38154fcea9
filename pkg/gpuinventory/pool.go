package gpuinventory

import (
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/klog/v2"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// InGPUPool is whether node n is in hetsev's GPU pool: it carries the label
// v1alpha1.LabelGPUPool=v1alpha1.GPUPoolValue. A nil node is not.
func InGPUPool(n *v1.Node) bool {
	return n != nil && n.Labels[v1alpha1.LabelGPUPool] == v1alpha1.GPUPoolValue
}

// GPUPoolToleration tolerates the pool taint,
// v1alpha1.TaintGPUPool=v1alpha1.GPUPoolValue:NoSchedule.
func GPUPoolToleration() v1.Toleration {
	return v1.Toleration{Key: v1alpha1.TaintGPUPool, Operator: v1.TolerationOpEqual, Value: v1alpha1.GPUPoolValue, Effect: v1.TaintEffectNoSchedule}
}

// ToleratesGPUPool is whether tolerations tolerate the pool taint (an
// exact entry, a key-only Exists entry, or an empty-key Exists entry that
// tolerates every taint).
func ToleratesGPUPool(tolerations []v1.Toleration) bool {
	taint := v1.Taint{Key: v1alpha1.TaintGPUPool, Value: v1alpha1.GPUPoolValue, Effect: v1.TaintEffectNoSchedule}
	for i := range tolerations {
		if tolerations[i].ToleratesTaint(klog.Background(), &taint, false) {
			return true
		}
	}
	return false
}

// WithGPUPoolToleration is tolerations with GPUPoolToleration appended
// when they do not tolerate the pool taint yet; tolerations itself is not
// modified.
func WithGPUPoolToleration(tolerations []v1.Toleration) []v1.Toleration {
	if ToleratesGPUPool(tolerations) {
		return tolerations
	}
	out := make([]v1.Toleration, 0, len(tolerations)+1)
	return append(append(out, tolerations...), GPUPoolToleration())
}

// PoolDeviceTaint is the device taint hetsev-scaler's DeviceTaintRules put
// on the GPUs of the pool's nodes in GPU mode dra (the node taint's key,
// value and effect): a ResourceClaim that does not tolerate it, such as one
// of NVIDIA's own DeviceClass that the default scheduler allocates, gets no
// GPU hetsev shares.
func PoolDeviceTaint() resourcev1.DeviceTaint {
	return resourcev1.DeviceTaint{Key: v1alpha1.TaintGPUPool, Value: v1alpha1.GPUPoolValue, Effect: resourcev1.DeviceTaintEffectNoSchedule}
}

// PoolDeviceToleration tolerates PoolDeviceTaint; every hetsev claim
// carries it (GPUClaimSpec).
func PoolDeviceToleration() resourcev1.DeviceToleration {
	return resourcev1.DeviceToleration{Key: v1alpha1.TaintGPUPool, Operator: resourcev1.DeviceTolerationOpEqual, Value: v1alpha1.GPUPoolValue, Effect: resourcev1.DeviceTaintEffectNoSchedule}
}
