package fairqueue

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hetsev/hetsev/pkg/apis/config"
	configtesting "github.com/hetsev/hetsev/pkg/apis/config/testing"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedqueue "k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	testingclock "k8s.io/utils/clock/testing"
)

func pod(name, model, mem string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name),
		Annotations: map[string]string{v1alpha1.AnnotationModel: model, v1alpha1.AnnotationGPUMemory: mem}}}
}

// fifo is PrioritySort's order with equal priorities.
func fifo(a, b fwk.QueuedPodInfo) bool { return a.GetTimestamp().Before(b.GetTimestamp()) }

// replay runs the scheduler's real PriorityQueue with less: 500 small pods
// arrive 1 ms apart, the scheduler takes 50 (10 ms each), 20 large pods
// arrive, and it takes the rest. It returns the pop position of every pod.
func replay(t *testing.T, less func(*testingclock.FakeClock) (fwk.LessFunc, func(types.UID))) map[string]int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	metrics.Register() // the queue records into the scheduler's metrics
	clk := testingclock.NewFakeClock(time.Unix(1_700_000_000, 0))
	lessFn, popped := less(clk)
	pq := schedqueue.NewTestQueue(ctx, lessFn, schedqueue.WithClock(clk))
	logger := klog.Background()
	pos := map[string]int{}
	pop := func(n int) {
		for i := 0; i < n; i++ {
			pi, err := pq.Pop(logger)
			if err != nil {
				t.Fatal(err)
			}
			popped(pi.Pod.UID)
			pq.Done(pi.Pod.UID)
			pos[pi.Pod.Name] = len(pos)
			clk.Step(10 * time.Millisecond)
		}
	}
	for i := 0; i < 500; i++ {
		pq.Add(ctx, pod(fmt.Sprintf("small-%03d", i), "small", "1Gi"))
		clk.Step(time.Millisecond)
	}
	pop(50)
	for i := 0; i < 20; i++ {
		pq.Add(ctx, pod(fmt.Sprintf("large-%02d", i), "large", "12Gi"))
		clk.Step(time.Millisecond)
	}
	pop(470)
	return pos
}

