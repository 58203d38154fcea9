package webhook

import (
	"context"
	"fmt"
	"time"

	"k8s.io/klog/v2"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/hetsev/hetsev/pkg/servingcert"
)

// ReadyzCheckName is the webhook's check on the manager's /readyz.
const ReadyzCheckName = "webhook"

// server is controller-runtime's webhook server with the self-signed
// certificate's provisioner in front of it. It is a crwebhook.Server, so
// the manager starts it with its webhooks (before its caches, on every
// replica, leader or not) and stops with the error its Start returns.
type server struct {
	crwebhook.Server
	// certs keeps the self-signed certificate every interval; nil when
	// the certificate is mounted into certDir.
	certs    *servingcert.Provisioner
	interval time.Duration

	addr, certDir string
	selfSigned    bool
}

// Start writes the certificate (with certs) and serves until ctx ends.
// The server cannot start without a certificate in certDir, so the first
// Sync comes first and its failure is returned; later Syncs are retried
// every interval (a renewal starts RenewBefore ahead of expiry). Errors:
// the first Sync, and the server's (no certificate, a port that cannot be
// bound), each naming the address and the certificate directory.
func (s *server) Start(ctx context.Context) error {
	if s.certs != nil {
		if err := s.certs.Sync(ctx); err != nil {
			return fmt.Errorf("webhook on %s: %w", s.addr, err)
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go s.certs.Run(ctx, s.interval)
	}
	klog.InfoS("starting the pod admission webhook", "addr", s.addr, "path", Path, "certDir", s.certDir, "selfSigned", s.selfSigned)
	if err := s.Server.Start(ctx); err != nil {
		return fmt.Errorf("webhook server on %s (certificate in %s): %w", s.addr, s.certDir, err)
	}
	return nil
}
