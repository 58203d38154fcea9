package dradriver

import (
	"fmt"
	"os"
	"path/filepath"

	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// ShippedDeviceClass reads hetsev's DeviceClass as the repository at root
// ships it (manifests/dra/deviceclass.yaml), for tests that select devices
// as a cluster with hetsev installed would.
func ShippedDeviceClass(root string) (*resourcev1.DeviceClass, error) {
	path := filepath.Join(root, "manifests", "dra", "deviceclass.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	class := &resourcev1.DeviceClass{}
	if err := yaml.UnmarshalStrict(raw, class); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if class.Name != v1alpha1.DeviceClassName {
		return nil, fmt.Errorf("%s: DeviceClass %q, want %s", path, class.Name, v1alpha1.DeviceClassName)
	}
	return class, nil
}
