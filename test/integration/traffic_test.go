package integration

import (
	"context"
	"testing"
	"time"

	istioclient "istio.io/client-go/pkg/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hetsev/hetsev/pkg/scaler"
	"github.com/hetsev/hetsev/pkg/traffic"
)

// TestScalerSplitsTrafficByCapacity: with Istio's real CRDs on the API
// server, the scaler writes a VirtualService whose weights follow T_i N_i of
// ready instances — all to T4 with one T4 instance, then 20/80 once two
// V100s (709 requests/s each) run beside the T4 (363): 363/1781 = 20.4 %.
func TestScalerSplitsTrafficByCapacity(t *testing.T) {
	s := startStack(t, true)
	ctx := s.ctx
	s.modelService(t, "resnet50", "resnet50", 400)
	ic, err := istioclient.NewForConfig(s.cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	weights := func(ctx context.Context) map[string]int32 {
		vs, err := ic.NetworkingV1().VirtualServices("default").Get(ctx, "resnet50", metav1.GetOptions{})
		if err != nil || len(vs.Spec.Http) != 1 {
			return nil
		}
		out := map[string]int32{}
		for _, r := range vs.Spec.Http[0].Route {
			if r.Destination.Host != "resnet50.default.svc.cluster.local" {
				t.Errorf("route host %q", r.Destination.Host)
			}
			out[r.Destination.Subset] = r.Weight
		}
		return out
	}
	waitFor(ctx, t, 30*time.Second, "VirtualService with all traffic on T4", func(ctx context.Context) (bool, error) {
		w := weights(ctx)
		return w["t4"] == 100 && w["v100-32gb"] == 0, nil
	})
	// Two V100 instances, as if an earlier scale-out had added them; with no
	// traffic the scaler holds replicas (no metrics), so they stay.
	patch := []byte(`{"spec":{"replicas":2}}`)
	if _, err := s.cp.Client.AppsV1().Deployments("default").Patch(ctx, scaler.DeploymentName("resnet50", "V100-32GB"), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, 60*time.Second, "VirtualService weights 20/80", func(ctx context.Context) (bool, error) {
		w := weights(ctx)
		return w["t4"] == 20 && w["v100-32gb"] == 80, nil
	})
	dr, err := ic.NetworkingV1().DestinationRules("default").Get(ctx, "resnet50", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range dr.Spec.Subsets {
		dep, err := s.cp.Client.AppsV1().Deployments("default").Get(ctx, "resnet50-"+sub.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("subset %s has no deployment: %v", sub.Name, err)
		}
		for k, v := range dep.Spec.Selector.MatchLabels {
			if sub.Labels[k] != v {
				t.Errorf("subset %s labels %v do not select deployment %s (%v)", sub.Name, sub.Labels, dep.Name, dep.Spec.Selector.MatchLabels)
			}
		}
	}
	if traffic.SubsetName("V100-32GB") != "v100-32gb" {
		t.Fatal("subset naming changed")
	}
	if c := condition(ctx, t, s, "resnet50", "TrafficSplit"); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("TrafficSplit condition %+v", c)
	}
	if _, err := s.cp.Client.CoreV1().Services("default").Get(ctx, "resnet50", metav1.GetOptions{}); err != nil {
		t.Errorf("no Service for the VirtualService's host: %v", err)
	}
}
