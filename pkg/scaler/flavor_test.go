package scaler

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

// flavorDefaults are wholeGPUDefaults with the default flavors.
func flavorDefaults() Defaults {
	d := wholeGPUDefaults()
	d.Flavors = heterogeneity.DefaultFlavors
	return d
}

// flavorResnet is resnet with RT_max 1,000 ms, within which every default
// flavor's batches fit (3 L_i / 0.1 = 672 ms on the T4, see
// heterogeneity.Flavors).
func flavorResnet() *v1alpha1.ModelService {
	ms := resnet()
	ms.Spec.SLO.ResponseTimeMs = 1000
	return ms
}

func columnsOf(s *service) string {
	var names []string
	for _, p := range s.types {
		names = append(names, p.column())
	}
	return strings.Join(names, " ")
}

// With flavors {0.1, 0.25, 0.5, 1}, each GPU type of resnet50 is four
// columns: its own (a whole GPU, as without flavors) and three light
// ones, each a Deployment of its own that declares its flavor as busy
// share and is counted at f x T_i requests/s for f times the GPU's price.
func TestFlavorColumnsAndDeployments(t *testing.T) {
	cat := defaultCatalog(t)
	s, err := validate(flavorResnet(), cat, flavorDefaults())
	if err != nil {
		t.Fatal(err)
	}
	want := "T4 T4-busy0.1 T4-busy0.25 T4-busy0.5 V100-32GB V100-32GB-busy0.1 V100-32GB-busy0.25 V100-32GB-busy0.5"
	if got := columnsOf(s); got != want {
		t.Fatalf("columns %s, want %s", got, want)
	}
	t4, _ := cat.ByName("T4")
	for _, c := range []struct {
		i                int
		deployment, gpu  string
		share            string
		rps, priceFactor float64
	}{
		{0, "resnet50-t4", "t4", "1", 363, 1},
		{2, "resnet50-t4-busy0-25", "t4-busy0.25", "0.25", 0.25 * 363, 0.25},
		{3, "resnet50-t4-busy0-5", "t4-busy0.5", "0.5", 0.5 * 363, 0.5},
	} {
		p := s.types[c.i]
		d := desiredDeployment(s, p, 1)
		if d.Name != c.deployment || d.Labels[v1alpha1.LabelGPUType] != c.gpu || d.Spec.Template.Labels[v1alpha1.LabelGPUType] != c.gpu {
			t.Errorf("column %s: deployment %s labelled %q, want %s labelled %q", p.column(), d.Name, d.Labels[v1alpha1.LabelGPUType], c.deployment, c.gpu)
		}
		if got := d.Spec.Template.Annotations[v1alpha1.AnnotationBusyShare]; got != c.share {
			t.Errorf("column %s: pods declare busy share %q, want %q", p.column(), got, c.share)
		}
		if got := d.Spec.Template.Spec.NodeSelector[gpuinventory.LabelGPUProduct]; got != t4.ProductLabel {
			t.Errorf("column %s: node selector %q, want the T4's %q", p.column(), got, t4.ProductLabel)
		}
		ts := s.typeState(c.i, 2, 5, 0, 1)
		if ts.GPUType != p.column() || math.Abs(ts.ThroughputRPS-c.rps) > 1e-9 || math.Abs(ts.PriceUSDPerHour-c.priceFactor*t4.PriceUSDPerHour) > 1e-12 || ts.Running != 2 || ts.MaxAdditional != 5 {
			t.Errorf("column %s: observation %+v, want %.4f requests/s at %.4f USD/h", p.column(), ts, c.rps, c.priceFactor*t4.PriceUSDPerHour)
		}
	}
	// No Deployment selects another's pods.
	for _, a := range s.types {
		sel, err := metav1.LabelSelectorAsSelector(desiredDeployment(s, a, 1).Spec.Selector)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range s.types {
			if a.column() != b.column() && sel.Matches(labels.Set(desiredDeployment(s, b, 1).Spec.Template.Labels)) {
				t.Errorf("deployment of %s selects the pods of %s", a.column(), b.column())
			}
		}
	}
}

