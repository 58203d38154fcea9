package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
)

// CertOptions says where the webhook's serving certificate lives and what
// it must cover.
type CertOptions struct {
	Namespace  string   // of the Secret
	SecretName string   // a kubernetes.io/tls Secret: tls.crt (serving cert + its CA), tls.key
	Hosts      []string // DNS names or IPs the API server dials, e.g. hetsev-webhook.hetsev-system.svc
	// MaxAge is the validity of a new certificate (default 1 year);
	// RenewBefore renews one that expires sooner than this (default 30 days).
	MaxAge, RenewBefore time.Duration
}

// EnsureServingCert returns the webhook's TLS certificate and the CA bundle
// that verifies it (PEM). It is kept in a Secret so that every replica
// serves the same certificate: a missing Secret is created with a new
// self-signed CA and serving certificate (client-go's certutil), one that
// does not cover Hosts or expires within RenewBefore is replaced. Errors:
// API errors, and a Secret whose data is not a PEM key pair.
func EnsureServingCert(ctx context.Context, c kubernetes.Interface, o CertOptions) (tls.Certificate, []byte, error) {
	if len(o.Hosts) == 0 || o.SecretName == "" || o.Namespace == "" {
		return tls.Certificate{}, nil, fmt.Errorf("webhook certificate: need hosts, a Secret name and a namespace")
	}
	if o.MaxAge == 0 {
		o.MaxAge = 365 * 24 * time.Hour
	}
	if o.RenewBefore == 0 {
		o.RenewBefore = 30 * 24 * time.Hour
	}
	secrets := c.CoreV1().Secrets(o.Namespace)
	var crt, key []byte
	err := retry.OnError(retry.DefaultRetry, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
	}, func() error {
		s, err := secrets.Get(ctx, o.SecretName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			if crt, key, err = newCert(o); err != nil {
				return err
			}
			s = &v1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: o.SecretName, Namespace: o.Namespace,
					Labels: map[string]string{"app.kubernetes.io/part-of": "hetsev", "app.kubernetes.io/component": "webhook"}},
				Type: v1.SecretTypeTLS,
				Data: map[string][]byte{v1.TLSCertKey: crt, v1.TLSPrivateKeyKey: key},
			}
			_, err = secrets.Create(ctx, s, metav1.CreateOptions{})
			if err == nil {
				klog.InfoS("created the webhook's serving certificate", "secret", klog.KObj(s), "hosts", o.Hosts)
			}
			return err // AlreadyExists: another replica won; read its Secret
		case err != nil:
			return err
		}
		crt, key = s.Data[v1.TLSCertKey], s.Data[v1.TLSPrivateKeyKey]
		if why := stale(crt, key, o); why != "" {
			if crt, key, err = newCert(o); err != nil {
				return err
			}
			s.Type = v1.SecretTypeTLS
			s.Data = map[string][]byte{v1.TLSCertKey: crt, v1.TLSPrivateKeyKey: key}
			if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
				return err
			}
			klog.InfoS("renewed the webhook's serving certificate", "secret", klog.KObj(s), "reason", why)
		}
		return nil
	})
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("webhook certificate in Secret %s/%s: %w", o.Namespace, o.SecretName, err)
	}
	pair, err := tls.X509KeyPair(crt, key)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("webhook certificate in Secret %s/%s: %w", o.Namespace, o.SecretName, err)
	}
	return pair, crt, nil
}

func newCert(o CertOptions) (crt, key []byte, err error) {
	var ips []net.IP
	var dns []string
	for _, h := range o.Hosts[1:] {
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		} else {
			dns = append(dns, h)
		}
	}
	return certutil.GenerateSelfSignedCertKeyWithOptions(certutil.SelfSignedCertKeyOptions{
		Host: o.Hosts[0], AlternateIPs: ips, AlternateDNS: dns, MaxAge: o.MaxAge,
	})
}

// stale says why the certificate in a Secret cannot be served any longer,
// or "" when it can.
func stale(crt, key []byte, o CertOptions) string {
	pair, err := tls.X509KeyPair(crt, key)
	if err != nil {
		return "not a key pair: " + err.Error()
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return "unparsable certificate: " + err.Error()
	}
	if time.Until(leaf.NotAfter) < o.RenewBefore {
		return fmt.Sprintf("expires %s", leaf.NotAfter.Format(time.RFC3339))
	}
	for _, h := range o.Hosts {
		if err := leaf.VerifyHostname(h); err != nil {
			return fmt.Sprintf("does not cover %s", h)
		}
	}
	return ""
}

// InjectCABundle sets caBundle on every webhook of MutatingWebhookConfiguration
// name, so that the API server trusts the serving certificate. It writes
// only when a caBundle differs.
func InjectCABundle(ctx context.Context, c kubernetes.Interface, name string, caBundle []byte) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cfg, err := c.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		changed := false
		for i := range cfg.Webhooks {
			if string(cfg.Webhooks[i].ClientConfig.CABundle) != string(caBundle) {
				cfg.Webhooks[i].ClientConfig.CABundle = caBundle
				changed = true
			}
		}
		if !changed {
			return nil
		}
		_, err = c.AdmissionregistrationV1().MutatingWebhookConfigurations().Update(ctx, cfg, metav1.UpdateOptions{})
		if err == nil {
			klog.InfoS("injected the webhook's CA bundle", "mutatingwebhookconfiguration", name)
		}
		return err
	})
}

// KeepCABundle runs InjectCABundle now and every period until ctx ends, so
// that a configuration re-applied from manifests (with an empty caBundle)
// is fixed within one period. Failures are logged, not fatal: the webhook
// keeps serving replicas whose configuration is already right.
func KeepCABundle(ctx context.Context, c kubernetes.Interface, name string, caBundle []byte, period time.Duration) {
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := InjectCABundle(ctx, c, name, caBundle); err != nil {
			klog.ErrorS(err, "injecting the webhook's CA bundle", "mutatingwebhookconfiguration", name)
		}
	}, period)
}
