package scaler

import (
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// Scheme holds the types hetsev-scaler reads and writes through its typed
// client: client-go's, ModelService, and Istio's networking.istio.io/v1
// (VirtualService and DestinationRule of the traffic split).
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	utilruntime.Must(networkingv1.AddToScheme(s))
	return s
}
