package scaler

import (
	"testing"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// spec.modelScope Cluster annotates the pods hetsev.io/model-scope=cluster
// and counts free slots with a cluster-wide identity; Namespace (the
// default) writes no annotation, even one the template carries, and scopes
// the identity to the ModelService's namespace.
func TestModelScopeAnnotation(t *testing.T) {
	for _, c := range []struct {
		scope, annotation, identity string
	}{
		{"", "", "default/resnet50"},
		{v1alpha1.ModelScopeNamespace, "", "default/resnet50"},
		{v1alpha1.ModelScopeCluster, v1alpha1.ModelScopeClusterValue, "resnet50"},
	} {
		ms := resnet()
		ms.Spec.ModelScope = c.scope
		ms.Spec.Template.Annotations = map[string]string{v1alpha1.AnnotationModelScope: "cluster"}
		if c.scope == v1alpha1.ModelScopeCluster {
			ms.Spec.Template.Annotations = nil
		}
		s, err := validate(ms, defaultCatalog(t), DefaultDefaults)
		if err != nil {
			t.Fatal(err)
		}
		a := desiredDeployment(s, s.types[0], 1).Spec.Template.Annotations
		if got := a[v1alpha1.AnnotationModelScope]; got != c.annotation {
			t.Errorf("modelScope %q: annotation %q, want %q", c.scope, got, c.annotation)
		}
		if got := s.demand(s.types[0]).Identity(); got != c.identity {
			t.Errorf("modelScope %q: identity %q, want %q", c.scope, got, c.identity)
		}
	}
}
