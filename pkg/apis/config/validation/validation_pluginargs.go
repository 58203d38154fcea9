// Package validation checks hetsev's scheduler-plugin arguments after
// defaulting. The plugins' factories call it, so invalid arguments stop
// hetsev-scheduler at start with each bad field's path. It checks values
// only and reads no file: the plugin's factory loads a file the arguments
// name.
package validation

import (
	"math"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hetsev/hetsev/pkg/apis/config"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/dra"
)

// Bounds of HetsevFairQueueArgs.
const (
	// MaxFairQueueK is the most classes k-means groups pending pods into.
	MaxFairQueueK = 16
	// MaxFairQueueBeta is the longest round, in pods.
	MaxFairQueueBeta = 10000
)

// ValidateHetsevFairQueueArgs returns every field of args out of its bounds
// (K in 1..MaxFairQueueK, Beta in 1..MaxFairQueueBeta), under path (the
// args' path in the configuration, e.g. pluginConfig[HetsevFairQueue].args).
func ValidateHetsevFairQueueArgs(path *field.Path, args *config.HetsevFairQueueArgs) field.ErrorList {
	var errs field.ErrorList
	if args.K < 1 || args.K > MaxFairQueueK {
		errs = append(errs, field.Invalid(path.Child("k"), args.K, "must be between 1 and 16"))
	}
	if args.Beta < 1 || args.Beta > MaxFairQueueBeta {
		errs = append(errs, field.Invalid(path.Child("beta"), args.Beta, "must be between 1 and 10000"))
	}
	return errs
}

// ValidateHetsevGPUShareArgs returns every invalid field of args under path
// (e.g. pluginConfig[HetsevGPUShare].args): AntiAffinity must be Hard or
// Soft, Fit WorstFit or BestFit, InterferenceWeight, when set, in 0..1,
// MaxBusyShare, when set, finite and >= 0, and GPUMode annotations or dra.
// InterferenceModelFile is not read here: gpushare.ParseArgs loads it and
// names the field in its error.
func ValidateHetsevGPUShareArgs(path *field.Path, args *config.HetsevGPUShareArgs) field.ErrorList {
	var errs field.ErrorList
	if args.AntiAffinity != config.AntiAffinityHard && args.AntiAffinity != config.AntiAffinitySoft {
		errs = append(errs, field.NotSupported(path.Child("antiAffinity"), args.AntiAffinity, []string{config.AntiAffinityHard, config.AntiAffinitySoft}))
	}
	if fits := []string{config.FitWorst, config.FitBest}; args.Fit != fits[0] && args.Fit != fits[1] {
		errs = append(errs, field.NotSupported(path.Child("fit"), args.Fit, fits))
	}
	if w := args.InterferenceWeight; w != nil && !(*w >= 0 && *w <= 1) {
		errs = append(errs, field.Invalid(path.Child("interferenceWeight"), *w, "must be between 0 and 1"))
	}
	if c := args.MaxBusyShare; c != nil && !(*c >= 0 && !math.IsInf(*c, 1)) {
		errs = append(errs, field.Invalid(path.Child("maxBusyShare"), *c, "must be a finite number >= 0 (0: no cap)"))
	}
	if !v1alpha1.IsGPUMode(args.GPUMode) {
		errs = append(errs, field.NotSupported(path.Child("gpuMode"), args.GPUMode, v1alpha1.GPUModes()))
	}
	if _, err := DRADriverOf(args).Driver(); err != nil {
		errs = append(errs, field.Invalid(path.Child("draDriver"), args.DRADriver, err.Error()))
	}
	return errs
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
