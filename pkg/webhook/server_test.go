package webhook

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// freeAddr returns a 127.0.0.1 address with a port that was free a moment
// ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// testManager is a manager with no API server behind it (nothing it runs
// here reads one), no metrics, and its probes on probeAddr ("0": none)
// with a ping readiness check, as hetsev-scaler's.
func testManager(t *testing.T, probeAddr string) manager.Manager {
	t.Helper()
	mgr, err := manager.New(&rest.Config{Host: "https://127.0.0.1:1"}, manager.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: probeAddr,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		t.Fatal(err)
	}
	return mgr
}

func testOptions(t *testing.T, bind string) *Options {
	o := NewOptions()
	o.BindAddress, o.CertDir, o.CertHosts, o.Namespace, o.Configuration = bind, t.TempDir(), "127.0.0.1", "ns", ""
	return o
}

func readyz(addr string) (int, string) {
	resp, err := http.Get("http://" + addr + "/readyz?verbose")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// readyzUntil polls /readyz every 20 ms until done accepts its status
// code or 10 s pass, and returns the last answer for the caller to check.
func readyzUntil(addr string, done func(code int) bool) (code int, body string) {
	_ = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		code, body = readyz(addr)
		return done(code), nil
	})
	return code, body
}

// The manager's /readyz fails while the webhook has no certificate (the
// Secret read is held back) and passes once the server answers TLS.
func TestReadinessWaitsForTheWebhookToServe(t *testing.T) {
	held := make(chan struct{})
	kube := fake.NewClientset()
	kube.PrependReactor("get", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
		<-held
		return false, nil, nil
	})
	probe := freeAddr(t)
	mgr := testManager(t, probe)
	if err := testOptions(t, freeAddr(t)).AddToManager(mgr, kube); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager stopped with %v", err)
		}
	}()
	var unblock sync.Once
	release := func() { unblock.Do(func() { close(held) }) }
	defer release() // before the manager stops, on failure too

	code, body := readyzUntil(probe, func(code int) bool { return code != 0 })
	if code != http.StatusInternalServerError || !strings.Contains(body, "[-]"+ReadyzCheckName) {
		t.Fatalf("before the certificate exists: /readyz answered %d %q, want 500 with the webhook check failing", code, body)
	}
	release()
	code, body = readyzUntil(probe, func(code int) bool { return code == http.StatusOK })
	if code != http.StatusOK || !strings.Contains(body, "[+]"+ReadyzCheckName) {
		t.Fatalf("once the webhook serves: /readyz answered %d %q, want 200", code, body)
	}
}

// A webhook server that cannot bind its port stops the manager with the
// error; the replica does not stay up without its webhook.
func TestWebhookServerErrorStopsTheManager(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	mgr := testManager(t, "0")
	if err := testOptions(t, taken.Addr().String()).AddToManager(mgr, fake.NewClientset()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = mgr.Start(ctx)
	if ctx.Err() != nil {
		t.Fatalf("the manager ran until its context ended (%v) with the webhook's port taken", err)
	}
	if err == nil || !strings.Contains(err.Error(), "webhook server on "+taken.Addr().String()) || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("manager's Start returned %v, want the webhook server's bind error", err)
	}
}

// A disabled webhook adds neither a runnable nor a readiness check.
func TestDisabledWebhookAddsNothing(t *testing.T) {
	probe := freeAddr(t)
	mgr := testManager(t, probe)
	o := testOptions(t, "0")
	if err := o.AddToManager(mgr, fake.NewClientset()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() { cancel(); <-done }()
	code, body := readyzUntil(probe, func(code int) bool { return code == http.StatusOK })
	if code != http.StatusOK || strings.Contains(body, ReadyzCheckName) {
		t.Fatalf("disabled webhook: /readyz answered %d %q", code, body)
	}
}
