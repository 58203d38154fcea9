package cluster

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// FreePort returns a free TCP port on 127.0.0.1, for a program a test starts.
func FreePort() (int, error) { return freePort() }

// freePort asks the kernel for a free TCP port on 127.0.0.1.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startEtcd starts an embedded single-member etcd on loopback and returns its
// client URL.
func startEtcd(dir string) (*embed.Etcd, string, error) {
	cport, err := freePort()
	if err != nil {
		return nil, "", err
	}
	pport, err := freePort()
	if err != nil {
		return nil, "", err
	}
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.LogLevel = "error"
	// Its shutdown errors ("server closed") would clutter the demo output.
	cfg.LogOutputs = []string{filepath.Join(dir, "..", "etcd.log")}
	curl, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", cport))
	purl, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", pport))
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*curl}, []url.URL{*curl}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*purl}, []url.URL{*purl}
	cfg.InitialCluster = cfg.Name + "=" + purl.String()
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("starting etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, "", fmt.Errorf("etcd not ready after 60s")
	}
	return e, curl.String(), nil
}
