package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// SchedulerMetricsArgs are the flags that let ScrapeMetrics read a
// scheduler's /metrics on port: its secure port, and /metrics open
// without authentication, for StartSchedulerWithConfig's extraArgs.
func SchedulerMetricsArgs(port int) []string {
	return []string{fmt.Sprintf("--secure-port=%d", port), "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"}
}

// ScrapeMetrics reads the /metrics of a program on 127.0.0.1:port over
// HTTPS (a scheduler started with SchedulerMetricsArgs), by metric family.
func ScrapeMetrics(ctx context.Context, port int) (map[string]*dto.MetricFamily, error) {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the scheduler's self-signed serving cert
	}}
	return ScrapeURL(ctx, client, fmt.Sprintf("https://127.0.0.1:%d/metrics", port))
}

// ScrapeURL reads the Prometheus text exposition at url with client, by
// metric family; a status other than 200 is an error with the start of
// the body.
func ScrapeURL(ctx context.Context, client *http.Client, url string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("%s: %s: %s", url, resp.Status, b)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	return families, nil
}

// CounterValue is the value of the counter name's series whose labels
// include want, 0 when there is no such series (a counter not incremented
// yet is not exported).
func CounterValue(families map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	var sum float64
	for _, m := range families[name].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && labels[k] == v
		}
		if match {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}
