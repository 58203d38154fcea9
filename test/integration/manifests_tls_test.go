package integration

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hetsev/hetsev/internal/cluster"
)

// TestShippedManifestsVerifyTheAdapter: no shipped configuration turns off
// the kube-apiserver's verification of hetsev-metrics-adapter (or of
// anything else): insecureSkipTLSVerify appears in no YAML or template
// under manifests/, overlays/ or charts/ outside comments. (The adapter's
// APIServices get their caBundle from its --cert-self-signed, or from
// cert-manager's cainjector.)
func TestShippedManifestsVerifyTheAdapter(t *testing.T) {
	root := cluster.RepoRoot()
	scanned := 0
	for _, dir := range []string{"manifests", "overlays", "charts"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if os.IsNotExist(err) && path == filepath.Join(root, dir) {
				return filepath.SkipDir // charts/ may not exist
			}
			if err != nil || d.IsDir() {
				return err
			}
			switch filepath.Ext(path) {
			case ".yaml", ".yml", ".tpl", ".json":
			default:
				return nil
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			scanned++
			rel, _ := filepath.Rel(root, path)
			for i, line := range strings.Split(string(raw), "\n") {
				code, _, _ := strings.Cut(line, "#")
				if strings.Contains(strings.ToLower(code), "insecureskiptlsverify") {
					t.Errorf("%s:%d: %s", rel, i+1, strings.TrimSpace(line))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if scanned == 0 {
		t.Fatal("no manifest scanned")
	}
}