// spec.scaling.busyShare bounds the flavors and is the type's own column;
// spec.scaling.flavors overrides the scaler's and "1" turns them off.
func TestFlavorsOfTheModelService(t *testing.T) {
	cat := defaultCatalog(t)
	ms := flavorResnet()
	ms.Spec.Scaling.BusyShare = 0.3
	s, err := validate(ms, cat, flavorDefaults())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := columnsOf(s), "T4 T4-busy0.1 T4-busy0.25 V100-32GB V100-32GB-busy0.1 V100-32GB-busy0.25"; got != want {
		t.Errorf("busyShare 0.3: columns %s, want %s", got, want)
	}
	t4, _ := cat.ByName("T4")
	if own := s.typeState(0, 0, 0, 0, 1); math.Abs(own.PriceUSDPerHour-0.3*t4.PriceUSDPerHour) > 1e-12 || math.Abs(own.ThroughputRPS-0.3/0.02241) > 1e-9 {
		t.Errorf("busyShare 0.3: T4 column %+v, want 0.3 / L_i requests/s at 0.3 x %v USD/h", own, t4.PriceUSDPerHour)
	}

	ms = flavorResnet()
	ms.Spec.Scaling.Flavors = "1"
	if s, err := validate(ms, cat, flavorDefaults()); err != nil || columnsOf(s) != "T4 V100-32GB" {
		t.Errorf("spec.scaling.flavors 1: columns %v (%v), want T4 V100-32GB", columnsOf(s), err)
	}
	ms.Spec.Scaling.Flavors = "0.5"
	if s, err := validate(ms, cat, DefaultDefaults); err != nil || columnsOf(s) != "T4 T4-busy0.5 V100-32GB V100-32GB-busy0.5" {
		t.Errorf("spec.scaling.flavors 0.5: columns %v (%v), want T4 T4-busy0.5 V100-32GB V100-32GB-busy0.5", columnsOf(s), err)
	}
	ms.Spec.Scaling.Flavors = "0.5,0.25"
	if _, err := validate(ms, cat, DefaultDefaults); err == nil || !strings.Contains(err.Error(), "spec.scaling.flavors") || !strings.Contains(err.Error(), "0.25 follows 0.5") {
		t.Errorf("spec.scaling.flavors 0.5,0.25: %v, want an error naming the field and 0.25", err)
	}
}

// A busy service adds whole GPUs, with flavors or without: three whole
// T4s at saturation 0.81 (885 of 1,089 requests/s) fall 17 requests/s
// short of the threshold; a 0.25 instance (90.75 requests/s for a quarter
// of a T4's price) would cover it in the ILP's terms, but it could not
// share a GPU with the service's own instances and would bill a whole T4,
// so light flavors are offered only while the service fits in one of
// them. (At RT_max 400 ms the T4 offers 0.25 and 0.5: 3 L_i / 0.1 is
// 672 ms.)
func TestBusyServiceScalesOutWholeGPUs(t *testing.T) {
	for _, flavors := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole", true: "flavors"}[flavors], func(t *testing.T) {
			r, c, m, req, _ := partialBed(t)
			if flavors {
				r.Defaults = flavorDefaults()
			}
			for i := range 3 {
				m.rps[fmt.Sprintf("%s-t4-%d", req.Name, i)] = 295
			}
			if _, err := r.Reconcile(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			ms := &v1alpha1.ModelService{}
			if err := c.Get(context.Background(), req.NamespacedName, ms); err != nil {
				t.Fatal(err)
			}
			light, lightRPS := int32(0), 0.0
			for _, f := range []float64{0.25, 0.5} {
				name := DeploymentName(req.Name, heterogeneity.ColumnName("T4", f, true))
				d := &appsv1.Deployment{}
				err := c.Get(context.Background(), types.NamespacedName{Namespace: req.Namespace, Name: name}, d)
				if !flavors {
					if err == nil {
						t.Errorf("deployment %s exists without flavors", name)
					}
					continue
				}
				if err != nil {
					t.Fatalf("deployment %s: %v", name, err)
				}
				light += replicasOf(d)
				lightRPS += float64(replicasOf(d)) * f * 363
				if got := ms.Status.Replicas[heterogeneity.ColumnName("T4", f, true)]; got != replicasOf(d) {
					t.Errorf("status.replicas[%s] = %d, want %d", heterogeneity.ColumnName("T4", f, true), got, replicasOf(d))
				}
			}
			if t4 := t4Replicas(t, c, req); t4 != 4 || light != 0 {
				t.Errorf("flavors %v: T4 replicas %d, light instances %d serving %.1f requests/s; want 4 whole T4s and none (last decision %+v)",
					flavors, t4, light, lightRPS, ms.Status.LastDecision)
			}
			if flavors && !strings.Contains(ms.Status.LastDecision.Reason, "light flavors not offered") {
				t.Errorf("reason %q does not say why no light flavor was offered", ms.Status.LastDecision.Reason)
			}
		})
	}
}

