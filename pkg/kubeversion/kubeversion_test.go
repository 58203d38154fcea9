package kubeversion

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

func discoveryOf(info *apimachineryversion.Info) *fakediscovery.FakeDiscovery {
	return &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}, FakedServerVersion: info}
}

// Servers older than 1.36 are refused with the version they report;
// 1.36 and later, as managed clusters and test builds report them, pass.
func TestCheckRefusesServersOlderThanTheMinimum(t *testing.T) {
	for _, tc := range []struct {
		name string
		info apimachineryversion.Info
		want string // "" when accepted
	}{
		{"1.30", apimachineryversion.Info{Major: "1", Minor: "30", GitVersion: "v1.30.2"},
			"kube-apiserver v1.30.2 is older than v1.36, the oldest hetsev supports"},
		{"1.34, resource.k8s.io/v1 GA", apimachineryversion.Info{Major: "1", Minor: "34", GitVersion: "v1.34.1"}, "v1.34.1 is older than v1.36"},
		{"1.35 managed", apimachineryversion.Info{Major: "1", Minor: "35+", GitVersion: "v1.35.3-eks-a1b2c3"}, "v1.35.3-eks-a1b2c3 is older than v1.36"},
		{"1.36 emulating 1.33", apimachineryversion.Info{Major: "1", Minor: "36", GitVersion: "v1.36.0", EmulationMajor: "1", EmulationMinor: "33"},
			"kube-apiserver v1.36.0 emulating v1.33 is older than v1.36"},
		{"gitVersion only", apimachineryversion.Info{GitVersion: "v1.29.0"}, "v1.29.0 is older than v1.36"},
		{"1.36", apimachineryversion.Info{Major: "1", Minor: "36", GitVersion: "v1.36.3", EmulationMajor: "1", EmulationMinor: "36"}, ""},
		{"1.36 managed", apimachineryversion.Info{Major: "1", Minor: "36+", GitVersion: "v1.36.1-gke.1200"}, ""},
		{"1.37", apimachineryversion.Info{Major: "1", Minor: "37", GitVersion: "v1.37.0-alpha.1"}, ""},
		// A kube-apiserver built from Go modules without release metadata,
		// as the integration tests' control plane.
		{"test build", apimachineryversion.Info{Major: "1", Minor: "36", GitVersion: "v0.0.0-master+$Format:%H$", EmulationMajor: "1", EmulationMinor: "36"}, ""},
	} {
		err := Check(discoveryOf(&tc.info))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestCheckReportsServersItCannotRead(t *testing.T) {
	d := discoveryOf(nil)
	d.AddReactor("get", "version", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	if err := Check(d); err == nil || !strings.Contains(err.Error(), "asking the kube-apiserver its version: connection refused") {
		t.Errorf("unreachable server: %v", err)
	}
	err := Check(discoveryOf(&apimachineryversion.Info{GitVersion: "unknown"}))
	if err == nil || !strings.Contains(err.Error(), `gitVersion="unknown"`) {
		t.Errorf("unparsable version: %v", err)
	}
}
