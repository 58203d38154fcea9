package integration

import (
	"context"
	"flag"
	"fmt"
	"math"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/internal/sim/exporters"
	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/scaler"
)

// tenantProxy forwards to Prometheus only the requests that carry the
// tenant header and the bearer token currently in its file, as a Mimir or
// Thanos gateway would; it records what it refused.
type tenantProxy struct {
	target    *httputil.ReverseProxy
	tokenFile string
	mu        sync.Mutex
	accepted  map[string]int // by token
	refused   []string
}

func (p *tenantProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tok, err := os.ReadFile(p.tokenFile)
	want := "Bearer " + strings.TrimSpace(string(tok))
	p.mu.Lock()
	if err != nil || r.Header.Get("Authorization") != want || r.Header.Get("X-Scope-OrgID") != "tenant-a" {
		p.refused = append(p.refused, fmt.Sprintf("Authorization %q, X-Scope-OrgID %q", r.Header.Get("Authorization"), r.Header.Get("X-Scope-OrgID")))
		p.mu.Unlock()
		http.Error(w, "no such tenant or token", http.StatusUnauthorized)
		return
	}
	p.accepted[want]++
	p.mu.Unlock()
	p.target.ServeHTTP(w, r)
}

func (p *tenantProxy) counts(token string) (accepted int, refused []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted["Bearer "+token], append([]string(nil), p.refused...)
}

