//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	e2econfig "github.com/hetsev/hetsev/hack/e2e/config"
	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/catalog"
	"github.com/hetsev/hetsev/pkg/gpuinventory"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// realNode is one kubelet with its containerd in the network namespace
// hetsev-e2e-node<i> that hack/e2e/run.sh created.
type realNode struct {
	Name   string
	Index  int
	IP     string
	Dir    string
	Labels map[string]string
	// GPUType is the GPU type the node simulates.
	GPUType catalog.GPUType

	vars map[string]string
	// owner is the test the node lives for: a program started again
	// after a fault runs until it ends.
	owner      *testing.T
	containerd *exec.Cmd
	kubelet    *exec.Cmd
	kubeProxy  *exec.Cmd
}

// netns is the node's network namespace.
func (n *realNode) netns() string { return fmt.Sprintf("hetsev-e2e-node%d", n.Index) }

// socket is containerd's CRI and API socket.
func (n *realNode) socket() string { return filepath.Join(n.Dir, "containerd", "containerd.sock") }

// newRealNode fills the node's configuration from hack/e2e/config into
// E2E_DIR/<name> and writes its kubeconfig; it starts nothing.
func newRealNode(t *testing.T, cp *cluster.ControlPlane, index int, labels map[string]string) *realNode {
	t.Helper()
	env := addresses(t)
	name := fmt.Sprintf("node%d", index)
	n := &realNode{Name: name, Index: index, IP: env["NODE_IP_PREFIX"] + strconv.Itoa(index),
		Dir: filepath.Join(e2eDir(t), name), Labels: labels, owner: t}
	var kv []string
	for k, v := range labels {
		kv = append(kv, k+"="+v)
	}
	n.vars = env
	for k, v := range map[string]string{
		"NODE": name, "NODE_IP": n.IP, "NODE_DIR": n.Dir, "NODE_LABELS": strings.Join(kv, ","),
		"POD_CIDR": fmt.Sprintf("10.88.%d.0/24", index), "POD_GATEWAY": fmt.Sprintf("10.88.%d.1", index),
		"CA_FILE": cp.CAFile(),
	} {
		n.vars[k] = v
	}
	for _, d := range []string{"containerd", "cni", "cdi", "pod-logs", "kubelet/plugins", "kubelet/plugins_registry"} {
		if err := os.MkdirAll(filepath.Join(n.Dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	n.render(t, "kubelet-config.yaml", filepath.Join(n.Dir, "kubelet-config.yaml"))
	n.render(t, "containerd-config.toml", filepath.Join(n.Dir, "containerd-config.toml"))
	n.render(t, "cni-bridge.conflist", filepath.Join(n.Dir, "cni", "10-hetsev.conflist"))
	n.render(t, "kube-proxy-config.yaml", filepath.Join(n.Dir, "kube-proxy-config.yaml"))
	if err := cp.WriteNodeKubeconfig(name, filepath.Join(n.Dir, "kubeconfig")); err != nil {
		t.Fatal(err)
	}
	if err := cp.WriteKubeconfigFor("system:kube-proxy", nil, filepath.Join(n.Dir, "kube-proxy.kubeconfig")); err != nil {
		t.Fatal(err)
	}
	return n
}

// render fills ${NAME} in hack/e2e/config/<tmpl> from the node's values
// and fails on a name it lacks.
func (n *realNode) render(t *testing.T, tmpl, out string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(cluster.RepoRoot(), "hack", "e2e", "config", tmpl))
	if err != nil {
		t.Fatal(err)
	}
	s := os.Expand(string(b), func(k string) string {
		v, ok := n.vars[k]
		if !ok {
			t.Fatalf("%s: ${%s} has no value", tmpl, k)
		}
		return v
	})
	if err := os.WriteFile(out, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// kubeletArgs are hack/e2e/config/kubelet.flags, filled in.
func (n *realNode) kubeletArgs(t *testing.T) []string {
	t.Helper()
	out := filepath.Join(n.Dir, "kubelet.flags")
	n.render(t, "kubelet.flags", out)
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var args []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			args = append(args, l)
		}
	}
	return args
}

// inNetns runs bin/<program> in the node's network namespace, its output
// to <dir>/<program>.log, bin/ first on PATH (containerd finds its shim
// there).
func (n *realNode) inNetns(t *testing.T, program string, args ...string) *exec.Cmd {
	t.Helper()
	return n.inNetnsUntil(t, t, program, args...)
}

// inNetnsUntil is inNetns with the program stopped when owner ends; t
// reports a failure to start it.
func (n *realNode) inNetnsUntil(t, owner *testing.T, program string, args ...string) *exec.Cmd {
	t.Helper()
	// Appended: a program started again after a fault keeps the log of
	// its first run.
	logf, err := os.OpenFile(filepath.Join(n.Dir, program+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	// nsenter joins the network namespace only: `ip netns exec` would also
	// remount /sys in a new mount namespace, hiding the cgroup mounts the
	// kubelet needs.
	cmd := exec.Command("nsenter", append([]string{"--net=/run/netns/" + n.netns(), filepath.Join(cluster.BinDir(), program)}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "PATH="+cluster.BinDir()+":"+os.Getenv("PATH"))
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s on %s: %v", program, n.Name, err)
	}
	owner.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logf.Close()
	})
	return cmd
}

// ctr runs bin/ctr against the node's containerd in namespace k8s.io.
func (n *realNode) ctr(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(cluster.BinDir(), "ctr"),
		append([]string{"--address", n.socket(), "-n", "k8s.io"}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// start runs containerd, imports every image archive (pause first), then
// runs the kubelet.
func (n *realNode) start(t *testing.T, ctx context.Context, archives []string) {
	t.Helper()
	n.startContainerd(t, ctx)
	for _, a := range archives {
		if out, err := n.ctr(ctx, "images", "import", "--platform", "linux/"+runtime.GOARCH, a); err != nil {
			t.Fatalf("%s: importing %s: %v\n%s", n.Name, a, err, out)
		}
	}
	n.kubelet = n.inNetns(t, "kubelet", n.kubeletArgs(t)...)
}

// startKubeProxy runs kube-proxy in the node's namespace and waits for its
// health check (on the node IP), which passes once it has programmed the
// Services it read.
func (n *realNode) startKubeProxy(ctx context.Context, t *testing.T) {
	t.Helper()
	n.kubeProxy = n.inNetns(t, "kube-proxy", "--config", filepath.Join(n.Dir, "kube-proxy-config.yaml"))
	url := "http://" + net.JoinHostPort(n.IP, "10256") + "/healthz"
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("%s: kube-proxy not healthy at %s within a minute (see %s)", n.Name, url, filepath.Join(n.Dir, "kube-proxy.log"))
	}
}

// startContainerd runs containerd in the node's namespace, until the
// node's test ends (also when started again after a fault, from a
// subtest t), and waits until it answers.
func (n *realNode) startContainerd(t *testing.T, ctx context.Context) {
	t.Helper()
	n.containerd = n.inNetnsUntil(t, n.owner, "containerd", "--config", filepath.Join(n.Dir, "containerd-config.toml"))
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := n.ctr(ctx, "version")
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: containerd did not answer within a minute (see %s)", n.Name, filepath.Join(n.Dir, "containerd.log"))
	}
}

// waitReady waits until the Node reports Ready and returns how long that
// took from now.
func waitNodeReady(ctx context.Context, t *testing.T, c kubernetes.Interface, name string, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		node, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == v1.NodeReady {
				return cond.Status == v1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("node %s not Ready within %v: %v", name, timeout, err)
	}
	return time.Since(start)
}

// gpuLabels are the labels GPU Feature Discovery puts on a server with
// count GPUs of type g, and the GPU pool label (the manifests' scheduler
// configuration manages the pool's nodes only). The kubelet sets them
// (--node-labels), as GFD's labels are there before hetsev schedules. No
// nvidia.com/gpu capacity: on hetsev's pool NVIDIA's device plugin is off
// (the GPU Operator's nvidia.com/gpu.deploy.device-plugin=false), and
// hetsev's pods share GPUs by annotation or ResourceClaim.
func gpuLabels(g catalog.GPUType, count int) map[string]string {
	return map[string]string{
		gpuinventory.LabelGPUProduct: g.ProductLabel,
		gpuinventory.LabelGPUCount:   strconv.Itoa(count),
		gpuinventory.LabelGPUMemory:  strconv.FormatInt(g.MemoryMiB, 10),
		v1alpha1.LabelGPUPool:        v1alpha1.GPUPoolValue,
	}
}

// addresses reads hack/e2e/config/addresses.env.
func addresses(t *testing.T) map[string]string {
	t.Helper()
	vars, err := e2econfig.ReadEnv(filepath.Join(cluster.RepoRoot(), "hack", "e2e", "config", "addresses.env"))
	if err != nil {
		t.Fatal(err)
	}
	return vars
}

// e2eDir is where nodes keep their state (E2E_DIR, set by hack/e2e/run.sh).
func e2eDir(t *testing.T) string {
	t.Helper()
	d := os.Getenv("E2E_DIR")
	if d == "" {
		t.Skip("E2E_DIR is unset: run through `make e2e` (hack/e2e/run.sh), which creates the bridge and namespaces")
	}
	return d
}
