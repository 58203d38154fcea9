// Package pluginargs decodes hetsev's versioned scheduler-plugin arguments
// from a KubeSchedulerConfiguration's pluginConfig.
package pluginargs

import (
	"bytes"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// Decode fills into (a pointer to the plugin's Args struct) from what the
// scheduler passes a plugin factory: nil when the profile has no pluginConfig
// for the plugin (into is left as is), otherwise the raw args as
// *runtime.Unknown, since the scheduler's scheme does not know hetsev's kinds.
// Callers handle a value of their own typed Args themselves. Unknown fields are errors, so a
// misspelt field is not silently ignored. Errors are prefixed with
// pluginConfig[<plugin>].args.
func Decode(plugin string, obj runtime.Object, into any) error {
	prefix := fmt.Sprintf("pluginConfig[%s].args", plugin)
	switch o := obj.(type) {
	case nil:
		return nil
	case *runtime.Unknown:
		raw, err := yaml.YAMLToJSON(o.Raw)
		if err != nil {
			return fmt.Errorf("%s: %w", prefix, err)
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || string(raw) == "null" {
			return nil
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(into); err != nil {
			return fmt.Errorf("%s: %w", prefix, err)
		}
		return nil
	default:
		return fmt.Errorf("%s: want %T, got %T", prefix, into, obj)
	}
}

// Parse is a plugin's ParseArgs: a value of its own *Args type is taken as
// is, anything else goes through Decode; then the defaults are applied and
// the arguments validated.
func Parse[T any, P interface {
	*T
	SetDefaults()
	Validate() error
}](plugin string, obj runtime.Object) (T, error) {
	var a T
	if typed, ok := obj.(P); ok {
		a = *typed
	} else if err := Decode(plugin, obj, &a); err != nil {
		var zero T
		return zero, err
	}
	P(&a).SetDefaults()
	return a, P(&a).Validate()
}

// ValidateTypeMeta is the start of a plugin's Args.Validate: the path
// pluginConfig[<plugin>].args and an error for each of apiVersion and kind
// that is not the plugin's (wantAPIVersion, wantKind).
func ValidateTypeMeta(plugin, apiVersion, kind, wantAPIVersion, wantKind string) (*field.Path, field.ErrorList) {
	path := field.NewPath("pluginConfig").Key(plugin).Child("args")
	var errs field.ErrorList
	if apiVersion != wantAPIVersion {
		errs = append(errs, field.NotSupported(path.Child("apiVersion"), apiVersion, []string{wantAPIVersion}))
	}
	if kind != wantKind {
		errs = append(errs, field.NotSupported(path.Child("kind"), kind, []string{wantKind}))
	}
	return path, errs
}
