package schedulerconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hetsev/hetsev/pkg/apis/config"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/interference"
)

// The scheduler configurations the manifests deploy are read as the
// scheduler reads them: their HetsevGPUShare arguments, the defaults
// spelt out, and the fitted co-location model.
func TestLoadFileReadsTheManifests(t *testing.T) {
	for path, mode := range map[string]string{
		"../../manifests/scheduler-config.yaml":     v1alpha1.GPUModeAnnotations,
		"../../manifests/dra/scheduler-config.yaml": v1alpha1.GPUModeDRA,
	} {
		a, err := LoadFile(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		want := gpuinventory.Choice{Fit: gpuinventory.FitWorst, MaxBusyShare: 1, Consolidate: true}
		if a.Choice() != want || a.GPUMode != mode || *a.InterferenceWeight != 0.5 || a.Placer().Colocation.Source != interference.FittedSource {
			t.Errorf("%s: choice %+v, gpuMode %s, weight %v, model %s; want %+v, %s, 0.5, fitted", path, a.Choice(), a.GPUMode, *a.InterferenceWeight, a.Placer().Colocation.Source, want, mode)
		}
	}
}

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "scheduler-config.yaml")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const header = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

// A profile that gives HetsevGPUShare no arguments takes the defaults,
// and arguments left out take theirs.
func TestLoadFileDefaults(t *testing.T) {
	a, err := LoadFile(writeConfig(t, header+"profiles:\n  - schedulerName: hetsev-scheduler\n"))
	if err != nil || a.Choice() != DefaultGPUShareArgs().Choice() {
		t.Errorf("no pluginConfig: %+v, %v; want the defaults %+v", a.Choice(), err, DefaultGPUShareArgs().Choice())
	}
	a, err = LoadFile(writeConfig(t, header+"profiles:\n  - schedulerName: hetsev-scheduler\n    pluginConfig:\n      - name: HetsevGPUShare\n        args:\n          antiAffinity: Soft\n          maxBusyShare: 0\n"))
	if err != nil || a.AntiAffinity != config.AntiAffinitySoft || *a.MaxBusyShare != 0 || a.Fit != config.FitWorst || !*a.Consolidate {
		t.Errorf("soft, no cap: %+v, %v", a.HetsevGPUShareArgs, err)
	}
}

// Errors name the file and what is wrong where.
func TestLoadFileErrors(t *testing.T) {
	profile := "profiles:\n  - schedulerName: hetsev-scheduler\n    pluginConfig:\n"
	for content, want := range map[string]string{
		"kind: Pod\n":             "want kubescheduler.config.k8s.io/v1, KubeSchedulerConfiguration",
		header + "profilez: []\n": "unknown field",
		header + "profiles:\n  - schedulerName: other\n":                                                        "profiles: no profile with schedulerName hetsev-scheduler",
		header + profile + "      - name: HetsevGPUShare\n      - name: HetsevGPUShare\n":                       "profiles[0].pluginConfig[1].name: a second entry for HetsevGPUShare",
		header + profile + "      - name: HetsevGPUShare\n        args:\n          kind: HetsevFairQueueArgs\n": "profiles[0].pluginConfig[0].args.kind",
		header + profile + "      - name: HetsevGPUShare\n        args:\n          interferenceWeight: 2\n":     "profiles[0].pluginConfig[0].args.interferenceWeight",
	} {
		path := writeConfig(t, content)
		_, err := LoadFile(path)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: LoadFile = %v, want an error naming %s and %q", content, err, path, want)
		}
	}
	if _, err := LoadFile("/nonexistent/scheduler-config.yaml"); err == nil || !strings.Contains(err.Error(), "/nonexistent/scheduler-config.yaml") {
		t.Errorf("absent file: %v", err)
	}
}
