package scrape

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/hetsev/hetsev/pkg/adapter"
)

// Defaults of Options.
const (
	DefaultInterval     = time.Second
	DefaultTimeout      = 500 * time.Millisecond
	DefaultWorkers      = 16
	DefaultMaxBodyBytes = 16 << 20
	DefaultMaxSamples   = 4096
	// DefaultDCGMExporterNamespace and DefaultDCGMExporterSelector are
	// where NVIDIA's GPU Operator runs dcgm-exporter and the label it
	// gives its pods.
	DefaultDCGMExporterNamespace = "gpu-operator"
	DefaultDCGMExporterSelector  = "app=nvidia-dcgm-exporter"
)

// Options configures a Scraper. Zero fields take the defaults.
type Options struct {
	// Interval between scrape rounds, wall clock (--scrape-interval).
	Interval time.Duration
	// Timeout of one scrape, wall clock (--scrape-timeout).
	Timeout time.Duration
	// RateWindow is the range, in the samples' clock, over which rates and
	// histogram increases are computed (--rate-window).
	RateWindow time.Duration
	// Workers bounds the number of concurrent scrapes (--scrape-workers).
	Workers int
	// MaxBodyBytes bounds the size of one scrape's body.
	MaxBodyBytes int64
	// MaxSamples bounds each per-pod history, whatever the window holds.
	MaxSamples int
	// Client performs the scrapes. Nil: a client that ignores proxy
	// environment variables and never follows redirects.
	Client *http.Client
	// Now is the wall clock, used as the sample time of samples without a
	// timestamp. Nil: time.Now.
	Now func() time.Time
	// DCGMExporterNamespace and DCGMExporterSelector (a label selector)
	// say which pods are trusted dcgm-exporters (DCGMExporters); "" for
	// the namespace means any (--dcgm-exporter-namespace,
	// --dcgm-exporter-selector). The selector may not be empty.
	DCGMExporterNamespace string
	DCGMExporterSelector  string
}

// DCGMExporters is the parsed trust rule of DCGMExporterNamespace and
// DCGMExporterSelector; an error names the flag.
func (o Options) DCGMExporters() (DCGMExporters, error) {
	sel, err := labels.Parse(o.DCGMExporterSelector)
	if err != nil {
		return DCGMExporters{}, fmt.Errorf("--dcgm-exporter-selector %q: %w", o.DCGMExporterSelector, err)
	}
	if sel.Empty() {
		return DCGMExporters{}, fmt.Errorf("--dcgm-exporter-selector is empty: it would trust every pod's DCGM series; want the exporter's labels, e.g. %s", DefaultDCGMExporterSelector)
	}
	return DCGMExporters{Namespace: o.DCGMExporterNamespace, Selector: sel}, nil
}

// DefaultOptions returns the defaults: 1s interval, 500ms timeout,
// 60s rate window, 16 workers.
func DefaultOptions() Options {
	return Options{
		Interval:     DefaultInterval,
		Timeout:      DefaultTimeout,
		RateWindow:   adapter.DefaultRateWindow,
		Workers:      DefaultWorkers,
		MaxBodyBytes: DefaultMaxBodyBytes,
		MaxSamples:   DefaultMaxSamples,

		DCGMExporterNamespace: DefaultDCGMExporterNamespace,
		DCGMExporterSelector:  DefaultDCGMExporterSelector,
	}
}

// Validate reports options that cannot work (negative durations or sizes).
// Zero values are allowed and mean the default.
func (o Options) Validate() error {
	var errs []error
	if o.Interval < 0 {
		errs = append(errs, fmt.Errorf("scrape interval %v is negative", o.Interval))
	}
	if o.Timeout < 0 {
		errs = append(errs, fmt.Errorf("scrape timeout %v is negative", o.Timeout))
	}
	if o.RateWindow < 0 {
		errs = append(errs, fmt.Errorf("rate window %v is negative", o.RateWindow))
	}
	if o.Workers < 0 {
		errs = append(errs, fmt.Errorf("scrape workers %d is negative", o.Workers))
	}
	if o.MaxBodyBytes < 0 {
		errs = append(errs, fmt.Errorf("max body bytes %d is negative", o.MaxBodyBytes))
	}
	if o.MaxSamples < 0 {
		errs = append(errs, fmt.Errorf("max samples %d is negative", o.MaxSamples))
	}
	if o.DCGMExporterSelector != "" {
		if _, err := o.DCGMExporters(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Interval == 0 {
		o.Interval = d.Interval
	}
	if o.Timeout == 0 {
		o.Timeout = d.Timeout
	}
	if o.RateWindow == 0 {
		o.RateWindow = d.RateWindow
	}
	if o.Workers == 0 {
		o.Workers = d.Workers
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = d.MaxBodyBytes
	}
	if o.MaxSamples < 2 {
		o.MaxSamples = d.MaxSamples
	}
	if o.Client == nil {
		o.Client = newHTTPClient(o.Workers)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.DCGMExporterSelector == "" {
		o.DCGMExporterSelector = d.DCGMExporterSelector
	}
	return o
}

func newHTTPClient(workers int) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:               nil, // pod IPs are reached directly, never through a proxy
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        4 * workers,
			MaxIdleConnsPerHost: 2,
			IdleConnTimeout:     90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
