package scaler

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// Scheme is the scheme the scaler's event recorder uses: client-go's types;
// ModelServices are unstructured objects, which carry their own kind.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	return s
}

var _ runtime.Object = &unstructured.Unstructured{}