// The traffic split weighs a light column by its counted capacity: one
// T4 (363 requests/s), two V100s (709 each) and one T4 instance of flavor
// 0.5 (0.5 x 363 = 181.5 requests/s) get 19, 72 and 9 percent.
func TestSplitTrafficWeighsFlavorsByCapacity(t *testing.T) {
	f := newRoutingFixture(t, flavorResnet())
	f.r.Defaults = flavorDefaults()
	f.reconcile(t)
	got := oneReadyInstance(t, f, "resnet50-t4-busy0-5")
	if got["T4"] != 19 || got["V100-32GB"] != 72 || got["T4-busy0.5"] != 9 || got["T4-busy0.1"] != 0 {
		t.Errorf("traffic weights %v, want T4 19, V100-32GB 72, T4-busy0.5 9, other flavors 0", got)
	}
}

// Resolved.Columns lists what the evaluator replays: per type its own
// column, then its light flavors, with their busy shares and prices.
func TestResolvedColumns(t *testing.T) {
	cat := defaultCatalog(t)
	r, err := Resolve(flavorResnet(), cat, flavorDefaults())
	if err != nil {
		t.Fatal(err)
	}
	cols := r.Columns()
	t4, _ := cat.ByName("T4")
	if len(cols) != 8 || cols[0].Name != "T4" || cols[0].Light || cols[0].BusyShare != 1 || cols[0].PriceUSDPerHour != t4.PriceUSDPerHour ||
		cols[1].Name != "T4-busy0.1" || !cols[1].Light || cols[1].GPUType != "T4" || cols[1].BusyShare != 0.1 || math.Abs(cols[1].PriceUSDPerHour-0.1*t4.PriceUSDPerHour) > 1e-12 {
		t.Errorf("columns %+v, want T4 (busy share 1, %v USD/h) then T4-busy0.1 (0.1, a tenth of it), ...", cols, t4.PriceUSDPerHour)
	}
	if d, ok := r.Demand("T4-busy0.25"); !ok || d.BusyShare != 0.25 {
		t.Errorf("Demand(T4-busy0.25) = %+v, %v; want busy share 0.25", d, ok)
	}
}

