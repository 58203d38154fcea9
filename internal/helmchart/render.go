package helmchart

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	chartcommon "helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// Dir is the chart's directory, relative to the repository root.
const Dir = "charts/hetsev"

// ReleaseName is the release name the tests render with (`helm install
// hetsev charts/hetsev`).
const ReleaseName = "hetsev"

// Load reads the chart in dir (a chart directory, as `helm install DIR`).
func Load(dir string) (*chart.Chart, error) {
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", dir, err)
	}
	return ch, nil
}

// ReadValues reads a values file (YAML), as `helm install -f FILE`.
func ReadValues(path string) (map[string]any, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	v, err := loader.LoadValues(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// Render renders ch with values over the chart's own values.yaml, checked
// against values.schema.json, as `helm template` with release ReleaseName:
// the objects of crds/ first, then those of templates/ by file name. An
// error names the values' path (schema) or the template and line.
func Render(ch *chart.Chart, values map[string]any) ([]*unstructured.Unstructured, error) {
	if values == nil {
		values = map[string]any{}
	}
	opts := chartcommon.ReleaseOptions{Name: ReleaseName, Namespace: "default", IsInstall: true, Revision: 1}
	vals, err := chartutil.ToRenderValuesWithSchemaValidation(ch, values, opts, nil, false)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for _, crd := range ch.CRDObjects() {
		o, err := decode(crd.Filename, crd.File.Data)
		if err != nil {
			return nil, err
		}
		objs = append(objs, o...)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		base := filepath.Base(name)
		if strings.HasPrefix(base, "_") || strings.HasSuffix(base, ".txt") {
			continue // helpers and NOTES.txt
		}
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		o, err := decode(name, []byte(files[name]))
		if err != nil {
			return nil, err
		}
		objs = append(objs, o...)
	}
	return objs, nil
}

// decode reads every non-empty document of a multi-document YAML file.
func decode(name string, data []byte) ([]*unstructured.Unstructured, error) {
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(m) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

// Lint runs `helm lint --strict` on the chart in dir with values over its
// own, and returns its findings of severity warning or worse.
func Lint(dir string, values map[string]any) []support.Message {
	if values == nil {
		values = map[string]any{}
	}
	var out []support.Message
	for _, m := range lint.RunAll(dir, values, "default").Messages {
		if m.Severity >= support.WarningSev {
			out = append(out, m)
		}
	}
	return out
}
