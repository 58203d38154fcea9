package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// StartScheduler runs bin/hetsev-scheduler with manifests/scheduler-config.yaml,
// pointed at the control plane, serving /healthz and /metrics on 127.0.0.1.
func StartScheduler(ctx context.Context, cp *ControlPlane, extraArgs ...string) (*Process, error) {
	return StartSchedulerWith(ctx, cp, cp.Kubeconfig, extraArgs...)
}

// StartSchedulerWith is StartScheduler with another kubeconfig (see
// ControlPlane.KubeconfigAs).
func StartSchedulerWith(ctx context.Context, cp *ControlPlane, kubeconfig string, extraArgs ...string) (*Process, error) {
	cfg, err := SchedulerConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return StartSchedulerWithConfig(ctx, cp, v1alpha1.SchedulerName, cfg, extraArgs...)
}

// StartSchedulerWithConfig runs bin/hetsev-scheduler as name (its log is
// <name>.log) with the KubeSchedulerConfiguration cfg.
func StartSchedulerWithConfig(ctx context.Context, cp *ControlPlane, name, cfg string, extraArgs ...string) (*Process, error) {
	path := filepath.Join(cp.Dir, name+"-config.yaml")
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
	return StartProcess(ctx, cp.Dir, name, filepath.Join(BinDir(), "hetsev-scheduler"), args...)
}

// SchedulerConfigFile is the path of the KubeSchedulerConfiguration the
// manifests deploy: manifests/scheduler-config.yaml or, in GPU mode dra,
// manifests/dra/scheduler-config.yaml. hetsev-scaler reads
// HetsevGPUShare's arguments from it (--scheduler-config).
func SchedulerConfigFile(dra bool) string {
	if dra {
		return filepath.Join(RepoRoot(), "manifests", "dra", "scheduler-config.yaml")
	}
	return filepath.Join(RepoRoot(), "manifests", "scheduler-config.yaml")
}

// SchedulerConfig is manifests/scheduler-config.yaml with the given
// kubeconfig and without leader election.
func SchedulerConfig(kubeconfig string) (string, error) {
	return schedulerConfigFile(SchedulerConfigFile(false), kubeconfig)
}

// DRASchedulerConfig is SchedulerConfig in GPU mode dra: manifests/dra/
// scheduler-config.yaml, the config overlays/dra deploys.
func DRASchedulerConfig(kubeconfig string) (string, error) {
	return schedulerConfigFile(SchedulerConfigFile(true), kubeconfig)
}

func schedulerConfigFile(path, kubeconfig string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	cfg := strings.Replace(string(raw), `kubeconfig: ""`, "kubeconfig: "+strconv.Quote(kubeconfig), 1)
	return strings.Replace(cfg, "leaderElect: true", "leaderElect: false", 1), nil
}