// Turning flavors off retires the light Deployments as a removed GPU
// type's: scaled to zero, then deleted; the whole-GPU ones stay.
func TestFlavorsOffRetiresLightDeployments(t *testing.T) {
	r, c, _, req, now := partialBed(t)
	r.Defaults = flavorDefaults()
	ctx := context.Background()
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	light := types.NamespacedName{Namespace: req.Namespace, Name: DeploymentName(req.Name, "T4-busy0.25")}
	ld := &appsv1.Deployment{}
	if err := c.Get(ctx, light, ld); err != nil {
		t.Fatalf("with flavors: %v", err)
	}
	ld.Spec.Replicas = ptr[int32](1)
	if err := c.Update(ctx, ld); err != nil {
		t.Fatal(err)
	}
	r.Defaults = wholeGPUDefaults()
	*now = now.Add(time.Hour)
	for range 2 { // the second reconcile deletes what the first scaled to zero
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, light, d); err == nil && replicasOf(d) != 0 {
		t.Errorf("flavors off: deployment %s has %d replicas, want it scaled to zero or deleted", light.Name, replicasOf(d))
	}
	if got := t4Replicas(t, c, req); got != 3 {
		t.Errorf("flavors off: T4 replicas %d, want the 3 whole-GPU instances kept", got)
	}
}

// With a declared busy share every column is weighed by the throughput the
// decision counts for it: busyShare 0.5 bounds the flavors, so one T4 of
// the own column counts 0.5 / 22.41 ms = 22.3 requests/s and two V100s
// 0.5 / 11.5 ms = 43.5 each (a declared share, instanceShare), one T4
// instance of flavor 0.25 0.25 x 363 = 90.75: 11, 44 and 45 percent.
// Weighed by the profiles' T_i (363, 709) the own columns would run past
// their busy share.
func TestSplitTrafficWeighsDeclaredBusyShare(t *testing.T) {
	ms := flavorResnet()
	ms.Spec.Scaling.BusyShare = 0.5
	f := newRoutingFixture(t, ms)
	f.r.Defaults = flavorDefaults()
	f.reconcile(t)
	got := oneReadyInstance(t, f, "resnet50-t4-busy0-25")
	if got["T4"] != 11 || got["V100-32GB"] != 44 || got["T4-busy0.25"] != 45 {
		t.Errorf("traffic weights %v, want T4 11, V100-32GB 44, T4-busy0.25 45", got)
	}
}

