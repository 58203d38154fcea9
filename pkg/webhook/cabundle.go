package webhook

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
)

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
			klog.InfoS("injected the webhook's CA bundle", "mutatingwebhookconfiguration", name, "bytes", len(caBundle))
		}
		return err
	})
}
