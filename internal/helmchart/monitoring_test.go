package helmchart

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// exportedMetrics are the metric names the programs serve on /metrics
// that the chart's rules and dashboard may use, by source. The integration
// test TestScalerHoldsOnPartialMetrics checks the same names against the
// running programs' /metrics.
var exportedMetrics = map[string]string{
	// hetsev-scheduler: pkg/plugins/gpushare/metrics.go
	"hetsev_gpu_memory_used_mib":              "scheduler",
	"hetsev_gpu_memory_free_mib":              "scheduler",
	"hetsev_gpu_busy_share":                   "scheduler",
	"hetsev_gpu_instances":                    "scheduler",
	"hetsev_gpu_instance_predicted_inflation": "scheduler",
	// hetsev-scaler: pkg/scaler/promexport.go and controller-runtime
	"hetsev_scaler_decisions_total":                         "scaler",
	"hetsev_scaler_saturation":                              "scaler",
	"hetsev_scaler_arrival_rate_requests_per_second":        "scaler",
	"hetsev_scaler_replicas":                                "scaler",
	"hetsev_scaler_cost_usd_per_hour":                       "scaler",
	"hetsev_scaler_latency_p98_ms":                          "scaler",
	"hetsev_scaler_slo_response_time_ms":                    "scaler",
	"hetsev_scaler_slo_attainment":                          "scaler",
	"hetsev_scaler_slo_service_level":                       "scaler",
	"hetsev_scaler_replacements_total":                      "scaler",
	"hetsev_scaler_status_writes_total":                     "scaler",
	"hetsev_scaler_solver_duration_seconds_bucket":          "scaler",
	"hetsev_scaler_decision_duration_seconds_bucket":        "scaler",
	"controller_runtime_reconcile_errors_total":             "scaler",
	"controller_runtime_reconcile_total":                    "scaler",
	"hetsev_metrics_adapter_partial_data_total":             "metrics-adapter",
	"hetsev_metrics_adapter_scrapes_total":                  "metrics-adapter",
	"hetsev_metrics_adapter_series_ignored_total":           "metrics-adapter",
	"hetsev_metrics_adapter_scrape_targets":                 "metrics-adapter",
	"hetsev_metrics_adapter_scrape_duration_seconds_bucket": "metrics-adapter",
	"hetsev_serving_certificate_expiry_timestamp_seconds":   "metrics-adapter, scaler",
}

// Every metric the PrometheusRule's expressions and the dashboard's
// queries select is one the programs export; recording rules' outputs
// are left out, as Prometheus writes them.
func TestMonitoringUsesExportedMetrics(t *testing.T) {
	names, err := MetricNames(render(t, MonitoringValues()))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if _, ok := exportedMetrics[n]; !ok {
			t.Errorf("the rules or the dashboard use %s, which no program exports", n)
		}
	}
	// The SLO, over-commit, decision and partial-data rules are there.
	for _, n := range []string{"hetsev_scaler_slo_attainment", "hetsev_scaler_slo_service_level", "hetsev_scaler_latency_p98_ms", "hetsev_gpu_memory_free_mib",
		"controller_runtime_reconcile_errors_total", "hetsev_scaler_decisions_total", "hetsev_metrics_adapter_partial_data_total",
		"hetsev_gpu_instances", "hetsev_gpu_instance_predicted_inflation", "hetsev_gpu_busy_share", "hetsev_gpu_memory_used_mib", "hetsev_scaler_replicas",
		"hetsev_scaler_replacements_total"} {
		if !slices.Contains(names, n) {
			t.Errorf("the rules and the dashboard do not use %s", n)
		}
	}
}