func positions(pos map[string]int, prefix string) []int {
	var out []int
	for name, p := range pos {
		if len(name) > len(prefix) && name[:len(prefix)] == prefix {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// TestFairQueueServesLateClassEarly: behind a burst of 500 small pods, the
// 20 large pods wait for the whole burst with PrioritySort's order; with
// fair queueing they are taken within the burst, and the burst is not
// starved either: every window of 50 pops while both classes wait serves
// both.
func TestFairQueueServesLateClassEarly(t *testing.T) {
	base := replay(t, func(*testingclock.FakeClock) (fwk.LessFunc, func(types.UID)) {
		return fifo, func(types.UID) {}
	})
	fair := replay(t, func(clk *testingclock.FakeClock) (fwk.LessFunc, func(types.UID)) {
		f := &FairQueue{q: newQueue(DefaultK, DefaultBeta, clk.Now)}
		return f.Less, f.q.popped
	})
	if len(base) != 520 || len(fair) != 520 {
		t.Fatalf("popped %d and %d pods, want 520", len(base), len(fair))
	}
	baseLarge, fairLarge := positions(base, "large-"), positions(fair, "large-")
	if baseLarge[0] != 500 {
		t.Errorf("PrioritySort order took the first large pod at %d, want 500 (after the burst)", baseLarge[0])
	}
	medBase, medFair := baseLarge[10], fairLarge[10]
	t.Logf("large pods' median pop position: PrioritySort %d, fair queueing %d; fair positions %v", medBase, medFair, fairLarge)
	if medFair >= medBase/2 {
		t.Errorf("fair queueing's median large position %d, want well before PrioritySort's %d", medFair, medBase)
	}
	// No starvation: while both classes wait, each window of 50 pops takes
	// some of each.
	small := positions(fair, "small-")
	lastLarge := fairLarge[len(fairLarge)-1]
	for start := 50; start+50 <= lastLarge; start += 50 {
		var s, l int
		for _, p := range small {
			if p >= start && p < start+50 {
				s++
			}
		}
		for _, p := range fairLarge {
			if p >= start && p < start+50 {
				l++
			}
		}
		if s == 0 || l == 0 {
			t.Errorf("pops %d-%d: %d small and %d large, want both", start, start+49, s, l)
		}
	}
	// Within a class, pods keep their arrival order.
	for i := 1; i < len(small); i++ {
		if fair[fmt.Sprintf("small-%03d", i)] < fair[fmt.Sprintf("small-%03d", i-1)] {
			t.Fatalf("small-%03d taken before small-%03d", i, i-1)
		}
	}
}

// TestLessIsAStrictWeakOrder: once tagged, Less is irreflexive, asymmetric
// and transitive over mixed classes, priorities and retries, whatever the
// order of comparisons. Pods are queued (tagged) one by one; every seventh
// step a tagged pod is popped, which advances the virtual time, and comes
// back as a retry (one more attempt) with a new, later tag.
func TestLessIsAStrictWeakOrder(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1_700_000_000, 0))
	f := &FairQueue{q: newQueue(2, 4, clk.Now)}
	rng := rand.New(rand.NewSource(1))
	var infos []*framework.QueuedPodInfo
	models := []string{"a", "b", "c", "d"}
	retries := 0
	for i := 0; i < 60; i++ {
		p := pod(fmt.Sprintf("p%02d", i), models[rng.Intn(4)], fmt.Sprintf("%dGi", 1+rng.Intn(8)))
		prio := int32(rng.Intn(2))
		p.Spec.Priority = &prio
		pi, err := framework.NewPodInfo(p)
		if err != nil {
			t.Fatal(err)
		}
		qi := &framework.QueuedPodInfo{PodInfo: pi, Timestamp: clk.Now(), Attempts: rng.Intn(2)}
		f.Less(qi, qi) // queued: tagged
		infos = append(infos, qi)
		clk.Step(time.Duration(rng.Intn(50)) * time.Millisecond)
		if i%7 == 0 && i > 0 {
			j := rng.Intn(i)
			old := infos[j]
			uid := old.GetPodInfo().GetPod().UID
			before, ok := f.q.tagged(uid, old.Attempts)
			if !ok {
				t.Fatalf("%s has no tag while queued", uid)
			}
			f.q.popped(uid)
			first := old.Timestamp
			retry := &framework.QueuedPodInfo{PodInfo: old.PodInfo, Timestamp: clk.Now(), Attempts: old.Attempts + 1, InitialAttemptTimestamp: &first}
			f.Less(retry, retry)
			after, ok := f.q.tagged(uid, retry.Attempts)
			if !ok || after <= before {
				t.Fatalf("retry of %s: tag %g (tagged %v), want one after its first tag %g", uid, after, ok, before)
			}
			infos[j] = retry
			retries++
		}
	}
	if retries == 0 || f.q.virtual == 0 {
		t.Fatalf("%d retries, virtual time %g: the test exercises no retry", retries, f.q.virtual)
	}
	tagged := len(f.q.pending)
	rng.Shuffle(len(infos), func(i, j int) { infos[i], infos[j] = infos[j], infos[i] })
	for _, a := range infos {
		if f.Less(a, a) {
			t.Fatal("Less(a, a)")
		}
		for _, b := range infos {
			if f.Less(a, b) && f.Less(b, a) {
				t.Fatal("Less not asymmetric")
			}
			for _, c := range infos {
				if f.Less(a, b) && f.Less(b, c) && !f.Less(a, c) {
					t.Fatal("Less not transitive")
				}
			}
		}
	}
	if len(f.q.pending) != tagged || tagged != len(infos) {
		t.Errorf("%d tags after the comparisons, %d before, %d pods: comparing must not tag again", len(f.q.pending), tagged, len(infos))
	}
}

// TestHigherPriorityFirst: priority still wins over the fair-queueing tag.
func TestHigherPriorityFirst(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1_700_000_000, 0))
	f := &FairQueue{q: newQueue(DefaultK, DefaultBeta, clk.Now)}
	lo, hi := pod("lo", "m", "1Gi"), pod("hi", "m", "1Gi")
	p := int32(1000)
	hi.Spec.Priority = &p
	pl, _ := framework.NewPodInfo(lo)
	ph, _ := framework.NewPodInfo(hi)
	a := &framework.QueuedPodInfo{PodInfo: pl, Timestamp: clk.Now()}
	b := &framework.QueuedPodInfo{PodInfo: ph, Timestamp: clk.Now().Add(time.Second)}
	if !f.Less(b, a) || f.Less(a, b) {
		t.Error("the high-priority pod is not first")
	}
}

