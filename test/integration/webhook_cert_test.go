package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// The self-signed serving certificate is renewed while the webhook runs.
// With a 20 s certificate renewed 15 s before it expires, checked every
// 500 ms: the certificate the webhook presents on new TLS connections
// changes (serial and NotAfter) without a restart, always well before it
// expires; the caBundle trusts every certificate seen, from when it is first
// seen until it expires (replicas that have not switched yet); and pods
// created through the API server are mutated by the webhook throughout
// (each renewal changes the caBundle, so the API server dials the webhook
// anew and verifies the certificate served then). The test polls the served
// certificate and the configuration; it sleeps nowhere.
func TestWebhookCertificateRotates(t *testing.T) {
	cp, ctx := controlPlane(t)
	port, err := cluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	applyManifests(ctx, t, cp, port)
	c := cp.Client
	// The webhook gives GPU pods runtimeClassName nvidia; the API server
	// refuses a pod naming a RuntimeClass that does not exist (the GPU
	// Operator creates it on a real cluster).
	if err := cluster.CreateNvidiaRuntimeClass(ctx, c); err != nil {
		t.Fatal(err)
	}
	asScaler, err := cp.KubeconfigAs(scalerSA)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	scaler, err := cluster.StartScaler(ctx, cp, "--kubeconfig="+asScaler,
		"--webhook-bind-address="+addr, "--webhook-cert-hosts=127.0.0.1", "--webhook-namespace=hetsev-system",
		"--webhook-cert-validity=20s", "--webhook-cert-renew-before=15s", "--webhook-cert-check-interval=500ms")
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, scaler)

	probes := 0
	admit := func(ctx context.Context) error {
		probes++
		p, err := c.CoreV1().Pods("default").Create(ctx, userPod(fmt.Sprintf("probe-%d", probes), true, ""), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return err
		}
		if p.Spec.SchedulerName != v1alpha1.SchedulerName {
			return fmt.Errorf("schedulerName %q: not mutated", p.Spec.SchedulerName)
		}
		return nil
	}
	waitFor(ctx, t, 30*time.Second, "the webhook to mutate a dry-run pod", func(ctx context.Context) (bool, error) {
		return admit(ctx) == nil, nil
	})

	first, err := servedCert(addr)
	if err != nil {
		t.Fatal(err)
	}
	firstBundle, err := caBundle(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("serving serial %x, NotAfter %s; caBundle has %d CAs", first.SerialNumber, first.NotAfter.Format(time.RFC3339), countCerts(firstBundle))
	seen := []*x509.Certificate{first}
	var bundle []byte
	late := map[string]bool{} // serials reported as served too close to expiry
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, false, func(ctx context.Context) (bool, error) {
		cert, err := servedCert(addr)
		if err != nil {
			t.Errorf("TLS handshake with the webhook: %v", err)
			return false, nil
		}
		now := time.Now()
		// Renewed 15 s ahead, checked every 500 ms: a served certificate
		// has about 14.5 s left, 5 s on a very slow machine; one close to
		// expiry was not renewed ahead of it.
		if left := cert.NotAfter.Sub(now); left < 5*time.Second && !late[cert.SerialNumber.String()] {
			late[cert.SerialNumber.String()] = true
			t.Errorf("the webhook serves a certificate with %s left (serial %x): not renewed ahead of expiry", left.Round(time.Millisecond), cert.SerialNumber)
		}
		if bundle, err = caBundle(ctx, c); err != nil {
			return false, err
		}
		if last := seen[len(seen)-1]; cert.SerialNumber.Cmp(last.SerialNumber) != 0 {
			seen = append(seen, cert)
			t.Logf("rotation %d: serial %x, NotAfter %s; caBundle has %d CAs", len(seen)-1, cert.SerialNumber, cert.NotAfter.Format(time.RFC3339), countCerts(bundle))
			if !cert.NotAfter.After(last.NotAfter) {
				t.Errorf("new certificate's NotAfter %s is not after the previous one's %s", cert.NotAfter, last.NotAfter)
			}
		}
		for i, s := range seen {
			if now.Before(s.NotAfter) {
				if err := trusts(bundle, s, now); err != nil {
					t.Errorf("caBundle does not trust certificate %d (serial %x, valid until %s): %v", i, s.SerialNumber, s.NotAfter.Format(time.RFC3339), err)
				}
			}
		}
		if err := admit(ctx); err != nil {
			t.Errorf("admission through the API server during rotation %d: %v", len(seen)-1, err)
		}
		return len(seen) > 2, nil
	})
	if err != nil {
		t.Fatalf("waiting for two certificate renewals (saw %d certificates): %v", len(seen), err)
	}
	if string(bundle) == string(firstBundle) {
		t.Error("caBundle unchanged across two renewals")
	}
	if exited, err := scaler.Exited(); exited {
		t.Fatalf("hetsev-scaler exited during the rotation: %v", err)
	}
	t.Logf("%d admission probes through the API server across %d renewals", probes, len(seen)-1)
}

// servedCert returns the certificate the webhook presents on a new TLS
// connection.
func servedCert(addr string) (*x509.Certificate, error) {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reads the certificate, trusts nothing
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

func caBundle(ctx context.Context, c kubernetes.Interface) ([]byte, error) {
	w, err := c.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "hetsev-scheduler-selection", metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return w.Webhooks[0].ClientConfig.CABundle, nil
}

// trusts verifies cert for 127.0.0.1 against bundle at now, as the API server
// does when it dials the webhook.
func trusts(bundle []byte, cert *x509.Certificate, now time.Time) error {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundle) {
		return fmt.Errorf("no certificate in caBundle")
	}
	_, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "127.0.0.1", CurrentTime: now})
	return err
}

// countCerts counts the certificates in PEM data.
func countCerts(data []byte) int {
	certs, _ := certutil.ParseCertsPEM(data)
	return len(certs)
}
