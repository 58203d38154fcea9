package scaler

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// --metrics-backend=prometheus takes the metrics adapter's connection
// flags, repeatable headers included, and refuses what cannot connect,
// naming the flag.
func TestMetricsBackendFlags(t *testing.T) {
	parse := func(args ...string) *Options {
		o := NewOptions()
		fs := flag.NewFlagSet("hetsev-scaler", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o.AddFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return o
	}
	o := parse("--metrics-backend=prometheus", "--prometheus-url=https://thanos.monitoring.svc:9091",
		"--prometheus-header=X-Scope-OrgID=tenant-a", "--prometheus-header=X-Other=b", "--rate-window=30s", "--metrics-timeout=3s")
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	p := o.PrometheusOptions()
	if strings.Join(p.Headers, " ") != "X-Scope-OrgID=tenant-a X-Other=b" || p.RateWindow.String() != "30s" || p.Timeout.String() != "3s" {
		t.Errorf("Prometheus options %+v", p)
	}
	for args, want := range map[string]string{
		"--metrics-backend=graphite":   "--metrics-backend",
		"--metrics-backend=prometheus": "--prometheus-url",
		"--metrics-backend=prometheus --prometheus-url=http://p:9090 --prometheus-header=X-Scope-OrgID":        "--prometheus-header",
		"--metrics-backend=prometheus --prometheus-url=http://p:9090 --prometheus-ca-file=/nonexistent/ca.pem": "--prometheus-ca-file",
	} {
		if err := parse(strings.Fields(args)...).Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %s", args, err, want)
		}
	}
	// The custom-metrics backend (the default) needs no Prometheus.
	if err := parse().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}
