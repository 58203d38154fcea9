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
//	      interferenceModelFile: /etc/hetsev/interference.yaml  # default "": fitted
//	      maxBusyShare: 1.0    # summed hetsev.io/busy-share per GPU; 0: no cap
//	      consolidate: true    # declared busy share: a GPU in use first
//	      gpuMode: annotations # or dra: allocate hetsev ResourceClaims (dra.go)
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
	// Colocation is the co-location model the rating predicts inflation
	// with: InterferenceModelFile's, or the fitted default when it is empty.
	// ParseArgs sets it; the zero value reads as the fitted default.
	Colocation interference.Colocation
}

// ParseArgs checks what the scheduler passes to New: its decoded and
// defaulted *config.HetsevGPUShareArgs, or nil, which takes the defaults.
// Any other type is an error naming it; invalid values are an error naming
// every bad field (pkg/apis/config/validation). It then reads the
// co-location model file InterferenceModelFile names (the config API does
// no I/O): a file that is absent or invalid is an error naming the field
// and the file.
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
	if err := validation.ValidateHetsevGPUShareArgs(argsPath, &args.HetsevGPUShareArgs).ToAggregate(); err != nil {
		return args, err
	}
	m, err := interference.LoadColocation(args.InterferenceModelFile)
	if err != nil {
		return args, fmt.Errorf("%s: %w", argsPath.Child("interferenceModelFile"), err)
	}
	args.Colocation = m
	return args, nil
}

// Choice is what the arguments mean for choosing a GPU.
// MaxBusyShare unset (nil) is configv1.DefaultGPUShareMaxBusyShare and
// Consolidate unset configv1.DefaultGPUShareConsolidate.
func (a Args) Choice() gpuinventory.Choice {
	c := configv1.DefaultGPUShareMaxBusyShare
	if a.MaxBusyShare != nil {
		c = *a.MaxBusyShare
	}
	consolidate := configv1.DefaultGPUShareConsolidate
	if a.Consolidate != nil {
		consolidate = *a.Consolidate
	}
	return gpuinventory.Choice{Fit: gpuinventory.Fit(a.Fit), SoftAntiAffinity: a.AntiAffinity == config.AntiAffinitySoft, MaxBusyShare: c, Consolidate: consolidate}
}

func (a Args) placer() placement.Placer {
	w := float64(DefaultInterferenceWeight)
	if a.InterferenceWeight != nil {
		w = *a.InterferenceWeight
	}
	m := a.Colocation
	if m.Source == "" && m.Occupancy == nil {
		m = interference.FittedColocation()
	}
	return placement.Placer{Choice: a.Choice(), InterferenceWeight: w, Colocation: m}
}
