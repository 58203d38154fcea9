package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	certutil "k8s.io/client-go/util/cert"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/hetsev/hetsev/internal/cluster"
)

// TestAdapterAPIServiceVerifiesCertificate: hetsev-metrics-adapter, run as
// the manifests run it (--cert-self-signed), writes the CA of its serving
// certificate into its APIServices' caBundle; there is no
// insecureSkipTLSVerify, the certificate names the Service
// (hetsev-metrics-adapter.hetsev-system.svc) and chains to that bundle, and
// the kube-apiserver serves custom.metrics.k8s.io through it. With a
// foreign CA in caBundle the kube-apiserver refuses the adapter: it does
// verify.
func TestAdapterAPIServiceVerifiesCertificate(t *testing.T) {
	cp, ctx := controlPlane(t)
	ad, port, err := cluster.StartAdapter(ctx, cp, cluster.AdapterOptions{ScrapeInterval: "1s"})
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, ad)
	ag, err := aggregator.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"v1beta2.custom.metrics.k8s.io", "v1beta1.custom.metrics.k8s.io"} {
		as, err := ag.ApiregistrationV1().APIServices().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if as.Spec.InsecureSkipTLSVerify || len(as.Spec.CABundle) == 0 {
			t.Fatalf("%s: insecureSkipTLSVerify %v, caBundle %d bytes; want a caBundle", name, as.Spec.InsecureSkipTLSVerify, len(as.Spec.CABundle))
		}
	}
	as, _ := ag.ApiregistrationV1().APIServices().Get(ctx, "v1beta2.custom.metrics.k8s.io", metav1.GetOptions{})
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(as.Spec.CABundle) {
		t.Fatalf("caBundle holds no certificate")
	}
	// The check the aggregator makes: the Service's DNS name, the bundle.
	host := cluster.AdapterService + "." + cluster.SystemNamespace + ".svc"
	conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{RootCAs: roots, ServerName: host})
	if err != nil {
		t.Fatalf("the adapter's certificate does not verify for %s against caBundle: %v", host, err)
	}
	conn.Close()
	disc, err := discovery.NewDiscoveryClientForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	// Available is set by the availability controller; the proxy may take
	// a moment longer to serve the group, so wait for the answer itself.
	var lastErr error
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, lastErr = disc.ServerResourcesForGroupVersion("custom.metrics.k8s.io/v1beta2")
		return lastErr == nil, nil
	}); err != nil {
		t.Fatalf("custom.metrics.k8s.io through the kube-apiserver: %v", lastErr)
	}

	// A foreign CA in caBundle: the aggregator no longer trusts the adapter.
	foreign, err := foreignCA()
	if err != nil {
		t.Fatal(err)
	}
	patch := fmt.Appendf(nil, `{"spec":{"caBundle":%q}}`, base64.StdEncoding.EncodeToString(foreign))
	if _, err := ag.ApiregistrationV1().APIServices().Patch(ctx, as.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	var why string
	waitFor(ctx, t, 60*time.Second, "the aggregator to refuse the adapter under a foreign CA", func(ctx context.Context) (bool, error) {
		got, err := ag.ApiregistrationV1().APIServices().Get(ctx, as.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiregv1.Available && c.Status == apiregv1.ConditionFalse {
				why = c.Reason + ": " + c.Message
				return true, nil
			}
		}
		return false, nil
	})
	t.Logf("with a foreign caBundle: %s", why)
	if !strings.Contains(why, "x509") && !strings.Contains(why, "certificate") {
		t.Errorf("unavailable for %q, want a certificate error", why)
	}
}

// foreignCA is the PEM of a self-signed CA unrelated to the adapter's.
func foreignCA() ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	ca, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "foreign-ca"}, key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: ca.Raw}), nil
}
