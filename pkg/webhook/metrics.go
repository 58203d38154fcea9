package webhook

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/hetsev/hetsev/pkg/servingcert"
)

// certificateExpiry is servingcert.ExpiryMetricName for the webhook's
// self-signed serving certificate, on hetsev-scaler's /metrics (the
// controller-runtime registry); absent when the certificate comes from
// files (cert-manager, --webhook-self-signed=false).
var (
	certificateExpiry = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: servingcert.ExpiryMetricName,
		Help: servingcert.ExpiryMetricHelp,
	}, []string{"component"})
	registerOnce sync.Once
)

// registerMetrics registers certificateExpiry once.
func registerMetrics() {
	registerOnce.Do(func() { ctrlmetrics.Registry.MustRegister(certificateExpiry) })
}
