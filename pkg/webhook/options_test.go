package webhook

import (
	"flag"
	"strings"
	"testing"
	"time"
)

// The manifests and tests name these flags: their names and defaults stay.
func TestFlagsKeepTheirNamesAndDefaults(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	o := NewOptions()
	fs := flag.NewFlagSet("scaler", flag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"webhook-bind-address":        ":9443",
		"webhook-secret":              "hetsev-webhook-tls",
		"webhook-namespace":           "hetsev-system",
		"webhook-cert-hosts":          "hetsev-webhook.hetsev-system.svc",
		"webhook-configuration":       "hetsev-scheduler-selection",
		"webhook-self-signed":         "true",
		"webhook-cert-validity":       "8760h0m0s",
		"webhook-cert-renew-before":   "720h0m0s",
		"webhook-cert-check-interval": "1m0s",
	} {
		f := fs.Lookup(name)
		if f == nil || f.DefValue != want {
			t.Errorf("--%s: %+v, want default %q", name, f, want)
		}
	}
	if err := o.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	if err := fs.Parse([]string{"--webhook-bind-address=127.0.0.1:8443", "--webhook-cert-hosts= a.svc, 127.0.0.1 ,", "--webhook-cert-validity=20s", "--webhook-cert-renew-before=15s", "--webhook-cert-check-interval=500ms"}); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("test settings: %v", err)
	}
	if h := o.hosts(); strings.Join(h, "|") != "a.svc|127.0.0.1" {
		t.Errorf("hosts %q", h)
	}
	if o.CertCheckInterval != 500*time.Millisecond {
		t.Errorf("check interval %s", o.CertCheckInterval)
	}
}

func TestBadFlagsAreRefused(t *testing.T) {
	for _, tc := range []struct {
		set  func(*Options)
		want string
	}{
		{func(o *Options) { o.BindAddress = "9443" }, "--webhook-bind-address"},
		{func(o *Options) { o.BindAddress = ":0" }, "port from 1"},
		{func(o *Options) { o.CertHosts = " , " }, "--webhook-cert-hosts"},
		{func(o *Options) { o.CertRenewBefore = o.CertValidity }, "shorter than --webhook-cert-validity"},
		{func(o *Options) { o.CertCheckInterval = o.CertRenewBefore }, "shorter than --webhook-cert-renew-before"},
	} {
		o := NewOptions()
		tc.set(o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want an error saying %q, got %v", tc.want, err)
		}
	}
	// Disabled: nothing else is checked. Not self-signed: no Secret needed.
	o := NewOptions()
	o.BindAddress, o.CertHosts = "0", ""
	if err := o.Validate(); err != nil {
		t.Errorf("disabled webhook: %v", err)
	}
	o = NewOptions()
	o.SelfSigned, o.Secret, o.CertHosts = false, "", ""
	if err := o.Validate(); err != nil {
		t.Errorf("mounted certificate: %v", err)
	}
}
