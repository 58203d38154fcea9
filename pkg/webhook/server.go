package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/klog/v2"
)

// Serve serves the webhook over TLS on addr until ctx ends. It returns once
// the listener is open, so a caller can report readiness; errors are a
// listener that cannot be opened.
func Serve(ctx context.Context, addr string, cert tls.Certificate) error {
	mux := http.NewServeMux()
	mux.Handle(Path, NewHandler())
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("webhook listener on %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}},
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	go func() {
		if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.ErrorS(err, "webhook server stopped", "addr", addr)
		}
	}()
	klog.InfoS("serving the pod admission webhook", "addr", ln.Addr().String(), "path", Path)
	return nil
}
