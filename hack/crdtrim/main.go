// Command crdtrim drops the descriptions from the schemas of embedded
// Kubernetes types in a CRD file that controller-gen wrote, in place:
// hack/update-codegen.sh runs it on the ModelService CRD so that the pod
// template's schema (PodTemplateSpec's, with upstream's descriptions about
// 400 KB) keeps the CRD under the 262,144 bytes kubectl's client-side
// apply can store in its last-applied annotation, while the ModelService's
// own fields keep their full descriptions (kubectl explain). Upstream's
// descriptions of those fields are in `kubectl explain pod.spec`.
//
// Usage:
//
//	crdtrim -file CRD.yaml -path spec.template [-path ...]
//
// A path is a dotted path of properties under each version's
// openAPIV3Schema; a path that does not exist is an error.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

type paths []string

func (p *paths) String() string     { return strings.Join(*p, ",") }
func (p *paths) Set(v string) error { *p = append(*p, v); return nil }

func main() {
	file := flag.String("file", "", "the CRD file, rewritten in place")
	var ps paths
	flag.Var(&ps, "path", "dotted property path under openAPIV3Schema whose descriptions go (repeatable)")
	flag.Parse()
	if err := trim(*file, ps); err != nil {
		fmt.Fprintln(os.Stderr, "crdtrim:", err)
		os.Exit(1)
	}
}

// trim rewrites file as controller-gen writes it (sigs.k8s.io/yaml: keys
// sorted, the same line wrapping, a leading "---" kept), with the
// descriptions under each path dropped.
func trim(file string, ps []string) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var crd map[string]any
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	spec, _ := crd["spec"].(map[string]any)
	versions, _ := spec["versions"].([]any)
	if len(versions) == 0 {
		return fmt.Errorf("%s: no spec.versions", file)
	}
	for _, v := range versions {
		for _, p := range ps {
			n, _ := v.(map[string]any)["schema"].(map[string]any)
			n, _ = n["openAPIV3Schema"].(map[string]any)
			for _, name := range strings.Split(p, ".") {
				props, _ := n["properties"].(map[string]any)
				n, _ = props[name].(map[string]any)
			}
			if n == nil {
				return fmt.Errorf("%s: no property %s", file, p)
			}
			// The property's own description stays: it is the
			// ModelService's, from the Go field's comment.
			for k, c := range n {
				if k != "description" {
					dropDescriptions(c)
				}
			}
		}
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return err
	}
	if bytes.HasPrefix(raw, []byte("---\n")) {
		out = append([]byte("---\n"), out...)
	}
	return os.WriteFile(file, out, 0o644)
}

// dropDescriptions removes every description: <string> from the schema
// objects under n. A property named "description" is an object, not a
// string, and stays.
func dropDescriptions(n any) {
	switch x := n.(type) {
	case map[string]any:
		if _, ok := x["description"].(string); ok {
			delete(x, "description")
		}
		for _, c := range x {
			dropDescriptions(c)
		}
	case []any:
		for _, c := range x {
			dropDescriptions(c)
		}
	}
}
