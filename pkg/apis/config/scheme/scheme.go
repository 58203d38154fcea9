// Package scheme adds hetsev's scheduler-plugin arguments (package config
// and its v1) to the kube-scheduler's scheme, as scheduler-plugins does: the
// scheduler's config loader then decodes pluginConfig args of kind
// HetsevFairQueueArgs and HetsevGPUShareArgs into typed, defaulted objects,
// hands those to the plugins' factories, and shows them on /configz.
// hetsev-scheduler imports it for its side effect.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kubeschedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"

	"github.com/hetsev/hetsev/pkg/apis/config"
	configv1 "github.com/hetsev/hetsev/pkg/apis/config/v1"
)

var (
	// Scheme is the kube-scheduler's own scheme, which the scheduler loads
	// its --config with.
	Scheme = kubeschedulerscheme.Scheme
	// Codecs decode and encode with Scheme, strictly (unknown or duplicate
	// fields are errors), as the scheduler's own Codecs do.
	Codecs = serializer.NewCodecFactory(Scheme, serializer.EnableStrict)
)

func init() {
	AddToScheme(Scheme)
}

// AddToScheme adds the kube-scheduler's configuration types, internal and
// v1, with hetsev's plugin arguments among them, to scheme.
func AddToScheme(scheme *runtime.Scheme) {
	utilruntime.Must(config.AddToScheme(scheme))
	utilruntime.Must(configv1.AddToScheme(scheme))
}
