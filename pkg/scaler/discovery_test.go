package scaler

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

// TestServesGroupVersion: the Istio kinds are cached only where the API
// server serves them; a group it does not serve is "no", not an error
// (a cache entry for it would fail the manager's start).
func TestServesGroupVersion(t *testing.T) {
	d := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}
	if ok, err := servesGroupVersion(d, "networking.istio.io/v1"); ok || err != nil {
		t.Errorf("without Istio: served %t, err %v; want false, nil", ok, err)
	}
	d.Resources = []*metav1.APIResourceList{{GroupVersion: "networking.istio.io/v1"}}
	if ok, err := servesGroupVersion(d, "networking.istio.io/v1"); !ok || err != nil {
		t.Errorf("with Istio: served %t, err %v; want true, nil", ok, err)
	}
}