// oneReadyInstance gives the Deployment name one Ready replica, reconciles
// and returns the traffic weights the status then shows.
func oneReadyInstance(t *testing.T, f *routingFixture, name string) map[string]int32 {
	t.Helper()
	ctx := context.Background()
	d := &appsv1.Deployment{}
	if err := f.api.Get(ctx, types.NamespacedName{Namespace: "default", Name: name}, d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Replicas = ptr[int32](1)
	if err := f.api.Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	d.Status.Replicas, d.Status.ReadyReplicas = 1, 1
	if err := f.api.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	if _, err := f.r.Reconcile(ctx, f.req); err != nil {
		t.Fatal(err)
	}
	return f.modelService(t).Status.TrafficWeights
}

// A light flavor's instance costs its share of a GPU's price only beside
// tenants that keep the GPU billed anyway. A new resnet50 on an idle T4
// node gets its first instance on a whole T4 (a 0.1 instance would bill
// the T4 alone), the light columns offered no slots and the decision
// saying why; so does one whose only T4 in use holds a resnet50 of its
// own namespace, which anti-affinity keeps its light instances off; with
// another tenant on the node, the first instance is a 0.1 beside it.
func TestLightFlavorNeedsGPUInUse(t *testing.T) {
	for _, tc := range []struct {
		name      string
		own       bool // the T4 in use holds the service's own model
		neighbour bool // a tenant of another model shares the node
	}{{"idle", false, false}, {"own-model", true, false}, {"in-use", false, true}} {
		neighbour := tc.neighbour
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ms := flavorResnet()
			now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			r, c := newFakeReconciler(t, ms, &now)
			r.Defaults = flavorDefaults()
			r.Metrics = &podMetrics{c: c, rps: map[string]float64{}}
			if err := c.Create(ctx, node("t4-node", 8, 16384, "64")); err != nil {
				t.Fatal(err)
			}
			if tc.own {
				p := pod("resnet50-old", "t4-node", "resnet50", "4Gi", "0", "2")
				p.Namespace = ms.Namespace
				if err := c.Create(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
			if neighbour {
				p := pod("ssd-0", "t4-node", "ssd-resnet50", "4Gi", "0", "2")
				p.Namespace = "other"
				p.Annotations[v1alpha1.AnnotationBusyShare] = "0.3"
				if err := c.Create(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
			req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ms.Namespace, Name: ms.Name}}
			if _, err := r.Reconcile(ctx, req); err != nil {
				t.Fatal(err)
			}
			if err := c.Get(ctx, req.NamespacedName, ms); err != nil {
				t.Fatal(err)
			}
			light := heterogeneity.ColumnName("T4", 0.1, true)
			whole, tenth := ms.Status.Replicas["T4"], ms.Status.Replicas[light]
			if neighbour && (whole != 0 || tenth != 1) || !neighbour && (whole != 1 || tenth != 0) {
				t.Fatalf("T4 %d, %s %d replicas (last decision %+v); want the first instance on %s",
					whole, light, tenth, ms.Status.LastDecision, map[bool]string{false: "a whole T4", true: light}[neighbour])
			}
			says := strings.Contains(ms.Status.LastDecision.Reason, light+": no T4 GPU in use to share")
			if says == neighbour {
				t.Errorf("reason %q: saying no T4 is in use %v, want %v", ms.Status.LastDecision.Reason, says, !neighbour)
			}
		})
	}
}

// At RT_max 400 ms the T4's 0.1 flavor does not fit at batch 8 (3 x 22.41
// / 0.1 = 672 ms); with spec.profiles[].smallBatches it runs at the
// largest measured batch that does (batch 4: 3 x 12.73 / 0.1 = 382 ms),
// counted at 0.1 x 325 requests/s, and its pods carry the cap in the
// annotation and the server's variable. Other columns carry neither.
func TestLightFlavorAtSmallBatch(t *testing.T) {
	cat := defaultCatalog(t)
	ms := resnet()
	ms.Spec.Profiles[0].SmallBatches = []v1alpha1.BatchPoint{{BatchSize: 1, ThroughputRPS: 98, LatencyMs: 10.7}, {BatchSize: 2, ThroughputRPS: 186, LatencyMs: 11.26}, {BatchSize: 4, ThroughputRPS: 325, LatencyMs: 12.73}}
	s, err := validate(ms, cat, flavorDefaults())
	if err != nil {
		t.Fatal(err)
	}
	want := "T4 T4-busy0.1 T4-busy0.25 T4-busy0.5 V100-32GB V100-32GB-busy0.1 V100-32GB-busy0.25 V100-32GB-busy0.5"
	if got := columnsOf(s); got != want {
		t.Fatalf("columns %s, want %s", got, want)
	}
	for i, p := range s.types {
		d := desiredDeployment(s, p, 1)
		ann := d.Spec.Template.Annotations[v1alpha1.AnnotationMaxBatchSize]
		var env []string
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if e.Name == v1alpha1.EnvMaxBatchSize {
				env = append(env, e.Value)
			}
		}
		if p.column() != "T4-busy0.1" {
			if ann != "" || len(env) != 0 {
				t.Errorf("column %s: annotation %q, env %v; want neither", p.column(), ann, env)
			}
			continue
		}
		if ann != "4" || len(env) != 1 || env[0] != "4" {
			t.Errorf("column %s: annotation %q, env %v; want 4 in both", p.column(), ann, env)
		}
		// The latency model of --slo-check=model sees the capped batch.
		if ts := s.typeState(i, 0, 1, 0, 1); math.Abs(ts.ThroughputRPS-32.5) > 1e-9 || math.Abs(ts.LatencyMs-127.3) > 1e-9 || ts.BatchSize != 4 {
			t.Errorf("column %s: %.4g requests/s at %.4g ms, batch %d; want 32.5 at 127.3, batch 4", p.column(), ts.ThroughputRPS, ts.LatencyMs, ts.BatchSize)
		}
		if c := (&Resolved{s: s}).Columns()[i]; c.BatchSize != 4 {
			t.Errorf("column %s: Columns() batch %d, want 4", p.column(), c.BatchSize)
		}
	}
	// Without the measurements the 0.1 flavor is left out.
	s, err = validate(resnet(), cat, flavorDefaults())
	if err != nil {
		t.Fatal(err)
	}
	if got := columnsOf(s); strings.Contains(got, "T4-busy0.1") {
		t.Errorf("columns %s: T4-busy0.1 without small batches", got)
	}
}

