package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/dra"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/servingcert"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
)

// Options configure the webhook: where it listens, where its certificate
// comes from and how it is kept.
type Options struct {
	// BindAddress is host:port of the HTTPS server; "" or "0" disables the
	// webhook.
	BindAddress string
	// CertDir holds tls.crt and tls.key; the server reloads them when they
	// change.
	CertDir string
	// SelfSigned keeps a self-signed certificate in Secret, writes it to
	// CertDir, renews it and keeps Configuration's caBundle. Without it,
	// something else (cert-manager) puts the certificate in CertDir and
	// the CA in the caBundle.
	SelfSigned bool
	Secret     string
	Namespace  string
	// CertHosts are comma-separated DNS names or IPs.
	CertHosts     string
	Configuration string
	// CertValidity is a new certificate's lifetime, CertRenewBefore how
	// long before expiry it is renewed, CertCheckInterval how often every
	// replica looks.
	CertValidity, CertRenewBefore, CertCheckInterval time.Duration
	// RuntimeClassName is given to the pods the webhook opts in when they
	// name none ("" leaves it alone). It has no flag of its own: it is
	// hetsev-scaler's --gpu-runtime-class, which its Deployments get too.
	RuntimeClassName string
	// GPUMode is PodMutator.GPUMode. It has no flag of its own either: it
	// is hetsev-scaler's --gpu-mode.
	GPUMode string
	// DRADriver is the driver whose extra capacities the webhook's claim
	// templates request (ClaimTemplates.Driver): hetsev-scaler's
	// --dra-driver flags.
	DRADriver dra.Driver
	// GPUPool is PodMutator.GPUPool. It has no flag: it is the gpuPool of
	// the scheduler configuration hetsev-scaler reads (--scheduler-config).
	GPUPool bool
}

// NewOptions returns the defaults of the flags.
func NewOptions() *Options {
	return &Options{
		BindAddress:       ":9443",
		CertDir:           filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs"),
		SelfSigned:        true,
		Secret:            "hetsev-webhook-tls",
		Namespace:         envOr("POD_NAMESPACE", v1alpha1.SystemNamespace),
		CertHosts:         "hetsev-webhook.hetsev-system.svc",
		Configuration:     "hetsev-scheduler-selection",
		CertValidity:      365 * 24 * time.Hour,
		CertRenewBefore:   30 * 24 * time.Hour,
		CertCheckInterval: time.Minute,
		RuntimeClassName:  gpuinventory.DefaultRuntimeClassName,
	}
}

// AddFlags registers the --webhook-* flags on fs, with o's values as
// defaults.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.BindAddress, "webhook-bind-address", o.BindAddress, "address of the pod admission webhook (HTTPS, path "+Path+") that opts pods annotated hetsev.io/model into hetsev-scheduler; 0 disables it. Served by every replica, leader or not")
	fs.StringVar(&o.CertDir, "webhook-cert-dir", o.CertDir, "directory of the webhook's tls.crt and tls.key, reloaded when they change: written by the scaler with --webhook-self-signed, else mounted (e.g. a cert-manager Certificate's Secret)")
	fs.BoolVar(&o.SelfSigned, "webhook-self-signed", o.SelfSigned, "keep a self-signed serving certificate in --webhook-secret, write it to --webhook-cert-dir, renew it while running and keep --webhook-configuration's caBundle; false to serve a certificate provided in --webhook-cert-dir (cert-manager, whose CA injector then fills the caBundle)")
	fs.StringVar(&o.Secret, "webhook-secret", o.Secret, "Secret holding the webhook's serving certificate, shared by all replicas; created when absent (with --webhook-self-signed)")
	fs.StringVar(&o.Namespace, "webhook-namespace", o.Namespace, "namespace of --webhook-secret (default: $POD_NAMESPACE, else hetsev-system)")
	fs.StringVar(&o.CertHosts, "webhook-cert-hosts", o.CertHosts, "comma-separated DNS names or IPs the serving certificate covers (the API server dials the webhook Service by its .svc name)")
	fs.StringVar(&o.Configuration, "webhook-configuration", o.Configuration, "MutatingWebhookConfiguration whose caBundle is kept equal to the CAs of the serving certificates (with --webhook-self-signed); empty: leave it alone")
	fs.DurationVar(&o.CertValidity, "webhook-cert-validity", o.CertValidity, "validity of a self-signed serving certificate (its CA's is twice that)")
	fs.DurationVar(&o.CertRenewBefore, "webhook-cert-renew-before", o.CertRenewBefore, "renew the self-signed serving certificate when it expires sooner than this")
	fs.DurationVar(&o.CertCheckInterval, "webhook-cert-check-interval", o.CertCheckInterval, "how often each replica checks the certificate Secret (renewing when due), the caBundle and its certificate files")
}

