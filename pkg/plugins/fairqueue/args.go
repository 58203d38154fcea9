package fairqueue

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hetsev/hetsev/pkg/apis/config"
	configv1 "github.com/hetsev/hetsev/pkg/apis/config/v1"
	"github.com/hetsev/hetsev/pkg/apis/config/validation"
)

// The plugin's arguments are config.HetsevFairQueueArgs, registered in the
// kube-scheduler's scheme (pkg/apis/config/scheme): in a
// KubeSchedulerConfiguration profile,
//
//	pluginConfig:
//	  - name: HetsevFairQueue
//	    args:
//	      apiVersion: kubescheduler.config.k8s.io/v1   # optional
//	      kind: HetsevFairQueueArgs                    # optional
//	      k: 3
//	      beta: 16
//
// The scheduler decodes them (unknown fields are errors), fills zero fields
// with the defaults of pkg/apis/config/v1, and hands New the typed result.

// Defaults (pkg/apis/config/v1): HetSev 4.2 names k and beta but gives no
// values; k = 3 is the default, beta = 16 pods our choice.
const (
	DefaultK    = configv1.DefaultFairQueueK
	DefaultBeta = configv1.DefaultFairQueueBeta
)

// argsPath is where the arguments are in the configuration; validation
// errors name fields under it.
var argsPath = field.NewPath("pluginConfig").Key(Name).Child("args")

// ParseArgs checks what the scheduler passes to New: its decoded and
// defaulted *config.HetsevFairQueueArgs, or nil, which takes the defaults.
// Any other type is an error naming it; invalid values are an error naming
// every bad field (pkg/apis/config/validation).
func ParseArgs(obj runtime.Object) (config.HetsevFairQueueArgs, error) {
	var args config.HetsevFairQueueArgs
	typed, ok := obj.(*config.HetsevFairQueueArgs)
	switch {
	case ok && typed != nil:
		args = *typed
	case ok || obj == nil:
		var v configv1.HetsevFairQueueArgs
		configv1.SetObjectDefaults_HetsevFairQueueArgs(&v)
		if err := configv1.Convert_v1_HetsevFairQueueArgs_To_config_HetsevFairQueueArgs(&v, &args, nil); err != nil {
			return args, err
		}
	default:
		return args, fmt.Errorf("%s: want args of type %T, got %T", argsPath, typed, obj)
	}
	return args, validation.ValidateHetsevFairQueueArgs(argsPath, &args).ToAggregate()
}
