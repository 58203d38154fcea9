package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrimMalformed: a CRD file whose shape is not a CRD's is an error
// naming what is wrong, never a panic; a well-formed one loses the
// descriptions under the path and keeps the property's own.
func TestTrimMalformed(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"no spec", "kind: CustomResourceDefinition\n", `no "spec"`},
		{"version not an object", "spec:\n  versions: [v1alpha1]\n", "spec.versions[0] is not an object"},
		{"schema not an object", "spec:\n  versions:\n  - schema: text\n", `"schema" is not an object`},
		{"no such property", "spec:\n  versions:\n  - schema:\n      openAPIV3Schema:\n        properties: {}\n", `no "spec"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "crd.yaml")
			if err := os.WriteFile(f, []byte(c.body), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := trim(f, []string{"spec.template"}); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("trim: %v, want an error containing %q", err, c.want)
			}
		})
	}
	f := filepath.Join(t.TempDir(), "crd.yaml")
	body := "spec:\n  versions:\n  - schema:\n      openAPIV3Schema:\n        properties:\n          spec:\n            properties:\n              template:\n                description: ours\n                properties:\n                  metadata:\n                    description: upstream's\n"
	if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := trim(f, []string{"spec.template"}); err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(out); !strings.Contains(s, "description: ours") || strings.Contains(s, "upstream's") {
		t.Errorf("trimmed file:\n%s\nwant the template's own description kept and its children's dropped", s)
	}
}
