package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// StartScheduler runs bin/hetsev-scheduler with manifests/scheduler-config.yaml,
// pointed at the control plane, serving /healthz and /metrics on 127.0.0.1.
func StartScheduler(ctx context.Context, cp *ControlPlane, extraArgs ...string) (*Process, error) {
	raw, err := os.ReadFile(filepath.Join(RepoRoot(), "manifests", "scheduler-config.yaml"))
	if err != nil {
		return nil, err
	}
	cfg := strings.Replace(string(raw), `kubeconfig: ""`, "kubeconfig: "+strconv.Quote(cp.Kubeconfig), 1)
	cfg = strings.Replace(cfg, "leaderElect: true", "leaderElect: false", 1)
	path := filepath.Join(cp.Dir, "scheduler-config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := append([]string{
		"--config=" + path,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--v=2",
	}, extraArgs...)
	return StartProcess(ctx, cp.Dir, "hetsev-scheduler", filepath.Join(BinDir(), "hetsev-scheduler"), args...)
}
