package scaler

import (
	"context"
	"flag"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

// deploymentRPS is a metrics source with a fixed requests/s per
// Deployment (0 for the others) and no latency.
type deploymentRPS map[string]float64

func (m deploymentRPS) DeploymentMetric(_ context.Context, ns, name, metric string) (float64, error) {
	if metric != adapter.MetricRequestsPerSecond {
		return 0, nil
	}
	return m[name], nil
}

func (m deploymentRPS) PodMetrics(context.Context, string, labels.Selector, string) (map[string]float64, error) {
	return map[string]float64{}, nil
}

// replaceBed is resnet50 (T4 363 requests/s at 0.526 USD/h, V100 709 at
// 3.90) with the scaler's --replacement: it spiked onto one V100 a minute
// ago, which is Ready, and its load fell to 200 requests/s; a T4 node has
// room. At MinReplicas 1 no scale-in removes the V100; within the
// cool-down two T4 (726 >= 709 requests/s) replace it. The test sets the T4
// Deployment's ready replicas (setReady) and moves the clock.
type replaceBed struct {
	r        *Reconciler
	c        client.Client
	req      reconcile.Request
	now      *time.Time
	events   *record.FakeRecorder
	v100, t4 types.NamespacedName
}

func newReplaceBed(t *testing.T) *replaceBed {
	t.Helper()
	ctx := context.Background()
	ms := resnet()
	ms.Name = "replace-" + strings.ToLower(t.Name())
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	r, c := newFakeReconciler(t, ms, &now)
	d := DefaultDefaults
	d.Replacement = true
	r.Defaults = d
	ev := record.NewFakeRecorder(100)
	r.Recorder = ev
	b := &replaceBed{r: r, c: c, now: &now, events: ev,
		req:  reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ms.Namespace, Name: ms.Name}},
		v100: types.NamespacedName{Namespace: ms.Namespace, Name: DeploymentName(ms.Name, "V100-32GB")},
		t4:   types.NamespacedName{Namespace: ms.Namespace, Name: DeploymentName(ms.Name, "T4")}}
	r.Metrics = deploymentRPS{b.v100.Name: 200}
	if err := c.Create(ctx, node("t4-node", 8, 16384, "64")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, b.req); err != nil { // creates the Deployments
		t.Fatal(err)
	}
	b.set(t, b.v100, 1, 1)
	b.set(t, b.t4, 0, 0)
	// Within the cool-down of the first decision's scale-out (to min
	// replicas), as right after a burst: the replacement keeps the
	// capacity.
	now = now.Add(time.Minute)
	return b
}

