package fairqueue

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hetsev/hetsev/pkg/plugins/pluginargs"
)

// The plugin's arguments, in a KubeSchedulerConfiguration profile:
//
//	pluginConfig:
//	  - name: HetsevFairQueue
//	    args:
//	      apiVersion: hetsev.io/v1alpha1
//	      kind: HetsevFairQueueArgs
//	      k: 3
//	      beta: 16
const (
	ArgsAPIVersion = "hetsev.io/v1alpha1"
	ArgsKind       = "HetsevFairQueueArgs"
)

// Defaults and bounds. HetSev 4.2 names k and beta but gives no values;
// k = 3 is the default, beta = 16 our choice (a round short enough
// that weights follow a burst within a second at the default scheduler's
// pace).
const (
	DefaultK    = 3
	DefaultBeta = 16
	MaxK        = 16
	MaxBeta     = 10000
)

// Args are HetsevFairQueue's arguments; zero fields take the defaults.
type Args struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	// K is the number of classes k-means groups pending pods into (1..16).
	K int `json:"k,omitempty"`
	// Beta is the number of pods per round (1..10000): classes and their
	// median waits are recomputed every Beta pods taken from the queue.
	Beta int `json:"beta,omitempty"`
}

// SetDefaults fills zero fields.
func (a *Args) SetDefaults() {
	if a.APIVersion == "" {
		a.APIVersion = ArgsAPIVersion
	}
	if a.Kind == "" {
		a.Kind = ArgsKind
	}
	if a.K == 0 {
		a.K = DefaultK
	}
	if a.Beta == 0 {
		a.Beta = DefaultBeta
	}
}

// Validate returns every invalid field, with its path in the configuration.
func (a Args) Validate() error {
	path, errs := pluginargs.ValidateTypeMeta(Name, a.APIVersion, a.Kind, ArgsAPIVersion, ArgsKind)
	if a.K < 1 || a.K > MaxK {
		errs = append(errs, field.Invalid(path.Child("k"), a.K, "must be between 1 and 16"))
	}
	if a.Beta < 1 || a.Beta > MaxBeta {
		errs = append(errs, field.Invalid(path.Child("beta"), a.Beta, "must be between 1 and 10000"))
	}
	return errs.ToAggregate()
}

// ParseArgs reads the arguments the scheduler passes to the factory (see
// pluginargs.Parse; *Args is accepted as is), applies the defaults and
// validates them.
func ParseArgs(obj runtime.Object) (Args, error) {
	return pluginargs.Parse[Args](Name, obj)
}

// GetObjectKind makes *Args a runtime.Object, so callers can pass typed
// arguments to New.
func (a *Args) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (a *Args) DeepCopyObject() runtime.Object { c := *a; return &c }
