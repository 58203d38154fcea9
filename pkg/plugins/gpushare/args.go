package gpushare

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hetsev/hetsev/pkg/apis/config"
	configv1 "github.com/hetsev/hetsev/pkg/apis/config/v1"
	"github.com/hetsev/hetsev/pkg/apis/config/validation"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/interference"
	"github.com/hetsev/hetsev/pkg/placement"
)

// The plugin's arguments are config.HetsevGPUShareArgs, registered in the
// kube-scheduler's scheme (pkg/apis/config/scheme): in a
// KubeSchedulerConfiguration profile,
//
//	pluginConfig:
//	  - name: HetsevGPUShare
//	    args:
//	      apiVersion: kubescheduler.config.k8s.io/v1   # optional
//	      kind: HetsevGPUShareArgs                     # optional
//	      antiAffinity: Hard   # or Soft
//	      fit: WorstFit        # or BestFit
//	      interferenceWeight: 0.5
//
// The scheduler decodes them (unknown fields are errors), fills missing
// fields with the defaults of pkg/apis/config/v1 (the paper's behaviour, and
// DefaultInterferenceWeight) and hands New the typed result.

// DefaultInterferenceWeight is our choice, not the paper's
// (placement.DefaultInterferenceWeight, dimensionless).
const DefaultInterferenceWeight = configv1.DefaultGPUShareInterferenceWeight

// argsPath is where the arguments are in the configuration; validation
// errors name fields under it.
var argsPath = field.NewPath("pluginConfig").Key(Name).Child("args")

// Args are HetsevGPUShare's arguments as New uses them: the scheduler's
// decoded, defaulted and validated config.HetsevGPUShareArgs.
type Args struct {
	config.HetsevGPUShareArgs
}

// ParseArgs checks what the scheduler passes to New: its decoded and
// defaulted *config.HetsevGPUShareArgs, or nil, which takes the defaults.
// Any other type is an error naming it; invalid values are an error naming
// every bad field (pkg/apis/config/validation).
func ParseArgs(obj runtime.Object) (Args, error) {
	var args Args
	typed, ok := obj.(*config.HetsevGPUShareArgs)
	switch {
	case ok && typed != nil:
		args.HetsevGPUShareArgs = *typed.DeepCopy()
	case ok || obj == nil:
		var v configv1.HetsevGPUShareArgs
		configv1.SetObjectDefaults_HetsevGPUShareArgs(&v)
		if err := configv1.Convert_v1_HetsevGPUShareArgs_To_config_HetsevGPUShareArgs(&v, &args.HetsevGPUShareArgs, nil); err != nil {
			return args, err
		}
	default:
		return args, fmt.Errorf("%s: want args of type %T, got %T", argsPath, typed, obj)
	}
	return args, validation.ValidateHetsevGPUShareArgs(argsPath, &args.HetsevGPUShareArgs).ToAggregate()
}

// Choice is what the arguments mean for choosing a GPU.
func (a Args) Choice() gpuinventory.Choice {
	return gpuinventory.Choice{Fit: gpuinventory.Fit(a.Fit), SoftAntiAffinity: a.AntiAffinity == config.AntiAffinitySoft}
}

func (a Args) placer() placement.Placer {
	w := float64(DefaultInterferenceWeight)
	if a.InterferenceWeight != nil {
		w = *a.InterferenceWeight
	}
	return placement.Placer{Choice: a.Choice(), InterferenceWeight: w, Colocation: interference.FittedColocation()}
}