// set gives the Deployment key replicas and ready replicas.
func (b *replaceBed) set(t *testing.T, key types.NamespacedName, replicas, ready int32) {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := b.c.Get(context.Background(), key, d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Replicas = &replicas
	if err := b.c.Update(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	d.Status.Replicas, d.Status.ReadyReplicas = replicas, ready
	if err := b.c.Status().Update(context.Background(), d); err != nil {
		t.Fatal(err)
	}
}

// setReady gives key's Deployment ready replicas, up to its replicas.
func (b *replaceBed) setReady(t *testing.T, key types.NamespacedName, ready int32) {
	t.Helper()
	b.set(t, key, b.replicas(t, key), min(ready, b.replicas(t, key)))
}

func (b *replaceBed) replicas(t *testing.T, key types.NamespacedName) int32 {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := b.c.Get(context.Background(), key, d); err != nil {
		t.Fatal(err)
	}
	return replicasOf(d)
}

func (b *replaceBed) ready(t *testing.T, key types.NamespacedName) int32 {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := b.c.Get(context.Background(), key, d); err != nil {
		t.Fatal(err)
	}
	return min(d.Status.ReadyReplicas, replicasOf(d))
}

// decide runs the decision due 15 s after the last one.
func (b *replaceBed) decide(t *testing.T) *v1alpha1.ModelService {
	t.Helper()
	*b.now = b.now.Add(15 * time.Second)
	if _, err := b.r.Reconcile(context.Background(), b.req); err != nil {
		t.Fatal(err)
	}
	ms := &v1alpha1.ModelService{}
	if err := b.c.Get(context.Background(), b.req.NamespacedName, ms); err != nil {
		t.Fatal(err)
	}
	return ms
}

// event is the first recorded event with reason, "" if none.
func (b *replaceBed) event(reason string) string {
	for {
		select {
		case e := <-b.events.Events:
			if strings.Contains(e, " "+reason+" ") {
				return e
			}
		default:
			return ""
		}
	}
}

func TestScalerReplacesV100ByT4MakeBeforeBreak(t *testing.T) {
	b := newReplaceBed(t)
	need := 200 / 0.8
	served := func() float64 { return 709*float64(b.ready(t, b.v100)) + 363*float64(b.ready(t, b.t4)) }

	ms := b.decide(t)
	if v, t4 := b.replicas(t, b.v100), b.replicas(t, b.t4); v != 1 || t4 != 2 {
		t.Fatalf("start: V100 %d, T4 %d replicas; want 1 and 2 (T4 first; last decision %+v)", v, t4, ms.Status.LastDecision)
	}
	if e := b.event("ReplacementStarted"); !strings.HasPrefix(e, "Normal ReplacementStarted") {
		t.Errorf("no Normal ReplacementStarted event")
	}
	rp := ms.Status.LastDecision.Replacement
	if ms.Status.LastDecision.Action != "Replace" || rp == nil || rp.From != "V100-32GB" || rp.To != "T4" || rp.Add != 2 || rp.Remove != 1 || rp.Started.IsZero() {
		t.Errorf("lastDecision %+v replacement %+v, want Replace V100-32GB -> T4, +2 for 1, with its start", ms.Status.LastDecision, rp)
	}
	if c := meta.FindStatusCondition(ms.Status.Conditions, v1alpha1.ConditionReplacement); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Replacement condition %+v, want True", c)
	}
	// The T4 become ready one by one; the V100 goes only once both are.
	for _, ready := range []int32{0, 1} {
		b.setReady(t, b.t4, ready)
		b.decide(t)
		if v := b.replicas(t, b.v100); v != 1 {
			t.Fatalf("%d T4 ready: V100 replicas %d, want 1 until the T4 cover it", ready, v)
		}
		if s := served(); s < need {
			t.Fatalf("%d T4 ready: ready capacity %.0f < need %.0f", ready, s, need)
		}
	}
	b.setReady(t, b.t4, 2)
	ms = b.decide(t)
	if v, t4 := b.replicas(t, b.v100), b.replicas(t, b.t4); v != 0 || t4 != 2 {
		t.Fatalf("both T4 ready: V100 %d, T4 %d replicas; want 0 and 2", v, t4)
	}
	if s := 363 * float64(b.ready(t, b.t4)); s < need {
		t.Fatalf("after: ready capacity %.0f < need %.0f", s, need)
	}
	if e := b.event("ReplacementCompleted"); !strings.HasPrefix(e, "Normal ReplacementCompleted") {
		t.Errorf("no Normal ReplacementCompleted event")
	}
	if c := meta.FindStatusCondition(ms.Status.Conditions, v1alpha1.ConditionReplacement); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "ReplacementCompleted" {
		t.Errorf("Replacement condition %+v, want False, ReplacementCompleted", c)
	}
	if st := ms.Status.ScalingState; st == nil || st.LastReplacement == nil {
		t.Errorf("scalingState %+v, want lastReplacement", st)
	}
}

func TestScalerReplacementTimesOutKeepingTheV100(t *testing.T) {
	b := newReplaceBed(t)
	b.decide(t)
	if t4 := b.replicas(t, b.t4); t4 != 2 {
		t.Fatalf("start: T4 replicas %d, want 2", t4)
	}
	start := *b.now
	var ms *v1alpha1.ModelService
	for b.now.Sub(start) < 5*time.Minute {
		ms = b.decide(t)
		if v := b.replicas(t, b.v100); v != 1 {
			t.Fatalf("at %v: V100 replicas %d with no T4 ready, want 1", b.now.Sub(start), v)
		}
	}
	if t4 := b.replicas(t, b.t4); t4 != 0 {
		t.Fatalf("after the timeout: T4 replicas %d, want 0 (last decision %+v)", t4, ms.Status.LastDecision)
	}
	if e := b.event("ReplacementTimedOut"); !strings.HasPrefix(e, "Warning ReplacementTimedOut") {
		t.Errorf("no Warning ReplacementTimedOut event")
	}
	c := meta.FindStatusCondition(ms.Status.Conditions, v1alpha1.ConditionReplacement)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "ReplacementTimedOut" || !strings.Contains(c.Message, "timed out") {
		t.Errorf("Replacement condition %+v, want False, ReplacementTimedOut, saying it timed out", c)
	}
	// The replacement interval holds the next one.
	b.decide(t)
	if t4 := b.replicas(t, b.t4); t4 != 0 {
		t.Errorf("just after the timeout: T4 replicas %d, want 0 (interval)", t4)
	}
}

// With the traffic split, new ready replicas count only while their
// column has weight in a split that was written (or Istio is missing and
// the Service routes).
func TestReadyRoutedNeedsTrafficWeight(t *testing.T) {
	r := &Reconciler{TrafficSplit: true}
	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr[int32](2)}, Status: appsv1.DeploymentStatus{ReadyReplicas: 2}}
	st := &v1alpha1.ModelServiceStatus{}
	if got := r.readyRouted(d, "T4", st); got != 0 {
		t.Errorf("no split written: %d, want 0", got)
	}
	setCondition(st, v1alpha1.ConditionTrafficSplit, metav1.ConditionTrue, "CapacityWeighted", "", 1)
	st.TrafficWeights = map[string]int32{"T4": 0, "V100-32GB": 100}
	if got := r.readyRouted(d, "T4", st); got != 0 {
		t.Errorf("weight 0: %d, want 0", got)
	}
	st.TrafficWeights["T4"] = 51
	if got := r.readyRouted(d, "T4", st); got != 2 {
		t.Errorf("weight 51: %d, want 2", got)
	}
	setCondition(st, v1alpha1.ConditionTrafficSplit, metav1.ConditionFalse, "WriteFailed", "", 1)
	if got := r.readyRouted(d, "T4", st); got != 0 {
		t.Errorf("split not written: %d, want 0", got)
	}
}

