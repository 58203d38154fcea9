package server

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	agfake "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/fake"
)

// The self-signed certificate's flags: the defaults name the Service the
// APIServices point at, and settings that conflict or cannot renew are
// refused, naming the flag.
func TestSelfSignedCertFlags(t *testing.T) {
	o := parse(t, "--cert-self-signed")
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(o.Cert.Hosts, ",") != "hetsev-metrics-adapter.hetsev-system.svc" ||
		strings.Join(o.Cert.APIServices, ",") != "v1beta2.custom.metrics.k8s.io,v1beta1.custom.metrics.k8s.io" || o.Cert.Secret != DefaultCertSecret {
		t.Errorf("defaults %+v", o.Cert)
	}
	for args, want := range map[string]string{
		"--cert-self-signed --tls-cert-file=/x/tls.crt --tls-private-key-file=/x/tls.key": "--tls-cert-file",
		"--cert-self-signed --cert-hosts=":                                                "--cert-hosts",
		"--cert-self-signed --cert-renew-before=800h --cert-validity=700h":                "--cert-renew-before",
		"--cert-self-signed --cert-check-interval=0s":                                     "--cert-check-interval",
	} {
		if err := parse(t, strings.Fields(args)...).Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %s", args, err, want)
		}
	}
}

// The CA bundle goes into every APIService named, replacing
// insecureSkipTLSVerify, and is written only where it differs; a missing
// APIService is reported, the others still written.
func TestInjectAPIServicesSetsCABundle(t *testing.T) {
	ctx := context.Background()
	ag := agfake.NewClientset(
		&apiregv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1beta2.custom.metrics.k8s.io"}, Spec: apiregv1.APIServiceSpec{InsecureSkipTLSVerify: true}},
		&apiregv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1beta1.custom.metrics.k8s.io"}},
	)
	if err := injectAPIServices(ctx, ag, DefaultAPIServices, []byte("PEM")); err != nil {
		t.Fatal(err)
	}
	for _, name := range DefaultAPIServices {
		as, err := ag.ApiregistrationV1().APIServices().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if string(as.Spec.CABundle) != "PEM" || as.Spec.InsecureSkipTLSVerify {
			t.Errorf("%s: caBundle %q, insecureSkipTLSVerify %v; want the bundle and false", name, as.Spec.CABundle, as.Spec.InsecureSkipTLSVerify)
		}
	}
	patches := func() int {
		n := 0
		for _, a := range ag.Actions() {
			if a.GetVerb() == "patch" {
				n++
			}
		}
		return n
	}
	before := patches()
	if err := injectAPIServices(ctx, ag, DefaultAPIServices, []byte("PEM")); err != nil || patches() != before {
		t.Errorf("same bundle again: %v, %d patches; want none", err, patches()-before)
	}
	err := injectAPIServices(ctx, ag, []string{"v1.missing.example", "v1beta1.custom.metrics.k8s.io"}, []byte("PEM2"))
	if err == nil || !strings.Contains(err.Error(), "v1.missing.example") {
		t.Errorf("missing APIService: %v", err)
	}
	if as, _ := ag.ApiregistrationV1().APIServices().Get(ctx, "v1beta1.custom.metrics.k8s.io", metav1.GetOptions{}); string(as.Spec.CABundle) != "PEM2" {
		t.Errorf("the present APIService was not written: %q", as.Spec.CABundle)
	}
}
