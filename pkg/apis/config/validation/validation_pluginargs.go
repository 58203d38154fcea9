// Package validation checks hetsev's scheduler-plugin arguments after
// defaulting. The plugins' factories call it, so invalid arguments stop
// hetsev-scheduler at start with each bad field's path. It checks values
// only and reads no file: the plugin's factory loads a file the arguments
// name.
package validation

import (
	"maps"
	"math"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hetsev/hetsev/pkg/apis/config"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
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
	errs = append(errs, validateDRADriver(path, args)...)
	return errs
}

// validateDRADriver checks the draDriver fields: a known profile, a
// driver name that is a DNS subdomain, claim requests of capacities other
// than memory with quantities >= 0.
func validateDRADriver(path *field.Path, args *config.HetsevGPUShareArgs) field.ErrorList {
	var errs field.ErrorList
	switch args.DRADriver {
	case "", v1alpha1.DRAProfileNVIDIA, v1alpha1.DRAProfileHAMi:
	default:
		errs = append(errs, field.NotSupported(path.Child("draDriver"), args.DRADriver, []string{v1alpha1.DRAProfileNVIDIA, v1alpha1.DRAProfileHAMi}))
	}
	if n := args.DRADriverName; n != "" {
		for _, msg := range validation.IsDNS1123Subdomain(n) {
			errs = append(errs, field.Invalid(path.Child("draDriverName"), n, msg))
		}
	}
	names := slices.Sorted(maps.Keys(args.DRAClaimRequests))
	for _, name := range names {
		p := path.Child("draClaimRequests").Key(name)
		if name == v1alpha1.DRAMemoryCapacity {
			errs = append(errs, field.Invalid(p, name, "GPU memory is requested per instance, from its hetsev.io/gpu-memory"))
			continue
		}
		if msgs := validation.IsQualifiedName(name); len(msgs) > 0 || strings.ContainsAny(name, ",=") {
			errs = append(errs, field.Invalid(p, name, "not a capacity name"))
			continue
		}
		q, err := resource.ParseQuantity(args.DRAClaimRequests[name])
		if err != nil {
			errs = append(errs, field.Invalid(p, args.DRAClaimRequests[name], err.Error()))
		} else if q.Sign() < 0 {
			errs = append(errs, field.Invalid(p, args.DRAClaimRequests[name], "must not be negative"))
		}
	}
	return errs
}
