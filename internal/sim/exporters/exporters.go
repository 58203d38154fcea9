// Package exporters exposes simulated pods and GPUs as Prometheus metrics
// in the formats real exporters use, so that the rest of hetsev (metrics
// adapter, autoscaler, dashboards) can consume them unchanged:
//
//   - Istio: the standard Istio sidecar (Envoy) request metrics
//     istio_requests_total and istio_request_duration_milliseconds, with
//     Istio's standard labels and default duration buckets
//     (https://istio.io/latest/docs/reference/config/metrics/).
//   - DCGM: NVIDIA dcgm-exporter's GPU gauges DCGM_FI_DEV_GPU_UTIL,
//     DCGM_FI_DEV_FB_USED and DCGM_FI_DEV_FB_FREE with its labels gpu, UUID,
//     device, modelName and Hostname (dcgm-exporter default-counters.csv).
//
// The demo compresses time, so every sample carries an explicit timestamp
// taken from the SIMULATED clock (the now func given to each exporter)
// instead of the scrape time; Prometheus and the metrics adapter honour
// sample timestamps when present.
package exporters

import (
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves one collector, registered on its own registry, in the
// Prometheus text exposition format (promhttp.HandlerFor). If the collector
// cannot be registered (nil or inconsistent descriptors) every request is
// answered with HTTP 500 and the registration error.
func Handler(c prometheus.Collector) http.Handler {
	if c == nil {
		return errorHandler("exporters: nil collector")
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(c); err != nil {
		return errorHandler("exporters: register collector: " + err.Error())
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

func errorHandler(msg string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, msg, http.StatusInternalServerError)
	})
}

// clock returns now, or time.Now when now is nil.
func clock(now func() time.Time) func() time.Time {
	if now == nil {
		return time.Now
	}
	return now
}

// labelValue makes s safe as a Prometheus label value (valid UTF-8), so
// the MustNew* constructors cannot panic on user input; empty values
// become def.
func labelValue(s, def string) string {
	if s == "" {
		return def
	}
	if !utf8.ValidString(s) {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	return s
}
