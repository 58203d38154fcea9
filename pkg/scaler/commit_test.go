package scaler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// TestFailedReplicaPatchStartsNoCoolDown: three T4 instances carry 1500
// requests/s (saturation 1.38) for the 60 s scale-out period; the
// scale-out's patch of the T4 Deployment fails once. The retry a second
// later must scale out at once: the failed patch started no cool-down and
// did not restart the 60 s saturation timer.
func TestFailedReplicaPatchStartsNoCoolDown(t *testing.T) {
	ctx := context.Background()
	r, c, m, req, now := partialBed(t)
	ms := &v1alpha1.ModelService{}
	if err := c.Get(ctx, req.NamespacedName, ms); err != nil {
		t.Fatal(err)
	}
	ms.Spec.Scaling.ScaleOutPeriodSeconds = ptr(60.0)
	ms.Generation++
	if err := c.Update(ctx, ms); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		m.rps[fmt.Sprintf("%s-t4-%d", req.Name, i)] = 500
	}
	failures := 1
	r.Client = interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*appsv1.Deployment); ok && failures > 0 {
				failures--
				return errors.New("the server is currently unable to handle the request")
			}
			return cl.Patch(ctx, obj, p, opts...)
		},
	})

	if _, err := r.Reconcile(ctx, req); err != nil { // saturation above the threshold: the period starts
		t.Fatal(err)
	}
	if got := t4Replicas(t, c, req); got != 3 {
		t.Fatalf("T4 replicas %d at the start of the scale-out period, want 3", got)
	}
	*now = now.Add(time.Minute)
	if _, err := r.Reconcile(ctx, req); err == nil || failures != 0 {
		t.Fatalf("reconcile with a failing patch: err %v (patch failures left %d), want the patch's error", err, failures)
	}
	*now = now.Add(time.Second)
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, req.NamespacedName, ms); err != nil {
		t.Fatal(err)
	}
	if got := t4Replicas(t, c, req); got <= 3 {
		t.Errorf("T4 replicas %d on the retry after a failed patch, want > 3 (last decision %+v)", got, ms.Status.LastDecision)
	}
}

// TestFailingDecisionSaysDegraded: a decision whose Deployment patch
// fails sets the Degraded condition True with the error and a Warning
// event; the next decision that succeeds sets it False. The controller
// retries a failing ModelService within MaxRetryBackoff, not after the
// default limiter's 16 minutes.
func TestFailingDecisionSaysDegraded(t *testing.T) {
	ctx := context.Background()
	r, c, m, req, now := partialBed(t)
	for i := range 3 {
		m.rps[fmt.Sprintf("%s-t4-%d", req.Name, i)] = 500 // saturation 1.38: a scale-out is due
	}
	failing := true
	r.Client = interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*appsv1.Deployment); ok && failing {
				return errors.New("admission webhook denied the request")
			}
			return cl.Patch(ctx, obj, p, opts...)
		},
	})
	degraded := func() *metav1.Condition {
		ms := &v1alpha1.ModelService{}
		if err := c.Get(ctx, req.NamespacedName, ms); err != nil {
			t.Fatal(err)
		}
		return meta.FindStatusCondition(ms.Status.Conditions, v1alpha1.ConditionDegraded)
	}
	if _, err := r.Reconcile(ctx, req); err == nil {
		t.Fatal("a decision with a failing patch returned no error")
	}
	if cond := degraded(); cond == nil || cond.Status != metav1.ConditionTrue || !strings.Contains(cond.Message, "admission webhook denied") {
		t.Errorf("Degraded %+v after a failed decision, want True with the error", cond)
	}
	if ev := drainEvents(r); !strings.Contains(ev, "ReconcileError") {
		t.Errorf("events %q, want a ReconcileError warning", ev)
	}
	failing = false
	*now = now.Add(time.Second)
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if cond := degraded(); cond == nil || cond.Status != metav1.ConditionFalse {
		t.Errorf("Degraded %+v after a decision that succeeded, want False", cond)
	}
	lim := retryLimiter()
	var last time.Duration
	for range 30 {
		last = lim.When(req)
	}
	if last > MaxRetryBackoff {
		t.Errorf("30th retry after %v, want at most %v", last, MaxRetryBackoff)
	}
}
