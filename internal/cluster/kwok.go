package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
)

// KwokNodeAnnotation marks the nodes kwok manages.
const KwokNodeAnnotation = "kwok.x-k8s.io/node"

// PodCIDR is the range kwok assigns pod IPs from when a node has no podCIDR;
// NodeIP is the default node address. Both are loopback so that simulated
// model servers can listen on their pod's address and nothing leaves the host.
const (
	PodCIDR = "127.1.0.0/16"
	NodeIP  = "127.0.0.2"
)

// StartKwok runs the kwok binary against the control plane with the "fast"
// node and pod stages that the kwok module ships, so bound pods turn Running
// with a loopback pod IP within about half a second.
func StartKwok(ctx context.Context, cp *ControlPlane, bin string) (*Process, error) {
	stages := filepath.Join(cp.Dir, "kwok-stages.yaml")
	docs := []string{nodefast.DefaultNodeInit, podfast.DefaultPodReady, podfast.DefaultPodComplete, podfast.DefaultPodDelete}
	for i, d := range docs {
		docs[i] = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(d), "---"))
	}
	if err := os.WriteFile(stages, []byte(strings.Join(docs, "\n---\n")+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("writing kwok stages: %w", err)
	}
	return StartProcess(ctx, cp.Dir, "kwok", bin,
		"--kubeconfig="+cp.Kubeconfig,
		"--config="+stages,
		"--manage-nodes-with-annotation-selector="+KwokNodeAnnotation+"=fake",
		"--cidr="+PodCIDR,
		"--node-ip="+NodeIP,
	)
}
