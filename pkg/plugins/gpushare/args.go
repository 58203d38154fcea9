package gpushare

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hetsev/hetsev/pkg/apis/config"
	configv1 "github.com/hetsev/hetsev/pkg/apis/config/v1"
	"github.com/hetsev/hetsev/pkg/placement"
	"github.com/hetsev/hetsev/pkg/schedulerconfig"
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
//	      gpuPool: true        # only nodes labelled hetsev.io/gpu-pool=true
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
// decoded, defaulted and validated config.HetsevGPUShareArgs with the
// co-location model they name (schedulerconfig.GPUShareArgs, which
// hetsev-scaler reads from the same file for its free slots).
type Args struct {
	schedulerconfig.GPUShareArgs
}

// ParseArgs checks what the scheduler passes to New: its decoded and
// defaulted *config.HetsevGPUShareArgs, or nil, which takes the defaults.
// Any other type is an error naming it; invalid values are an error naming
// every bad field (pkg/apis/config/validation). It then reads the
// co-location model file InterferenceModelFile names (the config API does
// no I/O): a file that is absent or invalid is an error naming the field
// and the file (schedulerconfig.CompleteGPUShareArgs).
func ParseArgs(obj runtime.Object) (Args, error) {
	typed, ok := obj.(*config.HetsevGPUShareArgs)
	var in config.HetsevGPUShareArgs
	switch {
	case ok && typed != nil:
		in = *typed
	case ok || obj == nil:
		in = schedulerconfig.DefaultGPUShareArgs().HetsevGPUShareArgs
	default:
		return Args{}, fmt.Errorf("%s: want args of type %T, got %T", argsPath, typed, obj)
	}
	a, err := schedulerconfig.CompleteGPUShareArgs(argsPath, in)
	return Args{a}, err
}

func (a Args) placer() placement.Placer { return a.Placer() }

// pool is the arg gpuPool; unset is configv1.DefaultGPUSharePool.
func (a Args) pool() bool {
	if a.GPUPool == nil {
		return configv1.DefaultGPUSharePool
	}
	return *a.GPUPool
}