func TestSmallBatchesRejected(t *testing.T) {
	for _, tc := range []struct {
		name string
		pts  []v1alpha1.BatchPoint
		want string
	}{
		{"not below spec.batchSize", []v1alpha1.BatchPoint{{BatchSize: 8, ThroughputRPS: 363, LatencyMs: 22.41}},
			"spec.profiles[0].smallBatches[0].batchSize: 8 is not in [1, spec.batchSize 8)"},
		{"not ascending", []v1alpha1.BatchPoint{{BatchSize: 2, ThroughputRPS: 186, LatencyMs: 11.26}, {BatchSize: 1, ThroughputRPS: 98, LatencyMs: 10.7}},
			"spec.profiles[0].smallBatches[1].batchSize: 1 follows 2"},
		{"zero latency", []v1alpha1.BatchPoint{{BatchSize: 1, ThroughputRPS: 98}},
			"spec.profiles[0].smallBatches[0].latencyMs: must be > 0"},
		{"too many", make([]v1alpha1.BatchPoint, 17), "spec.profiles[0].smallBatches: 17 entries, at most 16"},
	} {
		ms := resnet()
		ms.Spec.Profiles[0].SmallBatches = tc.pts
		if _, err := validate(ms, defaultCatalog(t), flavorDefaults()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// At RT_max 60 ms a batch of 8 on the T4 (3 x 22.41 ms) does not fit the
// T4's own column either: it runs at batch 4 (3 x 12.73 ms), counted at
// 325 requests/s, and its pods carry the cap, the variable on the
// container the overrides name; the V100's (3 x 11.5 ms) keeps batch 8.
func TestOwnColumnAtSmallBatch(t *testing.T) {
	ms := resnet()
	ms.Spec.SLO.ResponseTimeMs = 60
	ms.Spec.Template.Spec.Containers = append([]v1.Container{{Name: "proxy", Image: "envoy"}}, ms.Spec.Template.Spec.Containers...)
	ms.Spec.Profiles[0].Overrides = &v1alpha1.TemplateOverrides{Container: "server"}
	ms.Spec.Profiles[0].SmallBatches = []v1alpha1.BatchPoint{{BatchSize: 1, ThroughputRPS: 98, LatencyMs: 10.7}, {BatchSize: 4, ThroughputRPS: 325, LatencyMs: 12.73}}
	s, err := validate(ms, defaultCatalog(t), flavorDefaults())
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range s.types {
		if p.light {
			continue
		}
		ts := s.typeState(i, 0, 1, 0, 1)
		tpl := desiredDeployment(s, p, 1).Spec.Template
		ann := tpl.Annotations[v1alpha1.AnnotationMaxBatchSize]
		env := map[string]string{}
		for _, c := range tpl.Spec.Containers {
			for _, e := range c.Env {
				if e.Name == v1alpha1.EnvMaxBatchSize {
					env[c.Name] = e.Value
				}
			}
		}
		want := struct {
			ann string
			rps float64
			env map[string]string
		}{"", 709, map[string]string{}}
		if p.column() == "T4" {
			want.ann, want.rps, want.env = "4", 325, map[string]string{"server": "4"}
		}
		if ann != want.ann || math.Abs(ts.ThroughputRPS-want.rps) > 1e-9 || fmt.Sprint(env) != fmt.Sprint(want.env) {
			t.Errorf("column %s: max batch %q (env %v) at %.4g requests/s, want %q (env %v) at %.4g", p.column(), ann, env, ts.ThroughputRPS, want.ann, want.env, want.rps)
		}
	}
}
