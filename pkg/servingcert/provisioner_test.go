package servingcert

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// Sync keeps the Secret, the caBundle and the files in step; a renewal
// replaces both files in one step and leaves one version on disk.
func TestProvisionerSyncsSecretBundleAndFiles(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	var injected []byte // what the API server's objects carry
	dir := t.TempDir()
	// A file left by something else is replaced.
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &Provisioner{Client: c, Dir: dir, CertName: "tls.crt", KeyName: "tls.key",
		Inject: func(_ context.Context, caBundle []byte) error { injected = caBundle; return nil },
		Cert:   Options{Namespace: "ns", SecretName: "tls", Hosts: []string{"127.0.0.1"}, MaxAge: time.Hour, RenewBefore: time.Minute}}
	check := func(what string) []byte {
		t.Helper()
		s, err := c.CoreV1().Secrets("ns").Get(ctx, "tls", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for name, key := range map[string]string{"tls.crt": v1.TLSCertKey, "tls.key": v1.TLSPrivateKeyKey} {
			got, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil || string(got) != string(s.Data[key]) {
				t.Errorf("%s: %s differs from the Secret (%v)", what, name, err)
			}
		}
		if string(injected) != string(s.Data[SecretCABundleKey]) {
			t.Errorf("%s: caBundle is not the Secret's ca.crt", what)
		}
		versions, _ := filepath.Glob(filepath.Join(dir, "..cert-*"))
		if len(versions) != 1 {
			t.Errorf("%s: %d versions on disk, want 1", what, len(versions))
		}
		return s.Data[v1.TLSCertKey]
	}
	if err := p.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	first := check("first sync")
	if err := p.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if again := check("second sync"); string(again) != string(first) {
		t.Error("a fresh certificate was replaced")
	}
	p.Cert.RenewBefore = 2 * time.Hour // every certificate is due
	if err := p.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if renewed := check("renewal"); string(renewed) == string(first) {
		t.Error("a due certificate was kept")
	}
}

// TestProvisionerReportsExpiry: Sync tells Expiry the NotAfter of the
// certificate it wrote, about MaxAge from now, and of the renewed one
// after a renewal.
func TestProvisionerReportsExpiry(t *testing.T) {
	ctx := context.Background()
	var got []time.Time
	p := &Provisioner{Client: fake.NewClientset(), Dir: t.TempDir(), CertName: "tls.crt", KeyName: "tls.key",
		Expiry: func(_ string, notAfter time.Time) { got = append(got, notAfter) },
		Cert:   Options{Namespace: "ns", SecretName: "tls", Hosts: []string{"127.0.0.1"}, MaxAge: time.Hour, RenewBefore: time.Minute}}
	before := time.Now()
	if err := p.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Before(before.Add(time.Hour-time.Minute)) || got[0].After(time.Now().Add(time.Hour+time.Minute)) {
		t.Fatalf("Expiry after the first Sync: %v, want one NotAfter about an hour from %v", got, before)
	}
	p.Cert.MaxAge, p.Cert.RenewBefore = 3*time.Hour, 2*time.Hour // due: renewed for 3 h
	if err := p.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[1].After(got[0].Add(time.Hour)) {
		t.Errorf("Expiry after a renewal: %v, want a second NotAfter about 3 h from now", got)
	}
}
