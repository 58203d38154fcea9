package validation

import (
	"math"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hetsev/hetsev/pkg/apis/config"
)

func TestValidateHetsevFairQueueArgs(t *testing.T) {
	path := field.NewPath("pluginConfig").Key("HetsevFairQueue").Child("args")
	for _, c := range []struct {
		k, beta int32
		want    []string
	}{
		{1, 1, nil},
		{16, 10000, nil},
		{0, 16, []string{"pluginConfig[HetsevFairQueue].args.k"}},
		{17, 10001, []string{"pluginConfig[HetsevFairQueue].args.k", "pluginConfig[HetsevFairQueue].args.beta"}},
		{3, -1, []string{"pluginConfig[HetsevFairQueue].args.beta"}},
	} {
		errs := ValidateHetsevFairQueueArgs(path, &config.HetsevFairQueueArgs{K: c.k, Beta: c.beta})
		if len(errs) != len(c.want) {
			t.Errorf("k=%d beta=%d: %v, want errors at %v", c.k, c.beta, errs, c.want)
			continue
		}
		for i, e := range errs {
			if e.Field != c.want[i] {
				t.Errorf("k=%d beta=%d: error at %s, want %s", c.k, c.beta, e.Field, c.want[i])
			}
		}
	}
}

func TestValidateHetsevGPUShareArgs(t *testing.T) {
	path := field.NewPath("pluginConfig").Key("HetsevGPUShare").Child("args")
	// Validation reads no file: a model file that does not exist passes
	// here (gpushare.ParseArgs refuses it).
	absent := filepath.Join(t.TempDir(), "absent.yaml")
	w := func(f float64) *float64 { return &f }
	for _, c := range []struct {
		args config.HetsevGPUShareArgs
		want []string
	}{
		{config.HetsevGPUShareArgs{AntiAffinity: "Hard", Fit: "WorstFit", InterferenceWeight: w(0.5)}, nil},
		{config.HetsevGPUShareArgs{AntiAffinity: "Soft", Fit: "BestFit", InterferenceWeight: w(0)}, nil},
		{config.HetsevGPUShareArgs{AntiAffinity: "Soft", Fit: "BestFit", InterferenceWeight: w(1)}, nil},
		{config.HetsevGPUShareArgs{AntiAffinity: "hard", Fit: "FirstFit", InterferenceWeight: w(-0.1)}, []string{
			"pluginConfig[HetsevGPUShare].args.antiAffinity", "pluginConfig[HetsevGPUShare].args.fit", "pluginConfig[HetsevGPUShare].args.interferenceWeight"}},
		{config.HetsevGPUShareArgs{AntiAffinity: "Hard", Fit: "WorstFit", InterferenceWeight: w(math.NaN())}, []string{"pluginConfig[HetsevGPUShare].args.interferenceWeight"}},
		{config.HetsevGPUShareArgs{AntiAffinity: "Hard", Fit: "WorstFit", InterferenceModelFile: absent}, nil},
		{config.HetsevGPUShareArgs{AntiAffinity: "Hard", Fit: "WorstFit", MaxBusyShare: w(0)}, nil},
		{config.HetsevGPUShareArgs{AntiAffinity: "Hard", Fit: "WorstFit", MaxBusyShare: w(1.5)}, nil},
		{config.HetsevGPUShareArgs{AntiAffinity: "Hard", Fit: "WorstFit", MaxBusyShare: w(-0.5)}, []string{"pluginConfig[HetsevGPUShare].args.maxBusyShare"}},
		{config.HetsevGPUShareArgs{AntiAffinity: "Hard", Fit: "WorstFit", MaxBusyShare: w(math.NaN())}, []string{"pluginConfig[HetsevGPUShare].args.maxBusyShare"}},
		{config.HetsevGPUShareArgs{AntiAffinity: "Hard", Fit: "WorstFit", MaxBusyShare: w(math.Inf(1))}, []string{"pluginConfig[HetsevGPUShare].args.maxBusyShare"}},
		{config.HetsevGPUShareArgs{AntiAffinity: "Hard", Fit: "WorstFit", GPUMode: "dra"}, nil},
		{config.HetsevGPUShareArgs{AntiAffinity: "Hard", Fit: "WorstFit", GPUMode: "DRA"}, []string{"pluginConfig[HetsevGPUShare].args.gpuMode"}},
		{config.HetsevGPUShareArgs{AntiAffinity: "Hard", Fit: "WorstFit", GPUMode: "-"}, []string{"pluginConfig[HetsevGPUShare].args.gpuMode"}},
		{config.HetsevGPUShareArgs{AntiAffinity: "Hard", Fit: "WorstFit", DRADriver: "hami", DRAClaimRequests: map[string]string{"cores": "30"}, DRADriverName: "gpu.example.com"}, nil},
		{config.HetsevGPUShareArgs{AntiAffinity: "Hard", Fit: "WorstFit", DRADriver: "amd"}, []string{"pluginConfig[HetsevGPUShare].args.draDriver"}},
		{config.HetsevGPUShareArgs{AntiAffinity: "Hard", Fit: "WorstFit", DRADriverName: "GPU_vendor"}, []string{"pluginConfig[HetsevGPUShare].args.draDriverName"}},
		{config.HetsevGPUShareArgs{AntiAffinity: "Hard", Fit: "WorstFit", DRAClaimRequests: map[string]string{"memory": "1Gi", "cores": "lots", "shares": "-1", "a=b": "1"}}, []string{
			"pluginConfig[HetsevGPUShare].args.draClaimRequests[a=b]", "pluginConfig[HetsevGPUShare].args.draClaimRequests[cores]",
			"pluginConfig[HetsevGPUShare].args.draClaimRequests[memory]", "pluginConfig[HetsevGPUShare].args.draClaimRequests[shares]"}},
	} {
		if c.args.GPUMode == "" {
			c.args.GPUMode = "annotations" // as defaulted
		} else if c.args.GPUMode == "-" {
			c.args.GPUMode = "" // not defaulted: refused
		}
		errs := ValidateHetsevGPUShareArgs(path, &c.args)
		if len(errs) != len(c.want) {
			t.Errorf("%+v: %v, want errors at %v", c.args, errs, c.want)
			continue
		}
		for i, e := range errs {
			if e.Field != c.want[i] {
				t.Errorf("%+v: error at %s, want %s", c.args, e.Field, c.want[i])
			}
		}
	}
}
