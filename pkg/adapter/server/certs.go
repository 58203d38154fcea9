package server

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/hetsev/hetsev/pkg/adapter/internal/selfmetrics"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/servingcert"
)

// Defaults of CertOptions: the names manifests/metrics-adapter uses.
const (
	// DefaultCertSecret is the Secret that holds the self-signed serving
	// certificate all replicas share.
	DefaultCertSecret = "hetsev-metrics-adapter-serving-cert"
	// DefaultCertHost is the name the kube-apiserver's aggregator checks
	// the certificate against: <service>.<namespace>.svc of the
	// APIService's service (manifests/metrics-adapter/service.yaml).
	DefaultCertHost = "hetsev-metrics-adapter." + v1alpha1.SystemNamespace + ".svc"
)

// DefaultAPIServices are the APIServices manifests/metrics-adapter/apiservice.yaml
// registers; their caBundle is kept.
var DefaultAPIServices = []string{"v1beta2.custom.metrics.k8s.io", "v1beta1.custom.metrics.k8s.io"}

// CertOptions configure the adapter's built-in serving certificate: with
// SelfSigned, a certificate kept by pkg/servingcert in a Secret shared by
// the replicas, written to --cert-dir (tls.crt, tls.key; the API server
// reloads them when they change), renewed ahead of expiry, and its CAs
// written into spec.caBundle of APIServices, so that the kube-apiserver
// verifies the adapter. Without it the certificate is --tls-cert-file (e.g.
// a cert-manager Certificate's Secret, cainjector filling caBundle), or the
// API server library's self-signed one for localhost, which no caBundle
// can verify.
type CertOptions struct {
	SelfSigned bool
	// Namespace and Secret name the Secret (created when absent).
	Namespace, Secret string
	// Hosts are the DNS names or IPs the certificate covers.
	Hosts []string
	// APIServices are the APIService names whose spec.caBundle is kept.
	APIServices []string
	// Validity is a new certificate's lifetime (its CA's is twice that),
	// RenewBefore how long before expiry it is renewed, CheckInterval how
	// often each replica checks the Secret, the caBundles and the files.
	Validity, RenewBefore, CheckInterval time.Duration
}

// defaultCertOptions are the flags' defaults; SelfSigned is off, so that a
// local run needs no rights on Secrets and APIServices.
func defaultCertOptions() CertOptions {
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = v1alpha1.SystemNamespace
	}
	return CertOptions{
		Namespace: ns, Secret: DefaultCertSecret, Hosts: []string{DefaultCertHost},
		APIServices: append([]string(nil), DefaultAPIServices...),
		Validity:    365 * 24 * time.Hour, RenewBefore: 30 * 24 * time.Hour, CheckInterval: time.Minute,
	}
}

func (c *CertOptions) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&c.SelfSigned, "cert-self-signed", c.SelfSigned,
		"Keep a self-signed serving certificate in --cert-secret, write it to --cert-dir (tls.crt, tls.key), renew it while running and keep spec.caBundle of --cert-apiservices, so that the kube-apiserver verifies the adapter (no insecureSkipTLSVerify). False: serve --tls-cert-file (e.g. cert-manager's, with its CA injector filling caBundle).")
	fs.StringVar(&c.Namespace, "cert-secret-namespace", c.Namespace, "Namespace of --cert-secret (default: $POD_NAMESPACE, else hetsev-system).")
	fs.StringVar(&c.Secret, "cert-secret", c.Secret, "Secret holding the self-signed serving certificate, shared by all replicas; created when absent.")
	fs.StringSliceVar(&c.Hosts, "cert-hosts", c.Hosts, "DNS names or IPs the self-signed certificate covers: the aggregator checks <service>.<namespace>.svc of the APIService's service.")
	fs.StringSliceVar(&c.APIServices, "cert-apiservices", c.APIServices, "APIServices whose spec.caBundle is kept equal to the CAs of the self-signed certificates (insecureSkipTLSVerify is turned off on them).")
	fs.DurationVar(&c.Validity, "cert-validity", c.Validity, "Validity of a self-signed serving certificate (its CA's is twice that).")
	fs.DurationVar(&c.RenewBefore, "cert-renew-before", c.RenewBefore, "Renew the self-signed serving certificate when it expires sooner than this.")
	fs.DurationVar(&c.CheckInterval, "cert-check-interval", c.CheckInterval, "How often each replica checks the certificate Secret (renewing when due), the caBundles and its certificate files.")
}

// validate reports settings that cannot work with SelfSigned, naming the
// flag; tlsCertFile is --tls-cert-file, which SelfSigned replaces.
func (c *CertOptions) validate(tlsCertFile string) error {
	if !c.SelfSigned {
		return nil
	}
	var hosts []string
	for _, h := range c.Hosts {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	switch {
	case tlsCertFile != "":
		return fmt.Errorf("--cert-self-signed and --tls-cert-file=%s: choose one", tlsCertFile)
	case c.Namespace == "" || c.Secret == "":
		return errors.New("--cert-self-signed needs --cert-secret and --cert-secret-namespace")
	case len(hosts) == 0:
		return errors.New("--cert-hosts: want at least one DNS name or IP")
	}
	if err := servingcert.CheckTiming("", c.Validity, c.RenewBefore, c.CheckInterval); err != nil {
		return err
	}
	c.Hosts = hosts
	return nil
}

// provisioner returns the keeper of the self-signed certificate, writing
// tls.crt and tls.key to dir and caBundle to the APIServices.
func (c *CertOptions) provisioner(cfg *rest.Config, dir string) (*servingcert.Provisioner, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ag, err := aggregator.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &servingcert.Provisioner{
		Client: kube, Dir: dir, CertName: "tls.crt", KeyName: "tls.key",
		Cert: servingcert.Options{Component: "metrics-adapter", Namespace: c.Namespace, SecretName: c.Secret, Hosts: c.Hosts,
			MaxAge: c.Validity, RenewBefore: c.RenewBefore},
		Inject: func(ctx context.Context, caBundle []byte) error {
			return injectAPIServices(ctx, ag, c.APIServices, caBundle)
		},
		Expiry: func(component string, notAfter time.Time) {
			selfmetrics.CertificateExpiry.WithLabelValues(component).Set(float64(notAfter.Unix()))
		},
	}, nil
}

// injectAPIServices sets spec.caBundle of the APIServices names to
// caBundle, and insecureSkipTLSVerify to false (the API server refuses
// both), with a merge patch, and only where either differs. A missing
// APIService is an error (the next check retries).
func injectAPIServices(ctx context.Context, ag aggregator.Interface, names []string, caBundle []byte) error {
	patch := fmt.Appendf(nil, `{"spec":{"caBundle":%q,"insecureSkipTLSVerify":false}}`, base64.StdEncoding.EncodeToString(caBundle))
	var errs []error
	for _, name := range names {
		as, err := ag.ApiregistrationV1().APIServices().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("APIService %s: %w", name, err))
			continue
		}
		if string(as.Spec.CABundle) == string(caBundle) && !as.Spec.InsecureSkipTLSVerify {
			continue
		}
		if _, err := ag.ApiregistrationV1().APIServices().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("APIService %s: %w", name, err))
			continue
		}
		klog.InfoS("injected the metrics adapter's CA bundle", "apiservice", name, "bytes", len(caBundle))
	}
	return errors.Join(errs...)
}

// certFiles are the files the provisioner writes in dir.
func certFiles(dir string) (crt, key string) {
	return filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
}
