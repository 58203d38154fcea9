package prometheus

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/common/model"

	"github.com/hetsev/hetsev/pkg/adapter"
)

// Defaults of Options.
const (
	// DefaultTimeout bounds one query, wall clock: the API answers with an
	// error after it, never with a zero.
	DefaultTimeout = 5 * time.Second
	// DefaultCacheTTL is how long one query's answer serves later requests.
	// A list of 1,000 pods is then one query, not 1,000. Our choice: below
	// Prometheus' usual 15 s scrape interval, so it adds little staleness.
	DefaultCacheTTL = 5 * time.Second
)

// Options configures a Source. Zero fields take the defaults.
type Options struct {
	// Connection is the server (URL, required), its credentials and
	// headers (--prometheus-url, --prometheus-bearer-token-file,
	// --prometheus-ca-file, --prometheus-header).
	Connection
	// Timeout of one query, wall clock (--prometheus-timeout); also sent to
	// Prometheus as the query's timeout.
	Timeout time.Duration
	// CacheTTL is how long a query's answer is reused (--prometheus-cache-ttl);
	// negative disables the cache, zero means DefaultCacheTTL.
	CacheTTL time.Duration
	// RateWindow is the PromQL range of rate() and increase()
	// (--rate-window), whole seconds.
	RateWindow time.Duration

	// Labels the queries' results are joined on. Istio series get
	// namespace and pod from Prometheus' Kubernetes service discovery
	// relabelling; dcgm-exporter labels its series Hostname and gpu.
	NamespaceLabel string // default "namespace"
	PodLabel       string // default "pod"
	NodeLabel      string // default "Hostname"; "node" when relabelled from __meta_kubernetes_pod_node_name
	GPULabel       string // default "gpu"
	// DCGMMatcher is the label matcher of the dcgm-exporter series the
	// default GPU queries read (--prometheus-dcgm-matcher; default
	// DefaultDCGMMatcher).
	DCGMMatcher string

	// PromQL templates (text/template over PromQLData). The request-rate
	// query must return requests/s per (namespace, pod); the duration query
	// bucket counts (any scale) per (namespace, pod, le) with le in ms; the
	// GPU queries percent and MiB per (node, gpu).
	RequestRateQuery string
	DurationQuery    string
	GPUUtilQuery     string
	GPUMemoryQuery   string

	// Now is the wall clock of the cache (queries are evaluated at
	// Prometheus' own time). Nil: time.Now.
	Now func() time.Time
}

// DefaultOptions returns the defaults (no URL).
func DefaultOptions() Options {
	return Options{
		Timeout:          DefaultTimeout,
		CacheTTL:         DefaultCacheTTL,
		RateWindow:       adapter.DefaultRateWindow,
		NamespaceLabel:   "namespace",
		PodLabel:         "pod",
		NodeLabel:        adapter.LabelDCGMHostname,
		GPULabel:         adapter.LabelDCGMGPU,
		DCGMMatcher:      DefaultDCGMMatcher,
		RequestRateQuery: DefaultRequestRateQuery,
		DurationQuery:    DefaultDurationQuery,
		GPUUtilQuery:     DefaultGPUUtilQuery,
		GPUMemoryQuery:   DefaultGPUMemoryQuery,
	}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	set := func(v *string, def string) {
		if *v == "" {
			*v = def
		}
	}
	set(&o.NamespaceLabel, d.NamespaceLabel)
	set(&o.PodLabel, d.PodLabel)
	set(&o.NodeLabel, d.NodeLabel)
	set(&o.GPULabel, d.GPULabel)
	set(&o.DCGMMatcher, d.DCGMMatcher)
	set(&o.RequestRateQuery, d.RequestRateQuery)
	set(&o.DurationQuery, d.DurationQuery)
	set(&o.GPUUtilQuery, d.GPUUtilQuery)
	set(&o.GPUMemoryQuery, d.GPUMemoryQuery)
	if o.Timeout == 0 {
		o.Timeout = d.Timeout
	}
	if o.CacheTTL == 0 {
		o.CacheTTL = d.CacheTTL
	}
	if o.RateWindow == 0 {
		o.RateWindow = d.RateWindow
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Validate reports options that cannot work, naming the flag: a missing or
// non-HTTP URL, an unreadable token or CA file, a malformed header (see
// Connection), a negative timeout, a rate window that is not whole seconds,
// a bad label name, or a template that does not parse or render.
func (o Options) Validate() error {
	o = o.withDefaults()
	errs := o.Connection.validate()
	if o.Timeout < 0 {
		errs = append(errs, fmt.Errorf("--prometheus-timeout %v is negative", o.Timeout))
	}
	if o.RateWindow < time.Second || o.RateWindow%time.Second != 0 {
		errs = append(errs, fmt.Errorf("--rate-window %v: want a whole number of seconds for PromQL", o.RateWindow))
	}
	for flag, l := range map[string]string{
		"--prometheus-namespace-label": o.NamespaceLabel, "--prometheus-pod-label": o.PodLabel,
		"--prometheus-node-label": o.NodeLabel, "--prometheus-gpu-label": o.GPULabel,
	} {
		if !model.LabelName(l).IsValidLegacy() {
			errs = append(errs, fmt.Errorf("%s %q is not a Prometheus label name", flag, l))
		}
	}
	for flag, q := range map[string]string{
		"--prometheus-request-rate-query": o.RequestRateQuery, "--prometheus-duration-query": o.DurationQuery,
		"--prometheus-gpu-util-query": o.GPUUtilQuery, "--prometheus-gpu-memory-query": o.GPUMemoryQuery,
	} {
		t, err := parseQuery(flag, q)
		if err == nil {
			_, err = o.render(t, "default")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", flag, err))
		}
	}
	return errors.Join(errs...)
}
