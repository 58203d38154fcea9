package webhook

import (
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

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