func TestReplacementFlags(t *testing.T) {
	o := NewOptions()
	fs := flag.NewFlagSet("hetsev-scaler", flag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--replacement", "--replacement-interval=10m", "--replacement-timeout=2m"}); err != nil {
		t.Fatal(err)
	}
	s, err := validate(resnet(), defaultCatalog(t), o.Defaults)
	if err != nil {
		t.Fatal(err)
	}
	if p := s.policy; !p.Replacement || p.ReplacementInterval != 10*time.Minute || p.ReplacementTimeout != 2*time.Minute {
		t.Errorf("policy replacement %v interval %v timeout %v, want on, 10m, 2m", p.Replacement, p.ReplacementInterval, p.ReplacementTimeout)
	}
	if NewOptions().Defaults.Replacement {
		t.Errorf("replacement on by default")
	}
	o.Defaults.ReplacementTimeout = -time.Second
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--replacement-timeout") {
		t.Errorf("negative timeout: %v, want an error naming --replacement-timeout", err)
	}
}

// TestScalerReplacementWaitsForAStoredSplit: T4 that become ready
// together count only once a split giving them weight was stored by an
// earlier reconcile, so the V100 stays through the reconcile that first
// writes that weight and goes in the next.
func TestScalerReplacementWaitsForAStoredSplit(t *testing.T) {
	b := newReplaceBed(t)
	b.r.TrafficSplit = true
	b.decide(t)
	b.setReady(t, b.t4, 2)
	ms := b.decide(t)
	if v := b.replicas(t, b.v100); v != 1 {
		t.Fatalf("the reconcile that first weights the T4: V100 replicas %d, want 1 until a stored split routes to them", v)
	}
	if ms.Status.TrafficWeights["T4"] <= 0 {
		t.Fatalf("T4 weight %d after the reconcile, want > 0", ms.Status.TrafficWeights["T4"])
	}
	b.decide(t)
	if v := b.replicas(t, b.v100); v != 0 {
		t.Fatalf("next reconcile: V100 replicas %d, want 0", v)
	}
}

// TestFloorStringMatchesTheAPIPattern: every floor a replacement can carry
// is written as the CRD's decimal pattern accepts it (strconv's 'g' wrote
// 1e+21 and 1e-07, which the API server refuses with the whole status
// write), and reads back within 1/1000 request/s; a floor that is not
// finite is empty and reads back as +Inf.
func TestFloorStringMatchesTheAPIPattern(t *testing.T) {
	pattern := regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)
	for _, v := range []float64{0, 1e-7, 12.5, 1e21, 123456.789, -3} {
		rp := replacementStatus(&heterogeneity.Replacement{From: "V100-32GB", To: "T4", FloorRPS: v}, heterogeneity.ReplacementStarted)
		if !pattern.MatchString(rp.FloorRPS) {
			t.Errorf("floor %v written as %q, which the API's pattern refuses", v, rp.FloorRPS)
			continue
		}
		back := replacementInFlight(rp)
		if want := math.Max(v, 0); math.Abs(back.FloorRPS-want) > 1e-3 {
			t.Errorf("floor %v read back as %v", v, back.FloorRPS)
		}
	}
	rp := replacementStatus(&heterogeneity.Replacement{FloorRPS: math.Inf(1)}, heterogeneity.ReplacementStarted)
	if rp.FloorRPS != "" || !math.IsInf(replacementInFlight(rp).FloorRPS, 1) {
		t.Errorf("an infinite floor written as %q", rp.FloorRPS)
	}
}
