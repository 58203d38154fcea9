package servingcert

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// Provisioner keeps a self-signed serving certificate: in the Secret that
// all replicas share, in the files the server watches, and, through
// Inject, in the caBundle of the objects that point the API server at the
// server. Every replica runs one; they agree through the Secret.
type Provisioner struct {
	Client kubernetes.Interface
	Cert   Options
	// Inject keeps caBundle of the caller's objects (a webhook
	// configuration, APIServices) equal to the Secret's ca.crt, writing
	// only when it differs; nil leaves caBundles alone.
	Inject func(ctx context.Context, caBundle []byte) error
	// Dir receives CertName and KeyName (tls.crt, tls.key by default).
	Dir, CertName, KeyName string
	// Expiry, when set, is told Cert.Component and the serving
	// certificate's NotAfter after every Sync that wrote or kept one: the
	// caller exports it as ExpiryMetricName, so that an alert fires when
	// renewals keep failing.
	Expiry func(component string, notAfter time.Time)
}

// ExpiryMetricName is the gauge, in seconds since the epoch, of the
// NotAfter of the serving certificate a program keeps with a Provisioner,
// labelled component (Options.Component). hetsev-scaler (its webhook) and
// hetsev-metrics-adapter export it; the chart's
// HetsevServingCertificateExpiresSoon alert reads it.
const ExpiryMetricName = "hetsev_serving_certificate_expiry_timestamp_seconds"

// ExpiryMetricHelp is ExpiryMetricName's help text.
const ExpiryMetricHelp = "NotAfter of the serving certificate this program keeps, in seconds since the epoch, by component."

// Sync brings the Secret up to date (creating or renewing the certificate
// when due), then the caBundle, then the files, in that order: a replica
// writes a certificate to disk only once the API server's objects carry
// its CA. A failure to update the caBundle is logged, not returned: the
// certificate on disk must still be renewed, and a renewed certificate's
// CA was injected one renewal earlier.
func (p *Provisioner) Sync(ctx context.Context) error {
	sc, err := ensureSecret(ctx, p.Client, p.Cert)
	if err != nil {
		return err
	}
	if p.Inject != nil {
		if err := p.Inject(ctx, sc.bundle); err != nil {
			klog.ErrorS(err, "injecting the CA bundle", "component", p.Cert.Component)
		}
	}
	if err := p.write(sc.crt, sc.key); err != nil {
		return err
	}
	if certs := parseCerts(sc.crt); p.Expiry != nil && len(certs) > 0 {
		p.Expiry(p.Cert.Component, certs[0].NotAfter)
	}
	return nil
}

// Run calls Sync every interval until ctx ends, logging failures: a
// certificate renewed on the next try is still valid (renewal starts
// RenewBefore ahead of expiry), and a configuration re-applied from
// manifests with an empty caBundle is fixed within one interval.
func (p *Provisioner) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := p.Sync(ctx); err != nil && ctx.Err() == nil {
				klog.ErrorS(err, "keeping the serving certificate", "component", p.Cert.Component)
			}
		}
	}
}

// write puts crt and key into Dir when they differ from what is there, laid
// out as the kubelet lays out a Secret volume, so that both files change in
// one atomic step: Dir/..cert-NNN/{tls.crt,tls.key} holds each version,
// Dir/..data links to the current one and Dir/tls.crt and Dir/tls.key link
// through ..data. A new version is written aside, ..data is swapped by a
// rename, and the old version is removed; its removal is what a
// certificate watcher (controller-runtime's certwatcher in the webhook
// server, the API server library's dynamic serving certificate in the
// metrics adapter) sees, and it then reads the new pair, never a new
// certificate with the old key.
func (p *Provisioner) write(crt, key []byte) error {
	oldCrt, _ := os.ReadFile(filepath.Join(p.Dir, p.CertName))
	oldKey, _ := os.ReadFile(filepath.Join(p.Dir, p.KeyName))
	if bytes.Equal(oldCrt, crt) && bytes.Equal(oldKey, key) {
		return nil
	}
	if err := p.swap(crt, key); err != nil {
		return fmt.Errorf("writing the %s certificate to %s: %w", p.Cert.Component, p.Dir, err)
	}
	klog.InfoS("wrote the serving certificate", "component", p.Cert.Component, "dir", p.Dir)
	return nil
}

const dataLink = "..data"

func (p *Provisioner) swap(crt, key []byte) error {
	if err := os.MkdirAll(p.Dir, 0o755); err != nil {
		return err
	}
	version, err := os.MkdirTemp(p.Dir, "..cert-")
	if err != nil {
		return err
	}
	if err := os.Chmod(version, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(version, p.KeyName), key, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(version, p.CertName), crt, 0o644); err != nil {
		return err
	}
	if err := relink(p.Dir, dataLink, filepath.Base(version)); err != nil {
		return err
	}
	for _, name := range []string{p.KeyName, p.CertName} {
		if err := relink(p.Dir, name, filepath.Join(dataLink, name)); err != nil {
			return err
		}
	}
	old, err := filepath.Glob(filepath.Join(p.Dir, "..cert-*"))
	if err != nil {
		return err
	}
	for _, o := range old {
		if o != version {
			if err := os.RemoveAll(o); err != nil {
				return err
			}
		}
	}
	return nil
}

// relink makes dir/name a symbolic link to target, replacing whatever was
// there in one rename; a link that is already right is left alone.
func relink(dir, name, target string) error {
	path := filepath.Join(dir, name)
	if t, err := os.Readlink(path); err == nil && t == target {
		return nil
	}
	tmp := path + ".tmp"
	_ = os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