func TestPromQLMetricNames(t *testing.T) {
	for _, c := range []struct {
		expr string
		want []string
	}{
		{`up`, []string{"up"}},
		{`sum by (le, job) (rate(x_bucket{job=~"a|b", le!="+Inf"}[5m])) > 0.5`, []string{"x_bucket"}},
		{`histogram_quantile(0.99, sum(rate(lat_bucket[$__rate_interval])) by (le))`, []string{"lat_bucket"}},
		{"a <= bool on (namespace, modelservice) group_left(gpu) b\n and ignoring(pod) c offset 5m", []string{"a", "b", "c"}},
		{`1 - avg_over_time(hetsev:slo_met[1h:1m]) > 14.4 * (1 - 0.99) unless absent(d)`, []string{"hetsev:slo_met", "d"}},
		{`count without(instance) (e{node=~"$node", x="}{"}) * 1e-3 / ${factor}`, []string{"e"}},
		{`label_replace(f, "dst", "$1", "src", "(.*)") or -g`, []string{"f", "g"}},
	} {
		if got := PromQLMetricNames(c.expr); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.expr, got, c.want)
		}
	}
}

// With monitoring on, the chart renders a PodMonitor per program scraping
// a port its Deployment's container names (HTTPS with the metrics reader's
// token where the program serves HTTPS), the metrics reader, the
// PrometheusRule with its alerts, and the dashboard ConfigMap for Grafana's
// sidecar.
func TestChartRendersMonitoring(t *testing.T) {
	objs := render(t, MonitoringValues())
	byID := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		byID[id(o)] = o
	}
	for _, i := range []string{
		"/ServiceAccount hetsev-system/hetsev-metrics-reader",
		"/Secret hetsev-system/hetsev-metrics-reader-token",
		"rbac.authorization.k8s.io/ClusterRole hetsev-metrics-reader",
		"rbac.authorization.k8s.io/ClusterRoleBinding hetsev-metrics-reader",
	} {
		if byID[i] == nil {
			t.Errorf("no %s", i)
		}
	}
	for name, scheme := range map[string]string{"hetsev-scheduler": "https", "hetsev-metrics-adapter": "https", "hetsev-scaler": "http"} {
		pm := byID["monitoring.coreos.com/PodMonitor hetsev-system/"+name]
		d := byID["apps/Deployment hetsev-system/"+name]
		if pm == nil || d == nil {
			t.Errorf("no PodMonitor or Deployment %s", name)
			continue
		}
		sel, _, _ := unstructured.NestedStringMap(pm.Object, "spec", "selector", "matchLabels")
		podLabels, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "labels")
		for k, v := range sel {
			if podLabels[k] != v {
				t.Errorf("PodMonitor %s selects %s=%s, the pods have %q", name, k, v, podLabels[k])
			}
		}
		eps, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
		if len(eps) != 1 {
			t.Fatalf("PodMonitor %s: %d endpoints, want 1", name, len(eps))
		}
		ep := eps[0].(map[string]any)
		var ports []string
		for _, c := range containers(t, d) {
			ps, _ := c["ports"].([]any)
			for _, p := range ps {
				ports = append(ports, p.(map[string]any)["name"].(string))
			}
		}
		if !slices.Contains(ports, ep["port"].(string)) || ep["scheme"] != scheme || ep["path"] != "/metrics" || ep["honorLabels"] != true {
			t.Errorf("PodMonitor %s scrapes %v; the container's ports are %v, want scheme %s", name, ep, ports, scheme)
		}
		token, _, _ := unstructured.NestedString(ep, "authorization", "credentials", "name")
		if (scheme == "https") != (token == "hetsev-metrics-reader-token") {
			t.Errorf("PodMonitor %s: authorization from %q", name, token)
		}
	}
	rule := byID["monitoring.coreos.com/PrometheusRule hetsev-system/hetsev"]
	if rule == nil {
		t.Fatal("no PrometheusRule hetsev")
	}
	var alerts []string
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rules {
			if a, ok := r.(map[string]any)["alert"].(string); ok {
				alerts = append(alerts, a)
			}
		}
	}
	for _, a := range []string{"HetsevModelServiceSLOFastBurn", "HetsevModelServiceSLOSlowBurn", "HetsevGPUMemoryOvercommitted",
		"HetsevScalerReconcileErrors", "HetsevMetricsAdapterPartialData", "HetsevModelServiceReplacementTimedOut"} {
		if !slices.Contains(alerts, a) {
			t.Errorf("no alert %s among %v", a, alerts)
		}
	}
	cm := byID["/ConfigMap hetsev-system/hetsev-grafana-dashboard"]
	if cm == nil || cm.GetLabels()["grafana_dashboard"] != "1" {
		t.Fatalf("no ConfigMap hetsev-grafana-dashboard labelled grafana_dashboard=1: %v", cm)
	}
	dash, _, _ := unstructured.NestedString(cm.Object, "data", "hetsev.json")
	if exprs, err := dashboardExprs([]byte(dash)); err != nil || len(exprs) < 10 {
		t.Errorf("dashboard: %d queries, %v", len(exprs), err)
	}
	// Off by default: no monitoring.coreos.com object and no dashboard.
	for _, o := range render(t, nil) {
		if strings.HasPrefix(o.GetAPIVersion(), "monitoring.coreos.com/") || strings.HasPrefix(o.GetName(), "hetsev-metrics-reader") || o.GetName() == "hetsev-grafana-dashboard" {
			t.Errorf("%s rendered with the default values", id(o))
		}
	}
}

