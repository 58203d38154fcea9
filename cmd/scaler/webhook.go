package main

import (
	"context"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/hetsev/hetsev/pkg/webhook"
)

// webhookFlags configure the pod admission webhook the scaler serves.
type webhookFlags struct {
	addr, secret, namespace, hosts, configuration string
}

// start obtains the shared serving certificate, keeps the webhook
// configuration's caBundle in step with it and serves the webhook. An error
// (no certificate, port taken) stops the program: with failurePolicy Fail a
// webhook that does not serve blocks hetsev pods, so it must be seen.
func (w webhookFlags) start(ctx context.Context, kube kubernetes.Interface) error {
	if w.addr == "" || w.addr == "0" {
		return nil
	}
	var hosts []string
	for _, h := range strings.Split(w.hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	cert, ca, err := webhook.EnsureServingCert(ctx, kube, webhook.CertOptions{Namespace: w.namespace, SecretName: w.secret, Hosts: hosts})
	if err != nil {
		return err
	}
	if w.configuration != "" {
		go webhook.KeepCABundle(ctx, kube, w.configuration, ca, time.Minute)
	}
	return webhook.Serve(ctx, w.addr, cert)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
