package scaler

import (
	"context"
	"math"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// hetsev_scaler_cost_usd_per_hour is each column's desired replicas at the
// price the decision plans with: a whole T4 at the catalog's 0.526 USD/h,
// a V100-32GB at 3.9015, a light flavor f of a T4 at f times the T4's
// price; a column without replicas costs 0.
func TestCostGaugeIsReplicasAtPlannedPrice(t *testing.T) {
	ctx := context.Background()
	r, c, _, req, now := partialBed(t)
	r.Defaults = flavorDefaults()
	if _, err := r.Reconcile(ctx, req); err != nil { // creates the light Deployments
		t.Fatal(err)
	}
	// One instance of flavor 0.25; without metrics the decision holds it.
	light := &appsv1.Deployment{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: req.Namespace, Name: DeploymentName(req.Name, "T4-busy0.25")}, light); err != nil {
		t.Fatal(err)
	}
	light.Spec.Replicas = ptr[int32](1)
	if err := c.Update(ctx, light); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(time.Minute)
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	ms := &v1alpha1.ModelService{}
	if err := c.Get(ctx, req.NamespacedName, ms); err != nil {
		t.Fatal(err)
	}
	price := map[string]float64{"T4": 0.526, "V100-32GB": 3.9015, "T4-busy0.5": 0.263, "T4-busy0.25": 0.1315}
	for col, p := range price {
		n, ok := ms.Status.Replicas[col]
		if !ok {
			t.Errorf("no column %s in status.replicas %v", col, ms.Status.Replicas)
		}
		got := testutil.ToFloat64(costGauge.WithLabelValues(ms.Namespace, ms.Name, col))
		if want := float64(n) * p; math.Abs(got-want) > 1e-9 {
			t.Errorf("%s: cost %.4f USD/h, want %d replicas x %.4f = %.4f", col, got, n, p, want)
		}
	}
	if want := "1.7095"; ms.Status.CostUSDPerHour != want { // 3 x 0.526 + 0.1315
		t.Errorf("status.costUSDPerHour %q, want %s", ms.Status.CostUSDPerHour, want)
	}
	if ms.Status.Replicas["T4"] != 3 || ms.Status.Replicas["T4-busy0.25"] != 1 {
		t.Errorf("replicas %v, want the 3 T4s and the T4-busy0.25 held", ms.Status.Replicas)
	}
}
