package cluster

import (
	"fmt"
	"net"
	"net/http"
	"time"
)

// ServeLoopback serves h on 127.0.0.1 at a free port until the returned
// stop function is called; it returns the host:port.
func ServeLoopback(h http.Handler) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("listening on loopback: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return l.Addr().String(), func() { _ = srv.Close() }, nil
}
