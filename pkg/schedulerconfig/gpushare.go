package schedulerconfig

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hetsev/hetsev/pkg/apis/config"
	configv1 "github.com/hetsev/hetsev/pkg/apis/config/v1"
	"github.com/hetsev/hetsev/pkg/apis/config/validation"
	"github.com/hetsev/hetsev/pkg/dra"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/interference"
	"github.com/hetsev/hetsev/pkg/placement"
)

// GPUShareName is the plugin's name in a KubeSchedulerConfiguration's
// pluginConfig (pkg/plugins/gpushare.Name).
const GPUShareName = "HetsevGPUShare"

// GPUShareArgs are HetsevGPUShare's arguments as they are used: defaulted
// and validated, with the co-location model their interferenceModelFile
// names loaded.
type GPUShareArgs struct {
	config.HetsevGPUShareArgs
	// Colocation is the co-location model the rating and the inflation
	// limits predict with: InterferenceModelFile's, or the fitted default
	// when it is empty. The zero value reads as the fitted default.
	Colocation interference.Colocation
	// Driver is the DRA driver the draDriver fields configure (gpuMode
	// dra); the zero Driver is dra.NVIDIA.
	Driver dra.Driver
}

// DefaultGPUShareArgs are the arguments of a profile that gives
// HetsevGPUShare none: the defaults of pkg/apis/config/v1
// (SetDefaults_HetsevGPUShareArgs), with the fitted co-location model.
func DefaultGPUShareArgs() GPUShareArgs {
	var v configv1.HetsevGPUShareArgs
	configv1.SetObjectDefaults_HetsevGPUShareArgs(&v)
	var a GPUShareArgs
	// The generated conversion copies fields and returns no error.
	_ = configv1.Convert_v1_HetsevGPUShareArgs_To_config_HetsevGPUShareArgs(&v, &a.HetsevGPUShareArgs, nil)
	a.Colocation = interference.FittedColocation()
	a.Driver = dra.NVIDIA
	return a
}

// CompleteGPUShareArgs validates defaulted arguments (at path, which the
// errors name; pkg/apis/config/validation) and loads the co-location model
// file interferenceModelFile names: an absent or invalid file is an error
// naming the field and the file.
func CompleteGPUShareArgs(path *field.Path, args config.HetsevGPUShareArgs) (GPUShareArgs, error) {
	a := GPUShareArgs{HetsevGPUShareArgs: *args.DeepCopy()}
	if err := validation.ValidateHetsevGPUShareArgs(path, &a.HetsevGPUShareArgs).ToAggregate(); err != nil {
		return a, err
	}
	m, err := interference.LoadColocation(a.InterferenceModelFile)
	if err != nil {
		return a, fmt.Errorf("%s: %w", path.Child("interferenceModelFile"), err)
	}
	a.Colocation = m
	// Validated above.
	d, err := DRADriverOf(&a.HetsevGPUShareArgs).Driver()
	if err != nil {
		return a, fmt.Errorf("%s: %w", path.Child("draDriver"), err)
	}
	a.Driver = d
	return a, nil
}

// Choice is what the arguments mean for choosing a GPU. MaxBusyShare unset
// (nil) is configv1.DefaultGPUShareMaxBusyShare and Consolidate unset
// configv1.DefaultGPUShareConsolidate.
func (a GPUShareArgs) Choice() gpuinventory.Choice {
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

// Placer is the placer HetsevGPUShare admits and rates GPUs with under
// these arguments (placement.Placer.Admit, Pick); its Mode is set per node
// (OnNode).
func (a GPUShareArgs) Placer() placement.Placer {
	w := float64(configv1.DefaultGPUShareInterferenceWeight)
	if a.InterferenceWeight != nil {
		w = *a.InterferenceWeight
	}
	m := a.Colocation
	if m.Source == "" && m.Occupancy == nil {
		m = interference.FittedColocation()
	}
	return placement.Placer{Choice: a.Choice(), InterferenceWeight: w, Colocation: m}
}

// DRADriverOf is args' DRA driver configuration: its profile and the
// overrides args name.
func DRADriverOf(args *config.HetsevGPUShareArgs) dra.DriverConfig {
	c := dra.DriverConfig{Profile: args.DRADriver, Name: args.DRADriverName, GPUType: args.DRAGPUType}
	var reqs []string
	for name, q := range args.DRAClaimRequests {
		reqs = append(reqs, name+"="+q)
	}
	slices.Sort(reqs)
	c.ClaimRequests = strings.Join(reqs, ",")
	return c
}
