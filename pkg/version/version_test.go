package version

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// hetsevImage matches an image of hetsev's own registry, with its tag.
var hetsevImage = regexp.MustCompile(`ghcr\.io/hetsev/([a-z0-9-]+)(:[^\s"'@]*)?`)

// Every manifest (manifests/, the kustomize overlays) names hetsev's
// images at the tag of the VERSION file, the tag `make images` gives them.
func TestManifestImagesAreVERSION(t *testing.T) {
	raw, err := os.ReadFile("../../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	want := ImageTag(strings.TrimSpace(string(raw)))
	found := map[string]bool{}
	for _, dir := range []string{"../../manifests", "../../overlays"} {
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for i, line := range strings.Split(string(b), "\n") {
				for _, m := range hetsevImage.FindAllStringSubmatch(line, -1) {
					found[m[1]] = true
					if tag := strings.TrimPrefix(m[2], ":"); tag != want {
						t.Errorf("%s:%d: image %s has tag %q, want %q (VERSION)", p, i+1, m[0], tag, want)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"hetsev-scheduler", "hetsev-metrics-adapter", "hetsev-scaler"} {
		if !found[p] {
			t.Errorf("no manifest names ghcr.io/hetsev/%s", p)
		}
	}
}