// Enabled says whether the webhook is to be served.
func (o *Options) Enabled() bool { return o.BindAddress != "" && o.BindAddress != "0" }

func (o *Options) hosts() []string {
	var hosts []string
	for _, h := range strings.Split(o.CertHosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	return hosts
}

// Validate checks the flags of an enabled webhook.
func (o *Options) Validate() error {
	if !o.Enabled() {
		return nil
	}
	if _, _, err := splitHostPort(o.BindAddress); err != nil {
		return err
	}
	if o.CertDir == "" {
		return errors.New("--webhook-cert-dir: must not be empty")
	}
	if !o.SelfSigned {
		return nil
	}
	switch {
	case len(o.hosts()) == 0:
		return errors.New("--webhook-cert-hosts: want at least one DNS name or IP")
	case o.Secret == "" || o.Namespace == "":
		return errors.New("--webhook-secret and --webhook-namespace must not be empty")
	}
	return servingcert.CheckTiming("webhook-", o.CertValidity, o.CertRenewBefore, o.CertCheckInterval)
}

func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("--webhook-bind-address=%q: %w", addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, fmt.Errorf("--webhook-bind-address=%q: want a port from 1 to 65535", addr)
	}
	return host, port, nil
}

// AddToManager adds the webhook to mgr: a runnable that, with SelfSigned,
// first brings the certificate Secret, the caBundle and CertDir up to
// date and then keeps them so every CertCheckInterval, and serves the
// webhook with controller-runtime's webhook server (whose certificate
// watcher serves a renewed certificate without a restart) until the
// manager stops. It runs on every replica, leader or not: the API server
// calls whichever the Service picks. With failurePolicy Fail a webhook
// that does not serve blocks hetsev pods, so its failures are the
// manager's: the first Sync failing, no certificate in CertDir or a port
// that cannot be bound make the manager's Start return an error; and the
// readiness check "webhook" (/readyz) fails until the server answers TLS
// handshakes on BindAddress, i.e. until it has a certificate and listens.
// A disabled webhook adds nothing. Errors: invalid options.
func (o *Options) AddToManager(mgr manager.Manager, kube kubernetes.Interface) error {
	if !o.Enabled() {
		return nil
	}
	if err := o.Validate(); err != nil {
		return err
	}
	host, port, _ := splitHostPort(o.BindAddress)
	const certName, keyName = "tls.crt", "tls.key"
	srv := &server{
		Server: crwebhook.NewServer(crwebhook.Options{
			Host: host, Port: port, CertDir: o.CertDir, CertName: certName, KeyName: keyName,
			TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.MinVersion = tls.VersionTLS12 }},
		}),
		addr: o.BindAddress, certDir: o.CertDir, selfSigned: o.SelfSigned,
	}
	if o.SelfSigned {
		srv.certs = &servingcert.Provisioner{Client: kube, Dir: o.CertDir, CertName: certName, KeyName: keyName,
			Cert: servingcert.Options{Component: "webhook", Namespace: o.Namespace, SecretName: o.Secret, Hosts: o.hosts(), MaxAge: o.CertValidity, RenewBefore: o.CertRenewBefore},
			Expiry: func(component string, notAfter time.Time) {
				certificateExpiry.WithLabelValues(component).Set(float64(notAfter.Unix()))
			}}
		registerMetrics()
		if o.Configuration != "" {
			srv.certs.Inject = func(ctx context.Context, caBundle []byte) error {
				return InjectCABundle(ctx, kube, o.Configuration, caBundle)
			}
		}
		srv.interval = o.CertCheckInterval
	}
	srv.Register(Path, NewHandler(PodMutator{RuntimeClassName: o.RuntimeClassName, GPUMode: o.GPUMode, Templates: ClaimTemplates{Client: kube, Driver: o.DRADriver}, GPUPool: o.GPUPool}))
	srv.Register("/healthz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	if err := mgr.Add(srv); err != nil {
		return fmt.Errorf("adding the webhook server to the manager: %w", err)
	}
	return mgr.AddReadyzCheck(ReadyzCheckName, srv.StartedChecker())
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
