package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// TestScalerManagerServesProbesMetricsAndExitsOnLostLease: hetsev-scaler,
// run as its service account with manifests/' RBAC, takes Lease
// hetsev-system/hetsev-scaler, reconciles the example ModelService, serves
// /healthz, /readyz and /metrics (its hetsev_scaler_* beside
// controller-runtime's own), and exits non-zero when another holder takes
// its lease, so the kubelet restarts it as a standby.
func TestScalerManagerServesProbesMetricsAndExitsOnLostLease(t *testing.T) {
	cp, ctx := controlPlane(t)
	port, err := cluster.FreePort() // the webhook is not under test here
	if err != nil {
		t.Fatal(err)
	}
	a, _ := applyManifests(ctx, t, cp, port)
	objs, err := cluster.ReadManifests(filepath.Join(cluster.RepoRoot(), "manifests", "examples", "modelservice-resnet50.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Apply(ctx, "default", objs); err != nil {
		t.Fatal(err)
	}
	asScaler, err := cp.KubeconfigAs(scalerSA)
	if err != nil {
		t.Fatal(err)
	}
	mport, err := cluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	hport, err := cluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	scaler, err := cluster.StartScaler(ctx, cp, "--kubeconfig="+asScaler,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", mport), fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", hport))
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, scaler)

	get := func(port int, path string) (int, string) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		waitFor(ctx, t, 30*time.Second, path, func(context.Context) (bool, error) {
			code, _ := get(hport, path)
			return code == http.StatusOK, nil
		})
	}
	waitFor(ctx, t, 30*time.Second, "the Lease", func(ctx context.Context) (bool, error) {
		l, err := cp.Client.CoordinationV1().Leases(cluster.SystemNamespace).Get(ctx, v1alpha1.ScalerName, metav1.GetOptions{})
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "", nil
	})
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, 30*time.Second, "a decision on the example ModelService", func(ctx context.Context) (bool, error) {
		u, err := dyn.Resource(v1alpha1.Resource).Namespace("default").Get(ctx, "resnet50", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		gen, found, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		return found && gen == u.GetGeneration(), nil
	})
	var metrics string
	waitFor(ctx, t, 30*time.Second, "/metrics", func(context.Context) (bool, error) {
		code, body := get(mport, "/metrics")
		metrics = body
		return code == http.StatusOK && strings.Contains(body, "hetsev_scaler_decisions_total{"), nil
	})
	for _, want := range []string{
		`hetsev_scaler_decisions_total{action=`,
		`hetsev_scaler_decision_duration_seconds_count`,
		`controller_runtime_reconcile_total{controller="modelservice",result="success"}`,
		`leader_election_master_status{name="hetsev-scaler"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics has no %s", want)
		}
	}

	// Another holder takes the lease: the scaler cannot renew it and exits
	// non-zero within its renew deadline (10 s).
	l, err := cp.Client.CoordinationV1().Leases(cluster.SystemNamespace).Get(ctx, v1alpha1.ScalerName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.Spec.HolderIdentity = ptr.To("someone-else")
	l.Spec.LeaseDurationSeconds = ptr.To[int32](3600)
	l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	if _, err := cp.Client.CoordinationV1().Leases(cluster.SystemNamespace).Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var exitErr error
	waitFor(ctx, t, 30*time.Second, "hetsev-scaler to exit on the lost lease", func(context.Context) (bool, error) {
		exited, err := scaler.Exited()
		exitErr = err
		return exited, nil
	})
	if exitErr == nil {
		t.Errorf("hetsev-scaler exited with status 0 on a lost lease, want non-zero")
	}
	t.Logf("hetsev-scaler on the lost lease: %v", exitErr)
}
