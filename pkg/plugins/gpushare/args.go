package gpushare

import (
	"bytes"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
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
}

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
}

// Validate returns every invalid field, with its path in the configuration.
func (a Args) Validate() error {
	path := field.NewPath("pluginConfig").Key(Name).Child("args")
	var errs field.ErrorList
	if a.APIVersion != ArgsAPIVersion {
		errs = append(errs, field.NotSupported(path.Child("apiVersion"), a.APIVersion, []string{ArgsAPIVersion}))
	}
	if a.Kind != ArgsKind {
		errs = append(errs, field.NotSupported(path.Child("kind"), a.Kind, []string{ArgsKind}))
	}
	if a.AntiAffinity != AntiAffinityHard && a.AntiAffinity != AntiAffinitySoft {
		errs = append(errs, field.NotSupported(path.Child("antiAffinity"), a.AntiAffinity, []string{AntiAffinityHard, AntiAffinitySoft}))
	}
	if a.Fit != string(gpuinventory.FitWorst) && a.Fit != string(gpuinventory.FitBest) {
		errs = append(errs, field.NotSupported(path.Child("fit"), a.Fit, []string{string(gpuinventory.FitWorst), string(gpuinventory.FitBest)}))
	}
	return errs.ToAggregate()
}

// Choice is what the arguments mean for choosing a GPU.
func (a Args) Choice() gpuinventory.Choice {
	return gpuinventory.Choice{Fit: gpuinventory.Fit(a.Fit), SoftAntiAffinity: a.AntiAffinity == AntiAffinitySoft}
}

// ParseArgs reads the arguments the scheduler passes to the factory: nil
// when the profile has no pluginConfig for the plugin, otherwise the raw
// args (*runtime.Unknown, since the scheduler's scheme does not know this
// kind). Unknown fields are errors, so a misspelt one is not silently
// ignored; defaults are applied before validation.
func ParseArgs(obj runtime.Object) (Args, error) {
	var a Args
	switch o := obj.(type) {
	case nil:
	case *runtime.Unknown:
		raw, err := yaml.YAMLToJSON(o.Raw)
		if err != nil {
			return Args{}, fmt.Errorf("pluginConfig[%s].args: %w", Name, err)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if len(bytes.TrimSpace(raw)) > 0 && string(bytes.TrimSpace(raw)) != "null" {
			if err := dec.Decode(&a); err != nil {
				return Args{}, fmt.Errorf("pluginConfig[%s].args: %w", Name, err)
			}
		}
	case *Args:
		a = *o
	default:
		return Args{}, fmt.Errorf("pluginConfig[%s].args: want %s %s, got %T", Name, ArgsAPIVersion, ArgsKind, obj)
	}
	a.SetDefaults()
	return a, a.Validate()
}

// GetObjectKind and DeepCopyObject make *Args a runtime.Object, so tests and
// callers can pass typed arguments to New.
func (a *Args) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (a *Args) DeepCopyObject() runtime.Object { c := *a; return &c }
