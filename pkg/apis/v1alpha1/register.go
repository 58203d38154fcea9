package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

var (
	// SchemeBuilder registers ModelService and ModelServiceList with a
	// scheme, for typed clients (controller-runtime, client-go's REST
	// clients).
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this group-version's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &ModelService{}, &ModelServiceList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
