package config

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// SchemeGroupVersion is the kube-scheduler's internal configuration group
// (kubescheduler.config.k8s.io, version __internal), which hetsev's plugin
// arguments join.
var SchemeGroupVersion = schema.GroupVersion{Group: schedconfig.GroupName, Version: runtime.APIVersionInternal}

var (
	// localSchemeBuilder is the kube-scheduler's own internal SchemeBuilder:
	// what is registered here is also in the scheme the scheduler converts
	// plugin arguments with (see k8s.io/kubernetes/pkg/scheduler/apis/config/v1
	// GetPluginArgConversionScheme), not only in the one it decodes with.
	localSchemeBuilder = &schedconfig.SchemeBuilder
	// AddToScheme adds the kube-scheduler's internal types and hetsev's to a
	// scheme.
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
	localSchemeBuilder.Register(addKnownTypes)
}
