package cluster

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
)

// AdapterService is the Service name the APIService points at.
const AdapterService = "hetsev-metrics-adapter"

// RegisterAPIService points custom.metrics.k8s.io at an adapter listening
// on localhost:port and waits until the aggregator reports it Available.
// The APIServices verify the adapter as in a cluster: their caBundle is
// written by the adapter (--cert-self-signed, as
// manifests/metrics-adapter/deployment.yaml runs it) and kept across
// re-registrations; there is no insecureSkipTLSVerify.
//
// The Service is of type ExternalName, pointing at localhost (Endpoints may
// not hold loopback IPs): the aggregator resolves it to localhost:port, but
// checks the certificate against the Service's DNS name,
// hetsev-metrics-adapter.hetsev-system.svc, which the adapter's
// certificate names.
func RegisterAPIService(ctx context.Context, cp *ControlPlane, port int) error {
	if err := applyAPIService(ctx, cp, port); err != nil {
		return err
	}
	return WaitAPIServiceAvailable(ctx, cp)
}

// applyAPIService creates or updates the adapter's Service and APIServices
// for port, keeping a caBundle already written.
func applyAPIService(ctx context.Context, cp *ControlPlane, port int) error {
	if err := EnsureNamespace(ctx, cp.Client, SystemNamespace); err != nil {
		return err
	}
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: AdapterService, Namespace: SystemNamespace},
		Spec: v1.ServiceSpec{
			Type: v1.ServiceTypeExternalName, ExternalName: "localhost",
			Ports: []v1.ServicePort{{Name: "https", Port: int32(port)}},
		},
	}
	// Create or update: an adapter restarted on another port takes over.
	if _, err := cp.Client.CoreV1().Services(SystemNamespace).Create(ctx, svc, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		old, err := cp.Client.CoreV1().Services(SystemNamespace).Get(ctx, AdapterService, metav1.GetOptions{})
		if err != nil {
			return err
		}
		old.Spec.Ports = svc.Spec.Ports
		if _, err := cp.Client.CoreV1().Services(SystemNamespace).Update(ctx, old, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating adapter service: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("creating adapter service: %w", err)
	}
	ag, err := aggregator.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	p := int32(port)
	for _, version := range []string{"v1beta2", "v1beta1"} {
		as := &apiregv1.APIService{
			ObjectMeta: metav1.ObjectMeta{Name: version + ".custom.metrics.k8s.io"},
			Spec: apiregv1.APIServiceSpec{
				Service:              &apiregv1.ServiceReference{Namespace: SystemNamespace, Name: AdapterService, Port: &p},
				Group:                "custom.metrics.k8s.io",
				Version:              version,
				GroupPriorityMinimum: 100,
				VersionPriority:      map[string]int32{"v1beta2": 200, "v1beta1": 100}[version],
			},
		}
		if _, err := ag.ApiregistrationV1().APIServices().Create(ctx, as, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
			// The aggregator writes the status meanwhile: retry on conflict.
			// Its Available condition may still be the old adapter's; callers
			// that re-register wait for an answer from the new one.
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				old, err := ag.ApiregistrationV1().APIServices().Get(ctx, as.Name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				caBundle := old.Spec.CABundle
				old.Spec = as.Spec
				old.Spec.CABundle = caBundle
				_, err = ag.ApiregistrationV1().APIServices().Update(ctx, old, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				return fmt.Errorf("updating APIService %s: %w", as.Name, err)
			}
		} else if err != nil {
			return fmt.Errorf("creating APIService %s: %w", as.Name, err)
		}
	}
	return nil
}

// WaitAPIServiceAvailable waits (up to a minute) until the aggregator reports
// v1beta2.custom.metrics.k8s.io Available: it reached the adapter and
// verified its certificate.
func WaitAPIServiceAvailable(ctx context.Context, cp *ControlPlane) error {
	ag, err := aggregator.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := ag.ApiregistrationV1().APIServices().Get(ctx, "v1beta2.custom.metrics.k8s.io", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiregv1.Available && c.Status == apiregv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}