// TestScalerPrometheusBackend runs hetsev-scaler's reconciler with
// --metrics-backend=prometheus against a real Prometheus scraping two
// Ready ResNet-50 T4 pods' simulated Istio sidecars, behind a gateway that
// wants a tenant header and a bearer token read from a file. At 600
// requests/s each the scaler scales out to at least four T4 replicas, as
// from the adapter; a rotated token is sent from the next query on. When
// one serving pod's sidecar goes quiet past the cool-down, the other's
// rate alone would call for a scale-in: the scaler holds, MetricsUnavailable
// naming the quiet pod. With Prometheus gone it holds too.
func TestScalerPrometheusBackend(t *testing.T) {
	b := newReconcileBed(t)
	ctx := b.ctx
	ms := b.modelService(t, "resnet50", func(ms *v1alpha1.ModelService) { ms.Spec.Scaling.MinReplicas = 2 })
	t4 := scaler.DeploymentName(ms.Name, "T4")
	b.reconcile(t, b.reconciler(record.NewFakeRecorder(100)), ms.Name)

	// The ReplicaSet's two pods, made Ready by hand (no kubelet here).
	var pods []v1.Pod
	waitFor(ctx, t, 60*time.Second, "two pods of "+t4, func(ctx context.Context) (bool, error) {
		d, _ := b.deployment(t, t4)
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil {
			return false, err
		}
		var list v1.PodList
		if err := b.c.List(ctx, &list, client.InNamespace("default"), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return false, err
		}
		pods = list.Items
		return len(pods) == 2, nil
	})
	for i := range pods {
		p := &pods[i]
		p.Status.Phase = v1.PodRunning
		p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.Now()})
		if err := b.c.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(ctx, t, 60*time.Second, t4+" with two Ready replicas", func(context.Context) (bool, error) {
		d, _ := b.deployment(t, t4)
		return d.Status.ReadyReplicas == 2, nil
	})

	sims := []*simPod{{name: pods[0].Name, rate: 600, lo: 20, hi: 120}, {name: pods[1].Name, rate: 600, lo: 20, hi: 120}}
	var targets []cluster.PrometheusTarget
	stops := map[string]func(){}
	for _, p := range sims {
		p.istio = exporters.NewIstio(exporters.IstioLabels{DestinationWorkload: t4, DestinationWorkloadNamespace: "default"}, nil)
		addr, stop, err := cluster.ServeLoopback(exporters.Handler(p.istio))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		stops[p.name] = stop
		targets = append(targets, cluster.PrometheusTarget{Job: "istio-sidecars", Address: addr, Path: "/stats/prometheus",
			Labels: map[string]string{"namespace": "default", "pod": p.name}})
	}
	prom, err := cluster.StartPrometheus(ctx, b.cp.Dir, time.Second, targets)
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, prom.Process)
	gctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	go generate(gctx, sims)

	target, err := url.Parse(prom.URL)
	if err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("first-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gw := &tenantProxy{target: httputil.NewSingleHostReverseProxy(target), tokenFile: tokenFile, accepted: map[string]int{}}
	gwAddr, stopGW, err := cluster.ServeLoopback(gw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopGW)

	// The scaler's flags, parsed as hetsev-scaler parses them.
	o := scaler.NewOptions()
	fs := flag.NewFlagSet("hetsev-scaler", flag.ContinueOnError)
	o.AddFlags(fs)
	const window = 5 * time.Second
	if err := fs.Parse([]string{"--metrics-backend=prometheus", "--prometheus-url=http://" + gwAddr,
		"--prometheus-bearer-token-file=" + tokenFile, "--prometheus-header=X-Scope-OrgID=tenant-a",
		"--rate-window=" + window.String(), "--metrics-timeout=2s"}); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	metrics, err := scaler.NewPrometheusMetrics(o.PrometheusOptions(), b.c)
	if err != nil {
		t.Fatal(err)
	}
	full := fmt.Sprintf("min(count_over_time(%s[%s]))", adapter.SeriesIstioRequests, window)
	waitFor(ctx, t, 60*time.Second, "a full rate window in Prometheus", func(ctx context.Context) (bool, error) {
		if n, err := prom.QueryScalar(ctx, full); err != nil || n < window.Seconds() {
			return false, nil
		}
		_, err := metrics.DeploymentMetric(ctx, "default", t4, adapter.MetricRequestsPerSecond)
		return err == nil, nil
	})
	r := b.reconciler(record.NewFakeRecorder(100))
	r.Metrics = metrics

	// 1200 requests/s need four T4 instances (363 requests/s each at 96 %,
	// ResNet-50's threshold from the SLO model; five at the hand-set 80 %).
	b.now = b.now.Add(15 * time.Second)
	b.reconcile(t, r, ms.Name)
	scaledOut := b.replicas(t, t4)
	d := b.get(t, ms.Name).Status.LastDecision
	t.Logf("decision at 1200 requests/s from Prometheus: %d T4 replicas (%+v)", scaledOut, d)
	if scaledOut < 4 || scaledOut > 6 {
		t.Fatalf("%d T4 replicas for 1200 requests/s read from Prometheus, want 4 to 6", scaledOut)
	}
	if n, refused := gw.counts("first-token"); n == 0 || len(refused) > 0 {
		t.Fatalf("gateway accepted %d queries with the first token and refused %q", n, refused)
	}
	scaleOutAt := b.now
	// The SLO as Prometheus measured it: every request under 120 ms, so
	// all within RT_max (400 ms); p98 (SL_min 0.98) as the generated
	// latencies give it on Istio's buckets.
	st := b.get(t, ms.Name).Status
	wantP98 := expectedQuantile(t, 0.98, sims...)
	lat, err := strconv.ParseFloat(st.LatencyAtServiceLevelMs, 64)
	if st.Attainment != "1.0000" || st.LatencyPercentile != "p98" || err != nil || math.Abs(lat-wantP98) > 0.05*wantP98 {
		t.Fatalf("status attainment %q, %s latency %q ms; want 1.0000, p98 within 5 %% of %.1f ms", st.Attainment, st.LatencyPercentile, st.LatencyAtServiceLevelMs, wantP98)
	}

	// The token rotates: the next decision's queries carry the new one.
	if err := os.WriteFile(tokenFile, []byte("second-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	// (Answers are cached for a second of wall-clock time: decide, one
	// interval after another, until a query goes out.)
	waitFor(ctx, t, 30*time.Second, "a decision's query with the new token", func(context.Context) (bool, error) {
		b.now = b.now.Add(15 * time.Second)
		b.reconcile(t, r, ms.Name)
		n, refused := gw.counts("second-token")
		if len(refused) > 0 {
			return false, fmt.Errorf("the gateway refused %q", refused)
		}
		return n > 0, nil
	})

	// Pod b's sidecar goes quiet. Once Prometheus has no rate for it, past
	// the cool-down, pod a's 600 requests/s alone would call for two
	// instances: the scaler must hold.
	quiet := sims[1].name
	stops[quiet]()
	waitFor(ctx, t, 60*time.Second, "no rate for pod "+quiet+" in Prometheus", func(ctx context.Context) (bool, error) {
		byPod, err := metrics.PodMetrics(ctx, "default", labels.Everything(), adapter.MetricRequestsPerSecond)
		if err != nil {
			return false, nil
		}
		_, has := byPod[quiet]
		return !has && byPod[sims[0].name] > 0, nil
	})
	b.now = scaleOutAt.Add(301 * time.Second)
	b.reconcile(t, r, ms.Name)
	if n := b.replicas(t, t4); n != scaledOut {
		t.Fatalf("T4 replicas %d -> %d with pod %s unmeasured in Prometheus: want a hold", scaledOut, n, quiet)
	}
	c := meta.FindStatusCondition(b.get(t, ms.Name).Status.Conditions, v1alpha1.ConditionMetricsUnavailable)
	if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, quiet) {
		t.Fatalf("MetricsUnavailable %+v, want True naming pod %s", c, quiet)
	}
	t.Logf("partial: %s: %s", c.Reason, c.Message)

	// Prometheus gone: nothing measured, the replicas hold.
	// (Until the cached answer expires, decisions are still partial.)
	stopGW()
	waitFor(ctx, t, 30*time.Second, "a decision with Prometheus unreachable", func(context.Context) (bool, error) {
		b.now = b.now.Add(15 * time.Second)
		b.reconcile(t, r, ms.Name)
		if n := b.replicas(t, t4); n != scaledOut {
			return false, fmt.Errorf("T4 replicas %d -> %d with Prometheus unreachable: want a hold", scaledOut, n)
		}
		c = meta.FindStatusCondition(b.get(t, ms.Name).Status.Conditions, v1alpha1.ConditionMetricsUnavailable)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == "MetricsUnavailable", nil
	})
	held := b.get(t, ms.Name).Status
	if d := held.LastDecision; d == nil || d.Action != "Hold" {
		t.Fatalf("decision %+v with Prometheus unreachable, want Hold", d)
	}
	// Nothing measured: the SLO fields keep their last values.
	if held.Attainment != st.Attainment || held.LatencyPercentile != st.LatencyPercentile || held.LatencyAtServiceLevelMs == "" {
		t.Errorf("with Prometheus unreachable: attainment %q, %s latency %q; want the last %q, p98 and a latency", held.Attainment, held.LatencyPercentile, held.LatencyAtServiceLevelMs, st.Attainment)
	}
	t.Logf("unreachable: %s: %s", c.Reason, c.Message)
}
