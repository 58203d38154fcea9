package dra

import (
	"k8s.io/component-base/featuregate"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
)

// Feature gates of kube-scheduler (k8s.io/kubernetes/pkg/features) that
// decide what the structured allocator and its CEL selectors support.
const (
	GateDRAAdminAccess               featuregate.Feature = "DRAAdminAccess"
	GateDRAConsumableCapacity        featuregate.Feature = "DRAConsumableCapacity"
	GateDRADeviceBindingConditions   featuregate.Feature = "DRADeviceBindingConditions"
	GateDRADeviceTaints              featuregate.Feature = "DRADeviceTaints"
	GateDRAListTypeAttributes        featuregate.Feature = "DRAListTypeAttributes"
	GateDRAPartitionableDevices      featuregate.Feature = "DRAPartitionableDevices"
	GateDRAPrioritizedList           featuregate.Feature = "DRAPrioritizedList"
	GateDRAResourceClaimDeviceStatus featuregate.Feature = "DRAResourceClaimDeviceStatus"
)

// AllocatorFeatures is the structured allocator's feature set under the
// feature gates gates, built as kube-scheduler's DynamicResources plugin
// builds it (k8s.io/kubernetes pkg/scheduler/framework/plugins/
// dynamicresources AllocatorFeatures over feature.NewSchedulerFeaturesFromGates),
// so that hetsev's allocations follow the cluster's DRA features: with
// DRADeviceTaints on (the default from Kubernetes 1.36) the allocator
// refuses a device with a NoSchedule or NoExecute taint the claim's
// request does not tolerate. In kube-scheduler gates is
// k8s.io/apiserver/pkg/util/feature.DefaultFeatureGate, where
// k8s.io/kubernetes/pkg/features registers these gates and --feature-gates
// sets them. A gate that gates does not know counts as off; hetsev's
// sharing needs ConsumableCapacity.
func AllocatorFeatures(gates featuregate.FeatureGate) structured.Features {
	return structured.Features{
		AdminAccess:            enabled(gates, GateDRAAdminAccess),
		PrioritizedList:        enabled(gates, GateDRAPrioritizedList),
		PartitionableDevices:   enabled(gates, GateDRAPartitionableDevices),
		DeviceTaints:           enabled(gates, GateDRADeviceTaints),
		DeviceBindingAndStatus: enabled(gates, GateDRADeviceBindingConditions) && enabled(gates, GateDRAResourceClaimDeviceStatus),
		ConsumableCapacity:     enabled(gates, GateDRAConsumableCapacity),
	}
}

// NewCELCache is a cache of compiled DeviceClass and claim selectors for
// Allocate and SelectByClass, kept across scheduling cycles, with the CEL
// features kube-scheduler's DynamicResources plugin enables under gates
// (consumable capacity, list-type attributes; see AllocatorFeatures for
// gates).
func NewCELCache(gates featuregate.FeatureGate) *cel.Cache {
	return cel.NewCache(10, cel.Features{
		EnableConsumableCapacity: enabled(gates, GateDRAConsumableCapacity),
		EnableListTypeAttributes: enabled(gates, GateDRAListTypeAttributes),
	})
}

// enabled is gates.Enabled(f), false when gates is nil or does not know f
// (featuregate's Enabled panics on an unknown feature).
func enabled(gates featuregate.FeatureGate, f featuregate.Feature) (on bool) {
	if gates == nil {
		return false
	}
	defer func() {
		if recover() != nil {
			on = false
		}
	}()
	return gates.Enabled(f)
}
