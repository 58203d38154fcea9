package prometheus

import (
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/prometheus/common/config"
	"github.com/spf13/pflag"
)

// Connection is how a program reaches Prometheus' HTTP API: hetsev-metrics-adapter
// (--backend=prometheus) and hetsev-scaler (--metrics-backend=prometheus)
// register the same flags through AddFlags or AddGoFlags.
//
// The HTTP client is prometheus/common/config's: the bearer token file is
// read on every request (a projected service-account token rotates under
// the program), and the CA file is read again when its content changes.
type Connection struct {
	// URL of the HTTP API root, e.g. http://prometheus.monitoring.svc:9090
	// or https://thanos-query.monitoring.svc:9091 (--prometheus-url).
	URL string
	// BearerTokenFile holds the token sent as "Authorization: Bearer ..."
	// (--prometheus-bearer-token-file); empty: no Authorization header.
	BearerTokenFile string
	// CAFile is a PEM bundle of the CAs that verify an https URL's server
	// certificate (--prometheus-ca-file); empty: the system's roots.
	CAFile string
	// Headers are "Name=Value" pairs sent with every query
	// (--prometheus-header, repeatable), e.g. X-Scope-OrgID=tenant-a for
	// a Mimir, Cortex or Thanos tenant. A name given twice sends both values.
	Headers []string
}

// AddFlags registers --prometheus-url, --prometheus-bearer-token-file,
// --prometheus-ca-file and --prometheus-header on fs.
func (c *Connection) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.URL, "prometheus-url", c.URL, "Prometheus HTTP API root, e.g. http://prometheus.monitoring.svc:9090, or a Thanos Query or Mimir endpoint that serves /api/v1/query.")
	fs.StringVar(&c.BearerTokenFile, "prometheus-bearer-token-file", c.BearerTokenFile,
		"File whose content is sent to Prometheus as a bearer token (Authorization: Bearer); read on every query, so a projected service-account token may rotate.")
	fs.StringVar(&c.CAFile, "prometheus-ca-file", c.CAFile,
		"PEM file of the CAs that verify Prometheus' certificate (https URLs); read again when it changes. Default: the system's roots.")
	fs.StringArrayVar(&c.Headers, "prometheus-header", c.Headers,
		"Name=Value of an HTTP header sent with every query, e.g. X-Scope-OrgID=tenant-a (Mimir, Cortex, Thanos tenants); repeatable. Authorization is not allowed here: use --prometheus-bearer-token-file.")
}

// AddGoFlags registers the flags of AddFlags on a standard library flag
// set (hetsev-scaler's).
func (c *Connection) AddGoFlags(fs *flag.FlagSet) {
	pfs := pflag.NewFlagSet("prometheus", pflag.ContinueOnError)
	c.AddFlags(pfs)
	pfs.VisitAll(func(f *pflag.Flag) { fs.Var(f.Value, f.Name, f.Usage) })
}

// validate reports settings that cannot work, naming the flag: a URL that
// is not http(s)://host or carries a user or password, an unreadable token file, a CA file that is
// unreadable or holds no PEM certificate, and a header that is not
// Name=Value with a valid name, or that prometheus/common reserves.
func (c Connection) validate() []error {
	var errs []error
	if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("--prometheus-url %q: want http(s)://host[:port][/path]", c.URL))
	} else if u.User != nil {
		// Credentials in the URL would be logged with it; the token file
		// keeps them out of flags and logs.
		errs = append(errs, fmt.Errorf("--prometheus-url %q: no user or password in the URL; use --prometheus-bearer-token-file", u.Redacted()))
	}
	if c.BearerTokenFile != "" {
		if _, err := os.ReadFile(c.BearerTokenFile); err != nil {
			errs = append(errs, fmt.Errorf("--prometheus-bearer-token-file: %w", err))
		}
	}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("--prometheus-ca-file: %w", err))
		case !x509.NewCertPool().AppendCertsFromPEM(pem):
			errs = append(errs, fmt.Errorf("--prometheus-ca-file %s: no PEM certificate in it", c.CAFile))
		}
	}
	if _, err := c.headers(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// headers parses Headers into prometheus/common's form.
func (c Connection) headers() (*config.Headers, error) {
	if len(c.Headers) == 0 {
		return nil, nil
	}
	h := &config.Headers{Headers: map[string]config.Header{}}
	for _, kv := range c.Headers {
		name, value, ok := strings.Cut(kv, "=")
		name = strings.TrimSpace(name)
		if !ok || value == "" {
			return nil, fmt.Errorf("--prometheus-header %q=...: want Name=Value, e.g. X-Scope-OrgID=tenant-a", name)
		}
		if !validHeaderName(name) {
			return nil, fmt.Errorf("--prometheus-header: %q is not an HTTP header name (letters, digits and !#$%%&'*+-.^_`|~)", name)
		}
		name = http.CanonicalHeaderKey(name)
		if name == "Authorization" {
			return nil, fmt.Errorf("--prometheus-header %s: use --prometheus-bearer-token-file for Authorization", name)
		}
		e := h.Headers[name]
		e.Values = append(e.Values, value)
		h.Headers[name] = e
	}
	if err := h.Validate(); err != nil {
		return nil, fmt.Errorf("--prometheus-header: %w", err)
	}
	return h, nil
}

// validHeaderName says whether name is an RFC 9110 token.
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("!#$%&'*+-.^_`|~", r):
		default:
			return false
		}
	}
	return true
}

// roundTripper is the HTTP transport of queries: token, CA and headers
// from c, dials bounded by timeout, no proxy from the environment
// (Prometheus is in-cluster). The whole exchange is bounded by the query's
// context.
func (c Connection) roundTripper(timeout time.Duration) (http.RoundTripper, error) {
	if errs := c.validate(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	h, _ := c.headers() // validated
	cfg := config.HTTPClientConfig{
		BearerTokenFile: c.BearerTokenFile,
		TLSConfig:       config.TLSConfig{CAFile: c.CAFile},
		HTTPHeaders:     h,
		EnableHTTP2:     true,
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("Prometheus client: %w", err)
	}
	dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	rt, err := config.NewRoundTripperFromConfig(cfg, "hetsev-prometheus", config.WithDialContextFunc(dialer.DialContext))
	if err != nil {
		return nil, fmt.Errorf("Prometheus client: %w", err)
	}
	return rt, nil
}
