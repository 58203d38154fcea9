package scaler

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

// The flags keep hetsev-scaler's names and defaults, and Validate names
// the flag it refuses.
func TestOptionsFlagsAndValidate(t *testing.T) {
	o := NewOptions()
	fs := flag.NewFlagSet("hetsev-scaler", flag.ContinueOnError)
	o.AddFlags(fs)
	for name, want := range map[string]string{
		"kubeconfig": "", "namespace": "", "workers": "2", "gpu-catalog": "",
		"leader-elect": "true", "leader-elect-namespace": "hetsev-system",
		"metrics-bind-address": ":8080", "health-probe-bind-address": ":8081",
		"solver": heterogeneity.SolverExact, "slo-check": heterogeneity.SLOCheckPaper,
		"traffic-split": "true", "kube-api-qps": "50", "kube-api-burst": "100",
		"gpu-mode": v1alpha1.GPUModeAnnotations, "metrics-timeout": "5s", "scheduler-config": "",
		"decision-history": "10", "max-replicas": "100",
	} {
		f := fs.Lookup(name)
		if f == nil {
			t.Errorf("no --%s", name)
			continue
		}
		if f.DefValue != want {
			t.Errorf("--%s default %q, want %q", name, f.DefValue, want)
		}
	}
	if err := o.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	if !reflect.DeepEqual(o.Defaults, DefaultDefaults) {
		t.Errorf("defaults %+v, want DefaultDefaults %+v", o.Defaults, DefaultDefaults)
	}
	for _, args := range [][]string{{"--solver=ilp"}, {"--slo-check=strict"}, {"--workers=0"}, {"--gpu-mode=cdi"}, {"--metrics-timeout=0s"}, {"--metrics-timeout=1h"}, {"--decision-history=-1"}, {"--decision-history=101"}, {"--max-replicas=-1"}, {"--dra-driver=amd"}} {
		o := NewOptions()
		fs := flag.NewFlagSet("hetsev-scaler", flag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		flagName := strings.SplitN(strings.TrimPrefix(args[0], "--"), "=", 2)[0]
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--"+flagName) {
			t.Errorf("%v: error %v, want one naming --%s", args, err, flagName)
		}
	}
}

func TestFlavorsFlag(t *testing.T) {
	if got := serviceWithFlags(t); columnsOf(got) != "T4 T4-busy0.25 T4-busy0.5 V100-32GB V100-32GB-busy0.1 V100-32GB-busy0.25 V100-32GB-busy0.5" {
		t.Errorf("no flags: columns %s, want the default flavors of both types", columnsOf(got))
	}
	if got := serviceWithFlags(t, "--flavors=1"); columnsOf(got) != "T4 V100-32GB" {
		t.Errorf("--flavors=1: columns %s, want whole GPUs only", columnsOf(got))
	}
	o := NewOptions()
	fs := flag.NewFlagSet("hetsev-scaler", flag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--flavors=0.1,0.25,0.5,1"}); err != nil {
		t.Fatal(err)
	}
	if got := o.Defaults.Flavors.String(); got != "0.1,0.25,0.5,1" {
		t.Errorf("--flavors=0.1,0.25,0.5,1: Defaults.Flavors = %s", got)
	}
	o = NewOptions()
	fs = flag.NewFlagSet("hetsev-scaler", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--flavors=0.5,0.1"}); err == nil || !strings.Contains(err.Error(), "0.1 follows 0.5") {
		t.Errorf("--flavors=0.5,0.1: %v, want an error naming 0.1", err)
	}
}

// --seasonal-forecast reaches the policy every ModelService resolves to:
// on by default, off with --seasonal-forecast=false.
func TestSeasonalForecastFlag(t *testing.T) {
	for _, on := range []bool{false, true} {
		var args []string
		if !on {
			args = []string{"--seasonal-forecast=false"}
		}
		if s := serviceWithFlags(t, args...); s.policy.SeasonalForecast != on {
			t.Errorf("flags %v: policy SeasonalForecast %v, want %v", args, s.policy.SeasonalForecast, on)
		}
	}
}

// serviceWithFlags is resnet() resolved with the defaults args set.
func serviceWithFlags(t *testing.T, args ...string) *service {
	t.Helper()
	o := NewOptions()
	fs := flag.NewFlagSet("hetsev-scaler", flag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	s, err := validate(resnet(), defaultCatalog(t), o.Defaults)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestModelThresholdsFlag: by default a ModelService without a saturation
// threshold gets the model's; with --model-thresholds=false, 0.8.
func TestModelThresholdsFlag(t *testing.T) {
	for _, on := range []bool{false, true} {
		var args []string
		if !on {
			args = []string{"--model-thresholds=false"}
		}
		s := serviceWithFlags(t, args...)
		want := 0.8
		if on {
			want = modelThreshold(s.policy, s.types, 8, 0)
		}
		if s.policy.SaturationThreshold != want || (on && want == 0.8) {
			t.Errorf("flags %v: saturation threshold %v, want %v", args, s.policy.SaturationThreshold, want)
		}
	}
}

// TestFlagsRegisterOnTheProcessFlagSet: hetsev-scaler registers its flags
// on the process's flag set, as cmd/scaler does; a package the scaler
// imports that registers one of them in its init (controller-runtime's
// root package registers --kubeconfig) would make the program panic at
// start.
func TestFlagsRegisterOnTheProcessFlagSet(t *testing.T) {
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("registering hetsev-scaler's flags on flag.CommandLine: %v", r)
		}
	}()
	NewOptions().AddFlags(flag.CommandLine)
}

// --dra-driver picks the driver the scaler counts and claims from; without
// the flags the scheduler configuration's driver is taken, and flags that
// disagree with it are refused.
func TestDRADriverFlags(t *testing.T) {
	dir := t.TempDir()
	cfg := func(driver string) string {
		p := filepath.Join(dir, driver+".yaml")
		body := `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: hetsev-scheduler
    pluginConfig:
      - name: HetsevGPUShare
        args:
          gpuMode: dra
          draDriver: ` + driver + "\n"
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		args    []string
		want    string // the driver's name
		cores   bool   // claims request cores
		errPart string
	}{
		{nil, "gpu.nvidia.com", false, ""},
		{[]string{"--dra-driver=hami"}, "hami-core-gpu.project-hami.io", true, ""},
		{[]string{"--dra-driver=hami", "--dra-claim-requests=-"}, "hami-core-gpu.project-hami.io", false, ""},
		{[]string{"--scheduler-config=" + cfg("hami")}, "hami-core-gpu.project-hami.io", true, ""},
		{[]string{"--scheduler-config=" + cfg("hami"), "--dra-driver=hami"}, "hami-core-gpu.project-hami.io", true, ""},
		{[]string{"--scheduler-config=" + cfg("nvidia"), "--dra-driver=hami"}, "", false, "set both alike"},
	} {
		o := NewOptions()
		fs := flag.NewFlagSet("hetsev-scaler", flag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		err := o.Validate()
		if c.errPart != "" {
			if err == nil || !strings.Contains(err.Error(), c.errPart) {
				t.Errorf("%v: error %v, want one saying %q", c.args, err, c.errPart)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		_, cores := o.Defaults.DRADriver.ClaimRequests["cores"]
		if o.Defaults.DRADriver.Name != c.want || cores != c.cores {
			t.Errorf("%v: driver %s, want %s with cores requested %v", c.args, o.Defaults.DRADriver, c.want, c.cores)
		}
	}
}
