package integration

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/internal/helmchart"
)

// checkMonitoringMetrics asserts that every metric the chart's
// PrometheusRule and Grafana dashboard use (helmchart.MetricNames, with
// monitoring on) is served on the /metrics of hetsev-scheduler,
// hetsev-metrics-adapter or hetsev-scaler of the stack, now or in an
// earlier recordMonitoringMetrics: some series exist only in some states
// (SLO attainment only while it is measured, withheld values only while
// a pod is silent). The stack must have placed pods, decided and withheld
// values by then. It scrapes until all are there or 30 s have passed,
// then names the missing ones.
func (s *stack) checkMonitoringMetrics(ctx context.Context, t *testing.T) {
	t.Helper()
	ch, err := helmchart.Load(filepath.Join(cluster.RepoRoot(), helmchart.Dir))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := helmchart.Render(ch, helmchart.MonitoringValues())
	if err != nil {
		t.Fatal(err)
	}
	names, err := helmchart.MetricNames(objs)
	if err != nil {
		t.Fatal(err)
	}
	adapterClient, err := s.adapterMetricsClient()
	if err != nil {
		t.Fatal(err)
	}
	// missing is from the last scrape of all three programs; the scrapes
	// use ctx, not the poll's, so that the last one is not cut short.
	var missing []string
	var scrapeErr error
	scraped := false
	_ = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		all := map[string]*dto.MetricFamily{}
		for n, f := range s.monitoringSeen {
			all[n] = f
		}
		families, err := s.scrapeAll(ctx, adapterClient)
		if err != nil {
			scrapeErr = err
			return false, nil
		}
		for n, f := range families {
			all[n] = f
		}
		scraped, missing = true, missing[:0]
		for _, n := range names {
			if !helmchart.Exported(n, all) {
				missing = append(missing, n)
			}
		}
		return len(missing) == 0, nil
	})
	if !scraped {
		t.Fatalf("/metrics: %v", scrapeErr)
	}
	for _, n := range missing {
		t.Errorf("the chart's rules or dashboard use %s, which no program's /metrics serves", n)
	}
	if len(missing) == 0 {
		t.Logf("the chart's rules and dashboard use %d metrics, all served: %s", len(names), strings.Join(names, " "))
	}
}

// recordMonitoringMetrics scrapes the three programs' /metrics once and
// keeps the families for checkMonitoringMetrics.
func (s *stack) recordMonitoringMetrics(ctx context.Context, t *testing.T) {
	t.Helper()
	adapterClient, err := s.adapterMetricsClient()
	if err != nil {
		t.Fatal(err)
	}
	if s.monitoringSeen == nil {
		s.monitoringSeen = map[string]*dto.MetricFamily{}
	}
	families, err := s.scrapeAll(ctx, adapterClient)
	if err != nil {
		t.Fatal(err)
	}
	for n, f := range families {
		s.monitoringSeen[n] = f
	}
}

// scrapeAll is the metric families of hetsev-scheduler's,
// hetsev-metrics-adapter's and hetsev-scaler's /metrics together;
// adapterClient authenticates to the adapter.
func (s *stack) scrapeAll(ctx context.Context, adapterClient *http.Client) (map[string]*dto.MetricFamily, error) {
	all := map[string]*dto.MetricFamily{}
	for program, scrape := range map[string]func() (map[string]*dto.MetricFamily, error){
		"hetsev-scheduler": func() (map[string]*dto.MetricFamily, error) { return cluster.ScrapeMetrics(ctx, s.schedulerPort) },
		"hetsev-metrics-adapter": func() (map[string]*dto.MetricFamily, error) {
			return cluster.ScrapeURL(ctx, adapterClient, fmt.Sprintf("https://127.0.0.1:%d/metrics", s.adapterPort))
		},
		"hetsev-scaler": func() (map[string]*dto.MetricFamily, error) {
			return cluster.ScrapeURL(ctx, http.DefaultClient, s.scalerMetrics)
		},
	} {
		families, err := scrape()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", program, err)
		}
		for n, f := range families {
			all[n] = f
		}
	}
	return all, nil
}

// adapterMetricsClient is an HTTP client with the control plane's admin
// credentials, which hetsev-metrics-adapter's delegated authorisation
// allows on /metrics; its serving certificate is self-signed.
func (s *stack) adapterMetricsClient() (*http.Client, error) {
	cfg := rest.CopyConfig(s.cp.Config)
	cfg.TLSClientConfig = rest.TLSClientConfig{Insecure: true,
		CertData: cfg.CertData, KeyData: cfg.KeyData, CertFile: cfg.CertFile, KeyFile: cfg.KeyFile}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: rt, Timeout: 10 * time.Second}, nil
}
