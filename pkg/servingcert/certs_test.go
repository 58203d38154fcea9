package servingcert

import (
	"context"
	"crypto/x509"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	certutil "k8s.io/client-go/util/cert"
)

func TestServingCertIsSharedAndRenewed(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	o := Options{Namespace: "hetsev-system", SecretName: "tls", Hosts: []string{"hetsev-webhook.hetsev-system.svc", "127.0.0.1"}}
	first, ca1, err := Ensure(ctx, c, o)
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
	_, ca2, err := Ensure(ctx, c, o)
	if err != nil || string(ca2) != string(ca1) {
		t.Errorf("second replica got a different certificate (err %v)", err)
	}
	// One that expires within RenewBefore, or misses a host, is replaced.
	o.RenewBefore = 400 * 24 * time.Hour
	_, ca3, err := Ensure(ctx, c, o)
	if err != nil || string(ca3) == string(ca1) {
		t.Errorf("expiring certificate kept (err %v)", err)
	}
	o.RenewBefore, o.Hosts = 0, append(o.Hosts, "other.example")
	_, ca4, err := Ensure(ctx, c, o)
	if err != nil || string(ca4) == string(ca3) {
		t.Errorf("certificate without a new host kept (err %v)", err)
	}
	// Garbage in the Secret is replaced, not served.
	s, _ = c.CoreV1().Secrets("hetsev-system").Get(ctx, "tls", metav1.GetOptions{})
	s.Data[v1.TLSCertKey] = []byte("junk")
	if _, err := c.CoreV1().Secrets("hetsev-system").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, ca5, err := Ensure(ctx, c, o); err != nil || string(ca5) == "junk" {
		t.Errorf("junk certificate: err %v", err)
	}
}

// verifies says whether the serving certificate in tls.crt chains to a CA in
// bundle and covers host at time at, as the API server checks it.
func verifies(t *testing.T, crt, bundle []byte, host string, at time.Time) error {
	t.Helper()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundle) {
		t.Fatalf("bundle has no certificate: %q", bundle)
	}
	leaf := parseCerts(crt)[0]
	_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	return err
}

// A renewed certificate is signed by a CA that was already in the bundle
// before the renewal (so the API server trusts it before any replica serves
// it), and the bundle after the renewal still trusts the previous
// certificate (replicas that have not switched yet). CAs leave the bundle
// when they expire.
func TestRenewalIsTrustedBeforeItIsServed(t *testing.T) {
	o := Options{Namespace: "ns", SecretName: "tls", Hosts: []string{"hetsev-webhook.hetsev-system.svc", "127.0.0.1"}, MaxAge: time.Hour, RenewBefore: 20 * time.Minute}
	host := o.Hosts[0]
	t0 := time.Now()
	s0, why, err := refresh(servingCert{}, o, t0)
	if err != nil || why == "" {
		t.Fatalf("first certificate: why %q, err %v", why, err)
	}
	if again, why, err := refresh(s0, o, t0.Add(time.Minute)); err != nil || why != "" || string(again.crt) != string(s0.crt) || string(again.bundle) != string(s0.bundle) {
		t.Fatalf("fresh certificate changed: why %q, err %v", why, err)
	}
	if err := verifies(t, s0.crt, s0.bundle, host, t0); err != nil {
		t.Fatalf("first certificate not trusted by its bundle: %v", err)
	}
	if n := len(parseCerts(s0.bundle)); n != 2 {
		t.Errorf("first bundle has %d CAs, want the current and the next", n)
	}

	t1 := t0.Add(41 * time.Minute) // 19 min left < RenewBefore
	s1, why, err := refresh(s0, o, t1)
	if err != nil || !strings.Contains(why, "expires") {
		t.Fatalf("renewal: why %q, err %v", why, err)
	}
	old, renewed := parseCerts(s0.crt)[0], parseCerts(s1.crt)[0]
	if old.SerialNumber.Cmp(renewed.SerialNumber) == 0 || !renewed.NotAfter.After(old.NotAfter) {
		t.Fatalf("renewal kept serial %v / NotAfter %v", old.SerialNumber, renewed.NotAfter)
	}
	if err := verifies(t, s1.crt, s0.bundle, host, t1); err != nil {
		t.Errorf("renewed certificate is not trusted by the bundle injected before the renewal: %v", err)
	}
	if err := verifies(t, s0.crt, s1.bundle, host, t1); err != nil {
		t.Errorf("previous certificate is not trusted by the bundle after the renewal: %v", err)
	}
	if err := verifies(t, s1.crt, s1.bundle, host, t1); err != nil {
		t.Errorf("renewed certificate is not trusted by its own bundle: %v", err)
	}
	if string(s1.nextCA) == string(s0.nextCA) {
		t.Error("the next CA signed the renewed certificate but stayed the next CA")
	}

	// CAs live twice MaxAge: by t0+2h1m the first certificate's CA has
	// expired and is dropped. The certificate from t1 expired at t0+1h41m
	// (no replica ran since): it is renewed, still by the CA injected at t1.
	t2 := t0.Add(2*time.Hour + time.Minute)
	s2, _, err := refresh(s1, o, t2)
	if err != nil {
		t.Fatal(err)
	}
	firstCA := chainCAs(s0.crt)[0]
	for _, c := range parseCerts(s2.bundle) {
		if string(c.Raw) == string(firstCA.Raw) {
			t.Error("expired CA kept in the bundle")
		}
	}
	if err := verifies(t, s2.crt, s1.bundle, host, t2); err != nil {
		t.Errorf("second renewal is not trusted by the bundle before it: %v", err)
	}
}

// A Secret written before the bundle and next CA existed (tls.crt = the
// certificate and its self-signed CA, tls.key) keeps its certificate: it
// gets a bundle with that CA and a next CA.
func TestSecretWithoutBundleKeepsItsCertificate(t *testing.T) {
	o := Options{Namespace: "ns", SecretName: "tls", Hosts: []string{"hetsev-webhook.hetsev-system.svc"}}
	if err := o.defaults(); err != nil {
		t.Fatal(err)
	}
	crt, key, err := certutil.GenerateSelfSignedCertKeyWithOptions(certutil.SelfSignedCertKeyOptions{Host: o.Hosts[0], MaxAge: o.MaxAge})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	got, why, err := refresh(servingCert{crt: crt, key: key}, o, now)
	if err != nil || why == "" {
		t.Fatalf("why %q, err %v", why, err)
	}
	if string(got.crt) != string(crt) || string(got.key) != string(key) {
		t.Error("certificate replaced")
	}
	if err := verifies(t, got.crt, got.bundle, o.Hosts[0], now); err != nil {
		t.Errorf("kept certificate not trusted by the new bundle: %v", err)
	}
	if _, err := parseCA(got.nextCA, got.nextKey); err != nil {
		t.Errorf("next CA: %v", err)
	}
}
