package dradriver

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"
)

// Fixture reads pkg/dra/testdata/drivers/<name>.yaml under the repository
// root: the ResourceSlices a real DRA driver publishes, written from its
// source (each file's header names it). Documents of another kind are
// skipped; a field the API does not know is an error naming the file.
func Fixture(root, name string) ([]*resourcev1.ResourceSlice, error) {
	path := filepath.Join(root, "pkg", "dra", "testdata", "drivers", name+".yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*resourcev1.ResourceSlice
	for _, doc := range bytes.Split(raw, []byte("\n---")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		s := &resourcev1.ResourceSlice{}
		if err := yaml.UnmarshalStrict(doc, s); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if s.Kind != "" && s.Kind != "ResourceSlice" {
			continue
		}
		out = append(out, s)
	}
	return out, nil
}
