package gpushare

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/interference"
	"github.com/hetsev/hetsev/pkg/placement"
	"github.com/hetsev/hetsev/pkg/plugins/pluginargs"
)

// The plugin's arguments are versioned like the scheduler's own: in a
// KubeSchedulerConfiguration profile,
//
//	pluginConfig:
//	  - name: HetsevGPUShare
//	    args:
//	      apiVersion: hetsev.io/v1alpha1
//	      kind: HetsevGPUShareArgs
//	      antiAffinity: Hard   # or Soft
//	      fit: WorstFit        # or BestFit
//	      interferenceWeight: 0.5
const (
	ArgsAPIVersion = "hetsev.io/v1alpha1"
	ArgsKind       = "HetsevGPUShareArgs"
)

// Anti-affinity modes.
const (
	AntiAffinityHard = "Hard" // never two instances of one model on a GPU (HetSev 4.2)
	AntiAffinitySoft = "Soft" // only when no GPU without the model fits
)

// Args are HetsevGPUShare's arguments; empty fields take the defaults of
// SetDefaults (the paper's behaviour).
type Args struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	// AntiAffinity is Hard (default) or Soft.
	AntiAffinity string `json:"antiAffinity,omitempty"`
	// Fit is WorstFit (default, HetSev 4.2) or BestFit.
	Fit string `json:"fit,omitempty"`
	// InterferenceWeight (0..1, default DefaultInterferenceWeight) is the
	// share of a GPU's score that comes from the predicted latency
	// inflation (pkg/interference) rather than from the fit; 0 is the
	// paper's pure worst fit. A pointer, so an explicit 0 is kept.
	InterferenceWeight *float64 `json:"interferenceWeight,omitempty"`
}

// DefaultInterferenceWeight is our choice, not the paper's
// (placement.DefaultInterferenceWeight).
const DefaultInterferenceWeight = placement.DefaultInterferenceWeight

// SetDefaults fills empty fields.
func (a *Args) SetDefaults() {
	if a.APIVersion == "" {
		a.APIVersion = ArgsAPIVersion
	}
	if a.Kind == "" {
		a.Kind = ArgsKind
	}
	if a.AntiAffinity == "" {
		a.AntiAffinity = AntiAffinityHard
	}
	if a.Fit == "" {
		a.Fit = string(gpuinventory.FitWorst)
	}
	if a.InterferenceWeight == nil {
		w := DefaultInterferenceWeight
		a.InterferenceWeight = &w
	}
}

// Validate returns every invalid field, with its path in the configuration.
func (a Args) Validate() error {
	path, errs := pluginargs.ValidateTypeMeta(Name, a.APIVersion, a.Kind, ArgsAPIVersion, ArgsKind)
	if a.AntiAffinity != AntiAffinityHard && a.AntiAffinity != AntiAffinitySoft {
		errs = append(errs, field.NotSupported(path.Child("antiAffinity"), a.AntiAffinity, []string{AntiAffinityHard, AntiAffinitySoft}))
	}
	if a.Fit != string(gpuinventory.FitWorst) && a.Fit != string(gpuinventory.FitBest) {
		errs = append(errs, field.NotSupported(path.Child("fit"), a.Fit, []string{string(gpuinventory.FitWorst), string(gpuinventory.FitBest)}))
	}
	if w := a.InterferenceWeight; w != nil && !(*w >= 0 && *w <= 1) {
		errs = append(errs, field.Invalid(path.Child("interferenceWeight"), *w, "must be between 0 and 1"))
	}
	return errs.ToAggregate()
}

// Choice is what the arguments mean for choosing a GPU.
func (a Args) Choice() gpuinventory.Choice {
	return gpuinventory.Choice{Fit: gpuinventory.Fit(a.Fit), SoftAntiAffinity: a.AntiAffinity == AntiAffinitySoft}
}

func (a Args) placer() placement.Placer {
	w := DefaultInterferenceWeight
	if a.InterferenceWeight != nil {
		w = *a.InterferenceWeight
	}
	return placement.Placer{Choice: a.Choice(), InterferenceWeight: w, Interference: interference.Default()}
}

// ParseArgs reads the arguments the scheduler passes to the factory (see
// pluginargs.Parse; *Args is accepted as is), applies the defaults and
// validates them.
func ParseArgs(obj runtime.Object) (Args, error) {
	return pluginargs.Parse[Args](Name, obj)
}

// GetObjectKind and DeepCopyObject make *Args a runtime.Object, so tests and
// callers can pass typed arguments to New.
func (a *Args) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (a *Args) DeepCopyObject() runtime.Object {
	c := *a
	if a.InterferenceWeight != nil {
		w := *a.InterferenceWeight
		c.InterferenceWeight = &w
	}
	return &c
}
