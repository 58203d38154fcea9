package cluster

import (
	"context"
	"fmt"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hetsev/hetsev/internal/sim/dradriver"
)

// PublishGPUSlices publishes, for every node of groups, the ResourceSlice
// NVIDIA's DRA driver would publish for its GPUs (dradriver.Slice: memory
// as consumable capacity, allowMultipleAllocations, index and productName
// attributes), as the driver's kubelet plugin does on a real node.
func PublishGPUSlices(ctx context.Context, cp *ControlPlane, groups []NodeGroup) error {
	for _, g := range groups {
		for i := range g.Count {
			s := dradriver.Slice(g.NodeName(i), g.GPUType, g.GPUsPerNode)
			if _, err := cp.Client.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("publishing ResourceSlice %s: %w", s.Name, err)
			}
		}
	}
	return nil
}

// InstallDeviceClass applies hetsev's DeviceClass as overlays/dra installs
// it (manifests/dra/deviceclass.yaml).
func InstallDeviceClass(ctx context.Context, cp *ControlPlane) error {
	objs, err := ReadManifests(filepath.Join(RepoRoot(), "manifests", "dra", "deviceclass.yaml"))
	if err != nil {
		return err
	}
	a, err := NewApplier(cp)
	if err != nil {
		return err
	}
	_, err = a.Apply(ctx, "", objs)
	return err
}
