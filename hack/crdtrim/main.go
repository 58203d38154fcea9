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
	spec, err := object(crd, "spec")
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	versions, ok := spec["versions"].([]any)
	if !ok || len(versions) == 0 {
		return fmt.Errorf("%s: no spec.versions list", file)
	}
	for i, v := range versions {
		version, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: spec.versions[%d] is not an object", file, i)
		}
		for _, p := range ps {
			n, err := object(version, "schema", "openAPIV3Schema")
			for _, name := range strings.Split(p, ".") {
				if err == nil {
					n, err = object(n, "properties", name)
				}
			}
			if err != nil {
				return fmt.Errorf("%s: spec.versions[%d]: property %s: %w", file, i, p, err)
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

// object is the object at the keys below n, or an error naming the first
// key that is absent or not an object.
func object(n map[string]any, keys ...string) (map[string]any, error) {
	for _, k := range keys {
		c, ok := n[k]
		if !ok {
			return nil, fmt.Errorf("no %q", k)
		}
		if n, ok = c.(map[string]any); !ok {
			return nil, fmt.Errorf("%q is not an object", k)
		}
	}
	return n, nil
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
