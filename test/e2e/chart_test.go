//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/internal/helmchart"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
)

// hetsevNamespace is the chart's namespace by default (values.yaml
// namespace.name).
const hetsevNamespace = "hetsev-system"

// chartPrograms are the chart's Deployments, one per hetsev program.
var chartPrograms = []string{"hetsev-scheduler", "hetsev-metrics-adapter", "hetsev-scaler"}

// chartValues are what the e2e run sets over the chart's values.yaml: the
// images are the ones imported into the nodes (never pulled), one scaler
// replica (two nodes of two cores), and the adapter's scrape and rate
// window short enough for a run of minutes; gpuMode is the chart's
// (annotations or dra).
func chartValues(gpuMode string) map[string]any {
	never := map[string]any{"pullPolicy": "Never"}
	return map[string]any{
		"gpuMode":        gpuMode,
		"scheduler":      map[string]any{"image": never},
		"metricsAdapter": map[string]any{"image": never, "scrapeInterval": "1s", "rateWindow": "10s"},
		"scaler":         map[string]any{"image": never, "replicas": 1},
	}
}

// installChart installs charts/hetsev as `helm install hetsev charts/hetsev
// --set ...` would (rendered by Helm's engine, server-side applied), with
// the default scheduler of the control plane placing hetsev's own pods,
// and waits until each program's pod is Ready on a real node and the
// adapter's APIService is Available. It returns the rendered objects, for
// uninstallChart.
func installChart(ctx context.Context, t *testing.T, e *env, gpuMode string) []*unstructured.Unstructured {
	t.Helper()
	ds, err := cluster.StartDefaultScheduler(ctx, e.cp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ds.Stop(10 * time.Second) })
	ch, err := helmchart.Load(filepath.Join(cluster.RepoRoot(), helmchart.Dir))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := helmchart.Render(ch, chartValues(gpuMode))
	if err != nil {
		t.Fatal(err)
	}
	a, err := cluster.NewApplier(e.cp)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	applied, err := a.Apply(ctx, "default", objs)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range chartPrograms {
		waitDeploymentAvailable(ctx, t, e, hetsevNamespace, name, 3*time.Minute)
	}
	if err := cluster.WaitAPIServiceAvailable(ctx, e.cp); err != nil {
		dumpNamespace(ctx, t, e, hetsevNamespace)
		t.Fatalf("APIService v1beta2.custom.metrics.k8s.io not Available: %v", err)
	}
	pods, err := e.cp.Client.CoreV1().Pods(hetsevNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var where []string
	for _, p := range pods.Items {
		where = append(where, fmt.Sprintf("%s on %s (%s, Ready %.1fs after creation)", p.Name, p.Spec.NodeName, p.Spec.Containers[0].Image, readySince(&p).Sub(p.CreationTimestamp.Time).Seconds()))
	}
	t.Logf("chart installed (gpuMode %s): %d objects, programs Ready and the APIService Available %v after the apply; %s",
		gpuMode, len(applied), time.Since(start).Round(100*time.Millisecond), strings.Join(where, "; "))
	return objs
}

// uninstallChart deletes the chart's objects as `helm uninstall` would,
// and its CRDs and namespace too (Helm keeps those), and waits until
// hetsev's namespace, its pods and the ModelServices' pods are gone from
// the nodes.
func uninstallChart(ctx context.Context, t *testing.T, e *env, objs []*unstructured.Unstructured) {
	t.Helper()
	a, err := cluster.NewApplier(e.cp)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	deleted, err := a.Delete(ctx, "default", objs)
	if err != nil {
		t.Fatalf("uninstalling the chart: %v", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := e.cp.Client.CoreV1().Namespaces().Get(ctx, hetsevNamespace, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		dumpNamespace(ctx, t, e, hetsevNamespace)
		t.Fatalf("namespace %s not gone within 2 minutes of the uninstall: %v", hetsevNamespace, err)
	}
	// The ModelServices went with their CRD, their Deployments with them
	// (owner references), and their pods drain through the kubelets.
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := e.cp.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelModelService})
		return err == nil && len(l.Items) == 0, nil
	})
	if err != nil {
		t.Fatalf("the ModelServices' pods not gone within 2 minutes of the uninstall: %v", err)
	}
	t.Logf("chart uninstalled: %d objects deleted, namespace %s gone after %v", len(deleted), hetsevNamespace, time.Since(start).Round(100*time.Millisecond))
}

// waitDeploymentAvailable waits until every replica of the Deployment is
// available, and on time-out logs its namespace's pods, events and logs.
func waitDeploymentAvailable(ctx context.Context, t *testing.T, e *env, ns, name string, timeout time.Duration) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		d, err := e.cp.Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || d.Spec.Replicas == nil {
			return false, nil
		}
		return d.Status.ObservedGeneration >= d.Generation && d.Status.AvailableReplicas == *d.Spec.Replicas && d.Status.UpdatedReplicas == *d.Spec.Replicas, nil
	})
	if err != nil {
		dumpNamespace(ctx, t, e, ns)
		t.Fatalf("deployment %s/%s not available within %v: %v", ns, name, timeout, err)
	}
}

// dumpNamespace logs each pod's status, events and last log lines (read
// through the kubelet) in ns.
func dumpNamespace(ctx context.Context, t *testing.T, e *env, ns string) {
	pods, err := e.cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("pods of %s: %v", ns, err)
		return
	}
	for _, p := range pods.Items {
		t.Logf("pod %s/%s on %q: phase %s, Ready %v, conditions %v", ns, p.Name, p.Spec.NodeName, p.Status.Phase, podReady(&p), p.Status.Conditions)
		for _, s := range p.Status.ContainerStatuses {
			t.Logf("  container %s: state %+v, last %+v, restarts %d", s.Name, s.State, s.LastTerminationState, s.RestartCount)
		}
		if p.Spec.NodeName != "" {
			tail := int64(30)
			b, err := e.cp.Client.CoreV1().Pods(ns).GetLogs(p.Name, &v1.PodLogOptions{TailLines: &tail}).DoRaw(ctx)
			t.Logf("  log (%v):\n%s", err, b)
		}
	}
	evs, err := e.cp.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, ev := range evs.Items {
			t.Logf("event %s %s/%s %s: %s", ev.Type, ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Reason, ev.Message)
		}
	}
}

// killScheduler deletes hetsev-scheduler's pod at once (grace 0: SIGKILL,
// nothing saved, its leader lease not released); its Deployment creates
// another, which the default scheduler places and a kubelet starts. It
// returns the killed pod's name.
func killScheduler(ctx context.Context, e *env) (string, error) {
	pods, err := e.cp.Client.CoreV1().Pods(hetsevNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=hetsev-scheduler"})
	if err != nil {
		return "", err
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && podReady(&p) {
			return p.Name, e.cp.Client.CoreV1().Pods(hetsevNamespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))})
		}
	}
	return "", fmt.Errorf("no Ready hetsev-scheduler pod in %s", hetsevNamespace)
}
