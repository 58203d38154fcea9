package cluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"
)

// PrometheusTarget is one static scrape target: a simulated exporter on
// loopback, with the labels Prometheus' Kubernetes service discovery would
// add (namespace and pod for an Istio sidecar).
type PrometheusTarget struct {
	Job     string
	Address string // host:port on 127.0.0.0/8
	Path    string // default /metrics
	Labels  map[string]string
	// HonorLabels keeps the exporter's own namespace and pod labels, for a
	// simulated exporter that speaks for several pods (like a federation
	// endpoint).
	HonorLabels bool
}

// Prometheus is a running Prometheus server (Debian's prometheus package)
// listening on 127.0.0.1.
type Prometheus struct {
	*Process
	URL string
	api promv1.API
}

// PrometheusBinary returns $PROMETHEUS, or prometheus on PATH; the error says
// how to install it (make prometheus, as .ci/run does).
func PrometheusBinary() (string, error) {
	if p := os.Getenv("PROMETHEUS"); p != "" {
		return p, nil
	}
	p, err := exec.LookPath("prometheus")
	if err != nil {
		return "", fmt.Errorf("no prometheus binary on PATH and $PROMETHEUS unset: run `make prometheus` (installs Debian's prometheus package, as .ci/run does)")
	}
	return p, nil
}

// StartPrometheus runs Prometheus with a fresh TSDB under dir, scraping
// targets every interval, and waits until it is ready.
func StartPrometheus(ctx context.Context, dir string, interval time.Duration, targets []PrometheusTarget) (*Prometheus, error) {
	bin, err := PrometheusBinary()
	if err != nil {
		return nil, err
	}
	cfg, err := prometheusConfig(interval, targets)
	if err != nil {
		return nil, err
	}
	pdir := filepath.Join(dir, "prometheus")
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(pdir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	p, err := StartProcess(ctx, dir, "prometheus", bin,
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(pdir, "data"),
		"--storage.tsdb.retention.time=2h",
		"--web.listen-address="+addr,
		"--log.level=warn")
	if err != nil {
		return nil, err
	}
	pc, err := promapi.NewClient(promapi.Config{Address: "http://" + addr, RoundTripper: &http.Transport{Proxy: nil}})
	if err != nil {
		p.Stop(time.Second)
		return nil, err
	}
	prom := &Prometheus{Process: p, URL: "http://" + addr, api: promv1.NewAPI(pc)}
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{Proxy: nil}}
	defer client.CloseIdleConnections()
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		if exited, err := p.Exited(); exited {
			return false, fmt.Errorf("prometheus exited: %v; log:\n%s", err, p.Tail(20))
		}
		resp, err := client.Get(prom.URL + "/-/ready")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		p.Stop(time.Second)
		return nil, fmt.Errorf("waiting for prometheus: %w", err)
	}
	return prom, nil
}

// prometheusConfig writes a prometheus.yml: one scrape job per Job name.
func prometheusConfig(interval time.Duration, targets []PrometheusTarget) ([]byte, error) {
	type static struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels,omitempty"`
	}
	type job struct {
		JobName       string   `json:"job_name"`
		MetricsPath   string   `json:"metrics_path,omitempty"`
		HonorLabels   bool     `json:"honor_labels,omitempty"`
		StaticConfigs []static `json:"static_configs"`
	}
	jobs := map[string]*job{}
	for _, t := range targets {
		if !strings.HasPrefix(t.Address, "127.") {
			return nil, fmt.Errorf("target %s of job %s is not on 127.0.0.0/8", t.Address, t.Job)
		}
		key := t.Job + "|" + t.Path + fmt.Sprint(t.HonorLabels)
		j := jobs[key]
		if j == nil {
			j = &job{JobName: fmt.Sprintf("%s-%d", t.Job, len(jobs)), MetricsPath: t.Path, HonorLabels: t.HonorLabels}
			jobs[key] = j
		}
		j.StaticConfigs = append(j.StaticConfigs, static{Targets: []string{t.Address}, Labels: t.Labels})
	}
	keys := make([]string, 0, len(jobs))
	for k := range jobs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var list []*job
	for _, k := range keys {
		list = append(list, jobs[k])
	}
	d := interval.String()
	return yaml.Marshal(map[string]any{
		"global":         map[string]string{"scrape_interval": d, "scrape_timeout": d, "evaluation_interval": d},
		"scrape_configs": list,
	})
}

// QueryScalar runs an instant PromQL query and returns the value of its
// single result; an error when the result is empty or not one sample.
func (p *Prometheus) QueryScalar(ctx context.Context, promql string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, _, err := p.api.Query(ctx, promql, time.Time{})
	if err != nil {
		return 0, err
	}
	vec, ok := v.(model.Vector)
	if !ok || len(vec) != 1 {
		return 0, fmt.Errorf("%s: want one sample, got %v", promql, v)
	}
	return float64(vec[0].Value), nil
}