// The availability alerts are there, each reading the series its server
// exports: one HetsevComponentDown per program on the PodMonitors' jobs,
// the webhook's and the APIService's from kube-apiserver, the certificate
// expiry from the programs. Without PodMonitors (whose job names the
// alert selects) or without the APIService, theirs are left out.
func TestAvailabilityAlerts(t *testing.T) {
	exprs := func(values map[string]any) map[string][]string {
		t.Helper()
		out := map[string][]string{}
		for _, o := range render(t, values) {
			if o.GetKind() != "PrometheusRule" {
				continue
			}
			groups, _, _ := unstructured.NestedSlice(o.Object, "spec", "groups")
			for _, g := range groups {
				rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
				for _, r := range rules {
					rm := r.(map[string]any)
					if a, ok := rm["alert"].(string); ok {
						out[a] = append(out[a], rm["expr"].(string))
					}
				}
			}
		}
		return out
	}
	all := exprs(MonitoringValues())
	down := all["HetsevComponentDown"]
	if len(down) != 3 {
		t.Fatalf("HetsevComponentDown: %d rules, want one per program: %v", len(down), down)
	}
	for i, p := range []string{"hetsev-scheduler", "hetsev-scaler", "hetsev-metrics-adapter"} {
		if want := `absent(up{job="hetsev-system/` + p + `"} == 1)`; down[i] != want {
			t.Errorf("HetsevComponentDown %d: %q, want %q", i, down[i], want)
		}
	}
	for alert, metric := range map[string]string{"HetsevWebhookFailing": "apiserver_admission_webhook_rejection_count",
		"HetsevAPIServiceUnavailable":         "aggregator_unavailable_apiservice",
		"HetsevServingCertificateExpiresSoon": "hetsev_serving_certificate_expiry_timestamp_seconds"} {
		if e := all[alert]; len(e) != 1 || !slices.Contains(PromQLMetricNames(e[0]), metric) {
			t.Errorf("%s: %v, want one rule on %s", alert, e, metric)
		}
	}
	if !strings.Contains(all["HetsevWebhookFailing"][0], `name="scheduler-selection.hetsev.io"`) {
		t.Errorf("HetsevWebhookFailing does not select the chart's webhook: %s", all["HetsevWebhookFailing"][0])
	}
	v := MonitoringValues()
	v["monitoring"].(map[string]any)["podMonitors"] = map[string]any{"enabled": false}
	v["metricsAdapter"] = map[string]any{"apiService": map[string]any{"enabled": false}}
	some := exprs(v)
	if len(some["HetsevComponentDown"]) != 0 || len(some["HetsevAPIServiceUnavailable"]) != 0 {
		t.Errorf("without PodMonitors and the APIService: %v, want neither HetsevComponentDown nor HetsevAPIServiceUnavailable", some)
	}
	if len(some["HetsevWebhookFailing"]) != 1 {
		t.Errorf("without PodMonitors: HetsevWebhookFailing missing")
	}
}
