package helmchart

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// MonitoringValues turns on every monitoring object of the chart: the
// PodMonitors, the PrometheusRule and the Grafana dashboard ConfigMap.
func MonitoringValues() map[string]any {
	on := map[string]any{"enabled": true}
	return map[string]any{"monitoring": map[string]any{
		"podMonitors": on, "prometheusRules": on, "grafanaDashboard": on,
	}}
}

// ExternalMetrics are the series the chart's alerts read that no hetsev
// program serves, by the server that does: Prometheus' own up of each
// scrape target and kube-apiserver's admission and aggregation metrics.
// MetricNames leaves them out.
var ExternalMetrics = map[string]string{
	"up": "Prometheus (a scrape target's health)",
	"apiserver_admission_webhook_rejection_count": "kube-apiserver (admission webhooks)",
	"aggregator_unavailable_apiservice":           "kube-apiserver (kube-aggregator)",
}

// MetricNames are the metric names the rendered objs use: those in the
// expressions of PrometheusRules (minus the series their own recording
// rules write and ExternalMetrics) and in the targets and template variables of the Grafana
// dashboards in ConfigMaps labelled grafana_dashboard. Histogram series
// keep their suffix (_bucket). Sorted, without duplicates; an error names
// the object whose expression or JSON cannot be read.
func MetricNames(objs []*unstructured.Unstructured) ([]string, error) {
	used := map[string]bool{}
	recorded := map[string]bool{}
	for _, o := range objs {
		switch {
		case o.GetKind() == "PrometheusRule":
			groups, _, err := unstructured.NestedSlice(o.Object, "spec", "groups")
			if err != nil {
				return nil, fmt.Errorf("PrometheusRule %s: %w", o.GetName(), err)
			}
			for _, g := range groups {
				rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
				for _, r := range rules {
					rm := r.(map[string]any)
					expr, _ := rm["expr"].(string)
					if expr == "" {
						return nil, fmt.Errorf("PrometheusRule %s: rule %v has no expr", o.GetName(), rm)
					}
					if rec, ok := rm["record"].(string); ok {
						recorded[rec] = true
					}
					for _, n := range PromQLMetricNames(expr) {
						used[n] = true
					}
				}
			}
		case o.GetKind() == "ConfigMap" && o.GetLabels()["grafana_dashboard"] != "":
			data, _, _ := unstructured.NestedStringMap(o.Object, "data")
			for key, raw := range data {
				exprs, err := dashboardExprs([]byte(raw))
				if err != nil {
					return nil, fmt.Errorf("ConfigMap %s: %s: %w", o.GetName(), key, err)
				}
				for _, e := range exprs {
					for _, n := range PromQLMetricNames(e) {
						used[n] = true
					}
				}
			}
		}
	}
	var out []string
	for n := range used {
		if _, external := ExternalMetrics[n]; !recorded[n] && !external {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}

// dashboardPanel is the part of a Grafana panel that holds queries; rows
// hold their panels in Panels.
type dashboardPanel struct {
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []dashboardPanel `json:"panels"`
}

// labelValues is a template variable's label_values(SELECTOR, LABEL).
var labelValues = regexp.MustCompile(`^\s*label_values\((.*),\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*$`)

// dashboardExprs returns the PromQL of a Grafana dashboard: every panel
// target's expr and the selector of every label_values variable.
func dashboardExprs(raw []byte) ([]string, error) {
	var d struct {
		Panels     []dashboardPanel `json:"panels"`
		Templating struct {
			List []struct {
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, err
	}
	var out []string
	var walk func([]dashboardPanel)
	walk = func(ps []dashboardPanel) {
		for _, p := range ps {
			for _, t := range p.Targets {
				if t.Expr != "" {
					out = append(out, t.Expr)
				}
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			var s string
			if err := json.Unmarshal(v.Query, &s); err != nil {
				return nil, fmt.Errorf("template variable query %s: %w", v.Query, err)
			}
			q.Query = s
		}
		if m := labelValues.FindStringSubmatch(q.Query); m != nil {
			out = append(out, m[1])
		} else if q.Query != "" {
			out = append(out, q.Query)
		}
	}
	return out, nil
}

// promqlKeywords are PromQL's words that are neither functions nor metric
// names; those followed by a label list (by, without, on, ignoring,
// group_left, group_right) have it skipped.
var promqlKeywords = map[string]bool{
	"and": true, "or": true, "unless": true, "bool": true, "offset": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"inf": true, "nan": true, "atan2": true,
}

// promqlAggregations are PromQL's aggregation operators, which may be
// followed by "by (...)" or "without (...)" before their "(".
var promqlAggregations = map[string]bool{
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
	"limitk": true, "limit_ratio": true,
}

// PromQLMetricNames are the metric names a PromQL expression selects: the
// identifiers that are not functions or aggregations (followed by "("),
// aggregation operators, keywords, label names (inside {}, or the lists of by, without, on,
// ignoring, group_left and group_right), strings, numbers, durations and
// ranges ([5m], [1h:1m]), or Grafana variables ($node, ${x},
// $__rate_interval). In order of appearance, without duplicates.
func PromQLMetricNames(expr string) []string {
	var out []string
	seen := map[string]bool{}
	isIdentStart := func(c byte) bool { return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	isIdent := func(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }
	// skipTo returns the index after the bracket closing the one at i,
	// passing over quoted strings.
	skipTo := func(i int, open, close byte) int {
		depth := 0
		for ; i < len(expr); i++ {
			switch c := expr[i]; {
			case c == '"' || c == '\'' || c == '`':
				i = skipString(expr, i) - 1
			case c == open:
				depth++
			case c == close:
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	nextNonSpace := func(i int) int {
		for i < len(expr) && (expr[i] == ' ' || expr[i] == '\t' || expr[i] == '\n' || expr[i] == '\r') {
			i++
		}
		return i
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(expr, i)
		case c == '#': // a comment, to the end of the line
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case c == '{':
			i = skipTo(i, '{', '}')
		case c == '[':
			i = skipTo(i, '[', ']')
		case c == '$':
			i++
			if i < len(expr) && expr[i] == '{' {
				i = skipTo(i, '{', '}')
			}
			for i < len(expr) && isIdent(expr[i]) {
				i++
			}
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(expr) && expr[i+1] >= '0' && expr[i+1] <= '9':
			// A number (1, 0.99, 1e-3, 0x1f) or a duration (5m).
			for i < len(expr) && (isIdent(expr[i]) || expr[i] == '.') {
				if (expr[i] == 'e' || expr[i] == 'E') && i+1 < len(expr) && (expr[i+1] == '-' || expr[i+1] == '+') {
					i++
				}
				i++
			}
		case isIdentStart(c):
			j := i
			for j < len(expr) && isIdent(expr[j]) {
				j++
			}
			word := expr[i:j]
			k := nextNonSpace(j)
			switch {
			case promqlKeywords[strings.ToLower(word)]:
				if k < len(expr) && expr[k] == '(' && word != "atan2" {
					j = skipTo(k, '(', ')') // a label list
				}
			case k < len(expr) && expr[k] == '(', promqlAggregations[strings.ToLower(word)]:
				// a function or an aggregation
			default:
				if !seen[word] {
					seen[word] = true
					out = append(out, word)
				}
			}
			i = j
		default:
			i++
		}
	}
	return out
}

// skipString returns the index after the quoted string starting at i
// (", ' with backslash escapes, or ` raw).
func skipString(s string, i int) int {
	q := s[i]
	for i++; i < len(s); i++ {
		if s[i] == '\\' && q != '`' {
			i++
			continue
		}
		if s[i] == q {
			return i + 1
		}
	}
	return i
}

// Exported reports whether families (a program's /metrics, by family)
// serve the series name: a family of that name, or name with a histogram's
// or summary's suffix (_bucket, _sum, _count) of a histogram or summary
// family.
func Exported(name string, families map[string]*dto.MetricFamily) bool {
	if _, ok := families[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		f, ok := families[base]
		if !ok {
			continue
		}
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			return true
		case dto.MetricType_SUMMARY:
			return suffix != "_bucket"
		}
	}
	return false
}
