package scheme_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2/ktesting"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	kubeschedulerv1 "k8s.io/kubernetes/pkg/scheduler/apis/config/v1"

	"github.com/hetsev/hetsev/pkg/apis/config"
	_ "github.com/hetsev/hetsev/pkg/apis/config/scheme"
	"github.com/hetsev/hetsev/pkg/plugins/fairqueue"
	"github.com/hetsev/hetsev/pkg/plugins/gpushare"
)

// load decodes a KubeSchedulerConfiguration file with the kube-scheduler's
// own --config loader.
func load(t *testing.T, cfg string) (*schedconfig.KubeSchedulerConfiguration, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	logger, _ := ktesting.NewTestContext(t)
	return options.LoadConfigFromFile(logger, path)
}

// args are the profile's args of plugin, or nil.
func args(prof schedconfig.KubeSchedulerProfile, plugin string) runtime.Object {
	for _, pc := range prof.PluginConfig {
		if pc.Name == plugin {
			return pc.Args
		}
	}
	return nil
}

const head = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: hetsev-scheduler
    plugins:
      preFilter:
        enabled:
          - name: HetsevFairQueue
          - name: HetsevGPUShare
`

func ptr(f float64) *float64 { return &f }

// TestDecodePluginArgs: the scheduler's loader turns pluginConfig args of
// both plugins into typed, defaulted internal args, whether the args are
// missing, partial, or state apiVersion and kind; the plugins' ParseArgs (as
// New) reject invalid values naming the field's path; unknown fields and
// hetsev's former apiVersion are refused by the loader.
func TestDecodePluginArgs(t *testing.T) {
	defFQ := &config.HetsevFairQueueArgs{K: 3, Beta: 16}
	defGS := &config.HetsevGPUShareArgs{AntiAffinity: "Hard", Fit: "WorstFit", InterferenceWeight: ptr(0.5)}
	for _, c := range []struct {
		name, pluginConfig string
		fq                 *config.HetsevFairQueueArgs
		gs                 *config.HetsevGPUShareArgs
		decodeErr          []string // the loader's error
		invalid            []string // ParseArgs' errors
	}{
		{name: "no pluginConfig", fq: defFQ, gs: defGS},
		{name: "no args", pluginConfig: `
      - name: HetsevFairQueue
      - name: HetsevGPUShare`, fq: defFQ, gs: defGS},
		{name: "partial, no apiVersion or kind", pluginConfig: `
      - name: HetsevFairQueue
        args:
          k: 5
      - name: HetsevGPUShare
        args:
          fit: BestFit
          interferenceWeight: 0`,
			fq: &config.HetsevFairQueueArgs{K: 5, Beta: 16},
			gs: &config.HetsevGPUShareArgs{AntiAffinity: "Hard", Fit: "BestFit", InterferenceWeight: ptr(0)}},
		{name: "apiVersion and kind", pluginConfig: `
      - name: HetsevFairQueue
        args:
          apiVersion: kubescheduler.config.k8s.io/v1
          kind: HetsevFairQueueArgs
          beta: 100
      - name: HetsevGPUShare
        args:
          apiVersion: kubescheduler.config.k8s.io/v1
          kind: HetsevGPUShareArgs
          antiAffinity: Soft`,
			fq: &config.HetsevFairQueueArgs{K: 3, Beta: 100},
			gs: &config.HetsevGPUShareArgs{AntiAffinity: "Soft", Fit: "WorstFit", InterferenceWeight: ptr(0.5)}},
		{name: "invalid values", pluginConfig: `
      - name: HetsevFairQueue
        args:
          k: 17
          beta: -1
      - name: HetsevGPUShare
        args:
          antiAffinity: Sometimes
          fit: FirstFit
          interferenceWeight: 1.5`,
			fq: &config.HetsevFairQueueArgs{K: 17, Beta: -1},
			gs: &config.HetsevGPUShareArgs{AntiAffinity: "Sometimes", Fit: "FirstFit", InterferenceWeight: ptr(1.5)},
			invalid: []string{
				"pluginConfig[HetsevFairQueue].args.k: Invalid value: 17: must be between 1 and 16",
				"pluginConfig[HetsevFairQueue].args.beta: Invalid value: -1: must be between 1 and 10000",
				`pluginConfig[HetsevGPUShare].args.antiAffinity: Unsupported value: "Sometimes": supported values: "Hard", "Soft"`,
				`pluginConfig[HetsevGPUShare].args.fit: Unsupported value: "FirstFit": supported values: "WorstFit", "BestFit"`,
				"pluginConfig[HetsevGPUShare].args.interferenceWeight: Invalid value: 1.5: must be between 0 and 1",
			}},
		{name: "unknown field", pluginConfig: `
      - name: HetsevFairQueue
        args:
          kay: 3`, decodeErr: []string{"decoding args for plugin HetsevFairQueue", `unknown field "kay"`}},
		{name: "former apiVersion", pluginConfig: `
      - name: HetsevGPUShare
        args:
          apiVersion: hetsev.io/v1alpha1
          kind: HetsevGPUShareArgs`, decodeErr: []string{"decoding args for plugin HetsevGPUShare", `no kind "HetsevGPUShareArgs" is registered for version "hetsev.io/v1alpha1"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := head
			if c.pluginConfig != "" {
				cfg += "    pluginConfig:" + c.pluginConfig + "\n"
			}
			got, err := load(t, cfg)
			if len(c.decodeErr) > 0 {
				for _, w := range c.decodeErr {
					if err == nil || !strings.Contains(err.Error(), w) {
						t.Errorf("loader error %v does not say %s", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			prof := got.Profiles[0]
			fq, ok := args(prof, fairqueue.Name).(*config.HetsevFairQueueArgs)
			if !ok {
				t.Fatalf("HetsevFairQueue args %#v, want %#v", args(prof, fairqueue.Name), c.fq)
			}
			if *fq != *c.fq {
				t.Errorf("HetsevFairQueue args %#v, want %#v", fq, c.fq)
			}
			gs, ok := args(prof, gpushare.Name).(*config.HetsevGPUShareArgs)
			if !ok {
				t.Fatalf("HetsevGPUShare args %#v, want %#v", args(prof, gpushare.Name), c.gs)
			}
			if gs.AntiAffinity != c.gs.AntiAffinity || gs.Fit != c.gs.Fit || gs.InterferenceWeight == nil || *gs.InterferenceWeight != *c.gs.InterferenceWeight {
				t.Errorf("HetsevGPUShare args %#v, want %#v", args(prof, gpushare.Name), c.gs)
			}
			_, errFQ := fairqueue.ParseArgs(fq)
			_, errGS := gpushare.ParseArgs(gs)
			var msgs []string
			for _, e := range []error{errFQ, errGS} {
				if e != nil {
					msgs = append(msgs, e.Error())
				}
			}
			all := strings.Join(msgs, "\n")
			if len(c.invalid) == 0 && all != "" {
				t.Errorf("valid args refused: %s", all)
			}
			for _, w := range c.invalid {
				if !strings.Contains(all, w) {
					t.Errorf("errors %q do not say %s", all, w)
				}
			}
		})
	}
}

