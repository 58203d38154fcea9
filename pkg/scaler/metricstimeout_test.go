package scaler

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/record"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// hungMetrics is a metrics API that never answers: each call waits until
// its context is done, or until release is closed (the test's end, so a
// call that got no deadline does not hang the test binary).
type hungMetrics struct{ release chan struct{} }

func (m hungMetrics) wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-m.release:
		return errors.New("released by the test: the call had no deadline")
	}
}

func (m hungMetrics) DeploymentMetric(ctx context.Context, ns, name, metric string) (float64, error) {
	return 0, m.wait(ctx)
}

func (m hungMetrics) PodMetrics(ctx context.Context, ns string, sel labels.Selector, metric string) (map[string]float64, error) {
	return nil, m.wait(ctx)
}

// TestHungMetricsAPIHoldsReplicas: custom.metrics.k8s.io accepts the
// calls of a decision on three serving T4 instances but never answers. The
// reconcile must return on its own, hold the replicas, and report
// MetricsUnavailable with reason MetricsTimeout at the ModelService's
// generation, with a Warning event.
func TestHungMetricsAPIHoldsReplicas(t *testing.T) {
	r, c, _, req, _ := partialBed(t)
	hung := hungMetrics{release: make(chan struct{})}
	r.Metrics, r.MetricsTimeout = hung, 50*time.Millisecond
	rec := record.NewFakeRecorder(100)
	r.Recorder = rec

	done := make(chan error, 1)
	go func() {
		_, err := r.Reconcile(context.Background(), req)
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		close(hung.release)
		err = <-done
		t.Errorf("the reconcile waited on the hung metrics API until the test released it: a call had no deadline")
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := t4Replicas(t, c, req); got != 3 {
		t.Errorf("T4 replicas %d with a hung metrics API, want 3 (held)", got)
	}
	ms := &v1alpha1.ModelService{}
	if err := c.Get(context.Background(), req.NamespacedName, ms); err != nil {
		t.Fatal(err)
	}
	cond := meta.FindStatusCondition(ms.Status.Conditions, v1alpha1.ConditionMetricsUnavailable)
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != "MetricsTimeout" || cond.ObservedGeneration != ms.Generation || !strings.Contains(cond.Message, "50ms") {
		t.Errorf("MetricsUnavailable %+v, want True, reason MetricsTimeout, naming the 50ms timeout, at generation %d", cond, ms.Generation)
	}
	if d := ms.Status.LastDecision; d == nil || d.Action != "Hold" {
		t.Errorf("last decision %+v, want Hold", d)
	}
	warned := false
	for len(rec.Events) > 0 {
		e := <-rec.Events
		warned = warned || strings.HasPrefix(e, v1.EventTypeWarning+" MetricsTimeout")
	}
	if !warned {
		t.Errorf("no Warning MetricsTimeout event")
	}
}

// withContext returns once its context is done, with the context's error,
// while the call it wraps (a custom metrics client call, which takes no
// context) still blocks.
func TestWithContextReturnsOnDeadline(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := withContext(ctx, func() (float64, error) { <-block; return 1, nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v, want context.DeadlineExceeded", err)
	}
	v, err := withContext(context.Background(), func() (float64, error) { return 2, nil })
	if v != 2 || err != nil {
		t.Errorf("answered call: %v, %v, want 2, nil", v, err)
	}
}
