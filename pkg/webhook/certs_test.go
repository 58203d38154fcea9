package webhook

import (
	"context"
	"crypto/x509"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestServingCertIsSharedAndRenewed(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	o := CertOptions{Namespace: "hetsev-system", SecretName: "tls", Hosts: []string{"hetsev-webhook.hetsev-system.svc", "127.0.0.1"}}
	first, ca1, err := EnsureServingCert(ctx, c, o)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(first.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range o.Hosts {
		if err := leaf.VerifyHostname(h); err != nil {
			t.Errorf("certificate does not cover %s: %v", h, err)
		}
	}
	s, err := c.CoreV1().Secrets("hetsev-system").Get(ctx, "tls", metav1.GetOptions{})
	if err != nil || s.Type != v1.SecretTypeTLS {
		t.Fatalf("secret %+v: %v", s, err)
	}
	// A second replica serves the same certificate.
	_, ca2, err := EnsureServingCert(ctx, c, o)
	if err != nil || string(ca2) != string(ca1) {
		t.Errorf("second replica got a different certificate (err %v)", err)
	}
	// One that expires within RenewBefore, or misses a host, is replaced.
	o.RenewBefore = 400 * 24 * time.Hour
	_, ca3, err := EnsureServingCert(ctx, c, o)
	if err != nil || string(ca3) == string(ca1) {
		t.Errorf("expiring certificate kept (err %v)", err)
	}
	o.RenewBefore, o.Hosts = 0, append(o.Hosts, "other.example")
	_, ca4, err := EnsureServingCert(ctx, c, o)
	if err != nil || string(ca4) == string(ca3) {
		t.Errorf("certificate without a new host kept (err %v)", err)
	}
	// Garbage in the Secret is replaced, not served.
	s, _ = c.CoreV1().Secrets("hetsev-system").Get(ctx, "tls", metav1.GetOptions{})
	s.Data[v1.TLSCertKey] = []byte("junk")
	if _, err := c.CoreV1().Secrets("hetsev-system").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, ca5, err := EnsureServingCert(ctx, c, o); err != nil || string(ca5) == "junk" {
		t.Errorf("junk certificate: err %v", err)
	}
}

func TestInjectCABundleSetsEveryWebhook(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset(&admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "cfg"},
		Webhooks:   []admissionregistrationv1.MutatingWebhook{{Name: "a.hetsev.io"}, {Name: "b.hetsev.io"}},
	})
	if err := InjectCABundle(ctx, c, "cfg", []byte("PEM")); err != nil {
		t.Fatal(err)
	}
	cfg, _ := c.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "cfg", metav1.GetOptions{})
	for _, w := range cfg.Webhooks {
		if string(w.ClientConfig.CABundle) != "PEM" {
			t.Errorf("%s: caBundle %q", w.Name, w.ClientConfig.CABundle)
		}
	}
	if err := InjectCABundle(ctx, c, "missing", []byte("PEM")); err == nil {
		t.Error("missing configuration: no error")
	}
}