// TestForgetAndRetry: a deleted pod stops counting, and a retried pod gets
// a new tag after the virtual time moved on.
func TestForgetAndRetry(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1_700_000_000, 0))
	q := newQueue(DefaultK, DefaultBeta, clk.Now)
	s := Shape{"m", 1024}
	t1 := q.tag("a", 0, s, clk.Now(), nil)
	q.tag("b", 0, s, clk.Now(), nil)
	if q.classes[0].pending != 2 {
		t.Fatalf("pending %d, want 2", q.classes[0].pending)
	}
	q.forget("b")
	if q.classes[0].pending != 1 || len(q.pending) != 1 {
		t.Errorf("after forget: class pending %d, %d entries", q.classes[0].pending, len(q.pending))
	}
	q.popped("a")
	if q.virtual != t1 {
		t.Errorf("V = %g, want a's tag %g", q.virtual, t1)
	}
	if t2 := q.tag("a", 1, s, clk.Now(), nil); t2 <= t1 {
		t.Errorf("retry tag %g not after the first %g", t2, t1)
	}
}

// TestArgs: defaults, bounds and unknown fields.
func TestArgs(t *testing.T) {
	a, err := ParseArgs(nil)
	if err != nil || a.K != DefaultK || a.Beta != DefaultBeta {
		t.Errorf("defaults: %+v %v", a, err)
	}
	for raw, want := range map[string]string{
		`{"k":0}`:     "", // zero takes the default
		`{"k":17}`:    "pluginConfig[HetsevFairQueue].args.k",
		`{"beta":-1}`: "pluginConfig[HetsevFairQueue].args.beta",
		`{"kay":3}`:   "unknown field",
	} {
		_, err := parseArgs(raw)
		if (want == "") != (err == nil) || (err != nil && !contains(err.Error(), want)) {
			t.Errorf("%s: err %v, want %q", raw, err, want)
		}
	}
	// The scheduler hands New typed arguments; anything else is named.
	if _, err := ParseArgs(&runtime.Unknown{Raw: []byte(`{"k":3}`)}); err == nil || !contains(err.Error(), "want args of type *config.HetsevFairQueueArgs, got *runtime.Unknown") {
		t.Errorf("untyped args: err %v", err)
	}
	// Malformed GPU memory still gets a shape (the model, 0 MiB).
	if s := ShapeOf(pod("x", "m", "lots")); s != (Shape{Model: "m"}) {
		t.Errorf("ShapeOf(malformed) = %v", s)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// parseArgs decodes raw as this plugin's pluginConfig args the way
// hetsev-scheduler does (through the kube-scheduler's scheme: strict,
// defaulted, typed) and hands the result to ParseArgs, as New does.
func parseArgs(raw string) (config.HetsevFairQueueArgs, error) {
	obj, err := configtesting.DecodePluginArgs(Name, raw)
	if err != nil {
		return config.HetsevFairQueueArgs{}, err
	}
	return ParseArgs(obj)
}
