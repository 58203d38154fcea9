package server

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/hetsev/hetsev/pkg/adapter/prometheus"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

func parse(t *testing.T, args ...string) *Options {
	t.Helper()
	o := NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	o.Complete()
	return o
}

// Every flag of the command, the adapter's and the API server's, is on the
// flag set, with the adapter's defaults.
func TestFlagsAndDefaults(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	for name, def := range map[string]string{
		"backend":                       "scrape",
		"gpu-mode":                      "annotations",
		"namespace":                     "",
		"rate-window":                   "1m0s",
		"scrape-interval":               "1s",
		"scrape-timeout":                "500ms",
		"scrape-workers":                "16",
		"prometheus-url":                "",
		"prometheus-timeout":            "5s",
		"prometheus-cache-ttl":          "5s",
		"prometheus-namespace-label":    "namespace",
		"prometheus-pod-label":          "pod",
		"prometheus-node-label":         "Hostname",
		"prometheus-gpu-label":          "gpu",
		"prometheus-request-rate-query": prometheus.DefaultRequestRateQuery,
		"prometheus-duration-query":     prometheus.DefaultDurationQuery,
		"prometheus-gpu-util-query":     prometheus.DefaultGPUUtilQuery,
		"prometheus-gpu-memory-query":   prometheus.DefaultGPUMemoryQuery,
	} {
		f := fs.Lookup(name)
		if f == nil {
			t.Errorf("--%s missing", name)
			continue
		}
		if f.DefValue != def {
			t.Errorf("--%s default %q, want %q", name, f.DefValue, def)
		}
	}
	for _, name := range []string{"secure-port", "cert-dir", "tls-cert-file", "lister-kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig"} {
		if fs.Lookup(name) == nil {
			t.Errorf("API server flag --%s missing", name)
		}
	}
	if o.Name != "hetsev-metrics-adapter" {
		t.Errorf("name %q", o.Name)
	}
}

// Complete gives both backends the rate window and turns a cache TTL of 0
// (off, for the flag) into -1 (off, for the Prometheus options).
func TestComplete(t *testing.T) {
	o := parse(t, "--backend=prometheus", "--prometheus-url=http://127.0.0.1:9090", "--rate-window=30s", "--prometheus-cache-ttl=0")
	if o.Scrape.RateWindow != 30*time.Second || o.Prometheus.RateWindow != 30*time.Second {
		t.Errorf("rate windows %v, %v; want 30s", o.Scrape.RateWindow, o.Prometheus.RateWindow)
	}
	if o.Prometheus.CacheTTL != -1 {
		t.Errorf("cache TTL %v, want -1 (off)", o.Prometheus.CacheTTL)
	}
	if err := o.Validate(); err != nil {
		t.Error(err)
	}
	if o := parse(t); o.Prometheus.CacheTTL != prometheus.DefaultCacheTTL {
		t.Errorf("default cache TTL %v", o.Prometheus.CacheTTL)
	}
}

func TestValidate(t *testing.T) {
	if err := parse(t).Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	for _, mode := range []string{v1alpha1.GPUModeAnnotations, v1alpha1.GPUModeDRA} {
		if err := parse(t, "--gpu-mode="+mode).Validate(); err != nil {
			t.Errorf("--gpu-mode=%s: %v", mode, err)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--backend=kafka"}, `--backend "kafka"`},
		{[]string{"--gpu-mode=mig"}, `--gpu-mode "mig": want annotations or dra`},
		{[]string{"--gpu-mode=DRA"}, `--gpu-mode "DRA"`},
		{[]string{"--gpu-mode="}, `--gpu-mode ""`},
		{[]string{"--scrape-workers=0"}, "must be positive"},
		{[]string{"--rate-window=0s"}, "must be positive"},
		{[]string{"--scrape-timeout=-1s"}, "negative"},
		{[]string{"--backend=prometheus"}, "--prometheus-url"},
		{[]string{"--backend=prometheus", "--prometheus-url=http://127.0.0.1:9090", "--rate-window=1500ms"}, "--rate-window"},
	} {
		err := parse(t, tc.args...).Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want one naming %q", tc.args, err, tc.want)
		}
	}
}