// TestManifestConfigLoads: manifests/scheduler-config.yaml, which the demo,
// the integration tests and the bench run (internal/cluster.SchedulerConfig),
// and manifests/dra/scheduler-config.yaml (GPU mode dra, overlays/dra) load
// with the scheduler's loader into typed args with their values, which the
// plugins accept.
func TestManifestConfigLoads(t *testing.T) {
	for _, c := range []struct {
		path []string
		mode string
	}{
		{[]string{"scheduler-config.yaml"}, "annotations"},
		{[]string{"dra", "scheduler-config.yaml"}, "dra"},
	} {
		t.Run(filepath.Join(c.path...), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(append([]string{"..", "..", "..", "..", "manifests"}, c.path...)...))
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := load(t, string(raw))
			if err != nil {
				t.Fatal(err)
			}
			checkManifestArgs(t, cfg.Profiles[0], c.mode)
		})
	}
}

func checkManifestArgs(t *testing.T, prof schedconfig.KubeSchedulerProfile, mode string) {
	t.Helper()
	fq, err := fairqueue.ParseArgs(args(prof, fairqueue.Name))
	if err != nil || fq.K != 3 || fq.Beta != 16 {
		t.Errorf("HetsevFairQueue: %+v %v", fq, err)
	}
	gs, err := gpushare.ParseArgs(args(prof, gpushare.Name))
	if err != nil || gs.AntiAffinity != "Hard" || gs.Fit != "WorstFit" || *gs.InterferenceWeight != 0.5 || gs.MaxBusyShare == nil || *gs.MaxBusyShare != 1 || gs.Consolidate == nil || !*gs.Consolidate || gs.GPUMode != mode || gs.GPUPool == nil || !*gs.GPUPool {
		t.Errorf("HetsevGPUShare: %+v %v (want gpuMode %s)", gs, err, mode)
	}
}

// TestConfigzShowsArgs: /configz serves the configuration converted back to
// v1 (k8s.io/kubernetes/cmd/kube-scheduler/app.Run), where both plugins'
// args appear with their kind and defaults.
func TestConfigzShowsArgs(t *testing.T) {
	cfg, err := load(t, head)
	if err != nil {
		t.Fatal(err)
	}
	var ext configv1.KubeSchedulerConfiguration
	if err := kubeschedulerv1.Convert_config_KubeSchedulerConfiguration_To_v1_KubeSchedulerConfiguration(cfg, &ext, nil); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, pc := range ext.Profiles[0].PluginConfig {
		b, err := json.Marshal(pc.Args)
		if err != nil {
			t.Fatal(err)
		}
		got[pc.Name] = string(b)
	}
	for name, want := range map[string]string{
		fairqueue.Name: `{"kind":"HetsevFairQueueArgs","apiVersion":"kubescheduler.config.k8s.io/v1","k":3,"beta":16}`,
		gpushare.Name:  `{"kind":"HetsevGPUShareArgs","apiVersion":"kubescheduler.config.k8s.io/v1","antiAffinity":"Hard","fit":"WorstFit","interferenceWeight":0.5,"maxBusyShare":1,"consolidate":true,"gpuMode":"annotations","gpuPool":false}`,
	} {
		if got[name] != want {
			t.Errorf("%s args on /configz: %s, want %s", name, got[name], want)
		}
	}
}

// TestGPUPoolArg: gpuPool defaults to false (unlabelled nodes of older
// installs keep their pods) and an explicit value is kept.
func TestGPUPoolArg(t *testing.T) {
	for _, c := range []struct {
		name, pluginConfig string
		want               bool
	}{
		{name: "default", want: false},
		{name: "on", want: true, pluginConfig: `
      - name: HetsevGPUShare
        args:
          gpuPool: true`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := head
			if c.pluginConfig != "" {
				cfg += "    pluginConfig:" + c.pluginConfig + "\n"
			}
			got, err := load(t, cfg)
			if err != nil {
				t.Fatal(err)
			}
			gs, ok := args(got.Profiles[0], gpushare.Name).(*config.HetsevGPUShareArgs)
			if !ok || gs.GPUPool == nil || *gs.GPUPool != c.want {
				t.Fatalf("HetsevGPUShare args %#v, want gpuPool %v", args(got.Profiles[0], gpushare.Name), c.want)
			}
		})
	}
}
