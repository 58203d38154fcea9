package kubectlhetsev

import (
	"os/exec"
	"strings"
	"testing"
)

// kubectl-hetsev builds without kube-scheduler: of k8s.io/kubernetes it
// links only the scheduler's configuration types, which hetsev's plugin
// arguments (pkg/apis/config) name. The scheduler framework, its plugins
// and its command, minutes of build, stay out, so that the plugin builds
// in a fraction of hetsev-scheduler's time.
func TestPluginBuildsWithoutKubeScheduler(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/hetsev/hetsev/cmd/kubectl-hetsev").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	allowed := map[string]bool{"k8s.io/kubernetes/pkg/scheduler/apis/config": true}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "k8s.io/kubernetes/") && !allowed[p] {
			t.Errorf("kubectl-hetsev depends on %s", p)
		}
	}
}
