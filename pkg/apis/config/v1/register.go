package v1

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	schedconfigv1 "k8s.io/kube-scheduler/config/v1"
)

// SchemeGroupVersion is the kube-scheduler's configuration group and
// version, kubescheduler.config.k8s.io/v1, which hetsev's plugin arguments
// join: a pluginConfig entry's args are decoded as kind <plugin name>Args
// of it.
var SchemeGroupVersion = schema.GroupVersion{Group: schedconfigv1.GroupName, Version: "v1"}

var (
	// localSchemeBuilder is the kube-scheduler's own v1 SchemeBuilder, so that
	// hetsev's kinds, defaults and conversions are also in the scheme the
	// scheduler defaults and converts plugin arguments with
	// (GetPluginArgConversionScheme in k8s.io/kubernetes/pkg/scheduler/apis/config/v1).
	localSchemeBuilder = &schedconfigv1.SchemeBuilder
	// AddToScheme adds the kube-scheduler's v1 types and hetsev's, with their
	// defaulting and conversion functions, to a scheme.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&HetsevFairQueueArgs{},
		&HetsevGPUShareArgs{},
	)
	return nil
}

func init() {
	// The generated conversions register themselves
	// (zz_generated.conversion.go).
	localSchemeBuilder.Register(addKnownTypes, RegisterDefaults)
}