// DefaultSchedulerConfig is a KubeSchedulerConfiguration with
// kube-scheduler's default profile only (schedulerName default-scheduler,
// no hetsev plugin), the given kubeconfig and no leader election: the
// control plane's own scheduler, for pods outside hetsev's pool such as
// hetsev's programs installed by the chart.
func DefaultSchedulerConfig(kubeconfig string) string {
	return fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
leaderElection:
  leaderElect: false
profiles:
  - schedulerName: default-scheduler
`, strconv.Quote(kubeconfig))
}

// StartDefaultScheduler runs the control plane's default scheduler
// (DefaultSchedulerConfig) from bin/hetsev-scheduler, which is
// kube-scheduler with hetsev's plugins registered but not enabled in that
// profile; its log is default-scheduler.log.
func StartDefaultScheduler(ctx context.Context, cp *ControlPlane) (*Process, error) {
	return StartSchedulerWithConfig(ctx, cp, "default-scheduler", DefaultSchedulerConfig(cp.Kubeconfig))
}

// WithClientQPS sets the scheduler configuration's API client rate limit
// (qps and burst), as upstream's scheduler_perf does: with the default 50
// queries/s, a burst of pods waits in the binding calls, not in the queue.
func WithClientQPS(cfg string, qps int) string {
	return strings.Replace(cfg, "clientConnection:\n", fmt.Sprintf("clientConnection:\n  qps: %d\n  burst: %d\n", qps, qps), 1)
}

// AdapterOptions tune the metrics adapter for compressed time and choose
// its backend.
type AdapterOptions struct {
	ScrapeInterval string // e.g. "250ms"
	RateWindow     string // in the exporters' clock, e.g. "60s"
	// PrometheusURL selects --backend=prometheus with this server.
	PrometheusURL string
	// Kubeconfig replaces the admin kubeconfig of the lister, delegated
	// authentication and authorisation (see ControlPlane.KubeconfigAs).
	Kubeconfig string
	// ExtraArgs are appended to the flags.
	ExtraArgs []string
}

// StartAdapter runs bin/hetsev-metrics-adapter on 127.0.0.1 and registers it
// with the aggregation layer (RegisterAPIService): a Service of type
// ExternalName pointing at localhost (Endpoints may not hold loopback IPs)
// and APIServices for custom.metrics.k8s.io v1beta1 and v1beta2, created
// first so that the adapter, started with --cert-self-signed as the
// manifests run it, writes its CA into their caBundle at start; it returns
// once the aggregator has verified the adapter's certificate.
func StartAdapter(ctx context.Context, cp *ControlPlane, o AdapterOptions) (*Process, int, error) {
	port, err := freePort()
	if err != nil {
		return nil, 0, err
	}
	kc := cp.Kubeconfig
	if o.Kubeconfig != "" {
		kc = o.Kubeconfig
	}
	args := []string{
		"--lister-kubeconfig=" + kc,
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir=" + filepath.Join(cp.Dir, "adapter-certs"),
		"--cert-self-signed",
		"--cert-secret-namespace=" + SystemNamespace,
		// The simulated dcgm-exporters run in the system namespace.
		"--dcgm-exporter-namespace=" + SystemNamespace,
	}
	if o.ScrapeInterval != "" {
		args = append(args, "--scrape-interval="+o.ScrapeInterval)
	}
	if o.RateWindow != "" {
		args = append(args, "--rate-window="+o.RateWindow)
	}
	if o.PrometheusURL != "" {
		args = append(args, "--backend=prometheus", "--prometheus-url="+o.PrometheusURL)
	}
	args = append(args, o.ExtraArgs...)
	if err := applyAPIService(ctx, cp, port); err != nil {
		return nil, 0, err
	}
	p, err := StartProcess(ctx, cp.Dir, "hetsev-metrics-adapter", filepath.Join(BinDir(), "hetsev-metrics-adapter"), args...)
	if err != nil {
		return nil, 0, err
	}
	if err := WaitAPIServiceAvailable(ctx, cp); err != nil {
		p.Stop(time.Second)
		return nil, 0, err
	}
	return p, port, nil
}

// StartScaler runs bin/hetsev-scaler against the control plane; extraArgs
// are appended to its flags (e.g. --solver=exact).
func StartScaler(ctx context.Context, cp *ControlPlane, extraArgs ...string) (*Process, error) {
	mport, err := freePort()
	if err != nil {
		return nil, err
	}
	hport, err := freePort()
	if err != nil {
		return nil, err
	}
	// Each scaler has its own webhook certificate directory: the default,
	// under $TMPDIR, is shared by everything on the machine.
	certDir, err := os.MkdirTemp(cp.Dir, "webhook-certs-")
	if err != nil {
		return nil, err
	}
	args := []string{
		"--kubeconfig=" + cp.Kubeconfig,
		"--leader-elect=true",
		"--leader-elect-namespace=" + SystemNamespace,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", mport),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", hport),
		// Off unless a test turns it on: it would listen on all addresses.
		"--webhook-bind-address=0",
		"--webhook-cert-dir=" + certDir,
		"--v=2",
	}
	return StartProcess(ctx, cp.Dir, "hetsev-scaler", filepath.Join(BinDir(), "hetsev-scaler"), append(args, extraArgs...)...)
}
