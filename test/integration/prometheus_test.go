package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"math"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hetsev/hetsev/internal/sim/modelservice"

	"github.com/hetsev/hetsev/pkg/catalog"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	cmclient "k8s.io/metrics/pkg/client/custom_metrics"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/internal/sim/demo"
	"github.com/hetsev/hetsev/internal/sim/exporters"
	"github.com/hetsev/hetsev/pkg/adapter"
)

// simPod is one simulated model-server pod: its Istio exporter, the rate
// it is sent (requests/s) and the range its latencies are spread over
// uniformly (ms).
type simPod struct {
	name   string
	gpu    int
	rate   float64
	lo, hi float64
	istio  *exporters.Istio
}

// latency returns the i-th request's latency: lo + (hi-lo) times the i-th
// term of the base-2 van der Corput sequence, so that any run of requests
// (a rate window) spreads over [lo, hi) almost exactly uniformly.
func (p *simPod) latency(i int) float64 {
	x, f := 0.0, 0.5
	for n := i + 1; n > 0; n >>= 1 {
		x += f * float64(n&1)
		f /= 2
	}
	return p.lo + (p.hi-p.lo)*x
}

// generate observes each pod's requests at its exact rate until ctx ends.
func generate(ctx context.Context, pods []*simPod) {
	start := time.Now()
	sent := make([]int, len(pods))
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			for i, p := range pods {
				for due := int(p.rate * now.Sub(start).Seconds()); sent[i] < due; sent[i]++ {
					p.istio.Observe(p.latency(sent[i]), 200)
				}
			}
		}
	}
}

// expectedQuantile is the q-quantile of the pods' generated latencies on
// Istio's buckets, each pod weighted by its rate: what histogram_quantile
// over the exporters' own buckets yields.
func expectedQuantile(t *testing.T, q float64, pods ...*simPod) float64 {
	t.Helper()
	var bs []adapter.Bucket
	for _, p := range pods {
		bounds := append(append([]float64(nil), exporters.IstioDurationBucketsMs...), math.Inf(1))
		for _, le := range bounds {
			share := math.Min(math.Max((le-p.lo)/(p.hi-p.lo), 0), 1)
			bs = append(bs, adapter.Bucket{UpperBound: le, Count: p.rate * share})
		}
	}
	v, ok := adapter.HistogramQuantile(q, adapter.MergeHistograms(bs))
	if !ok {
		t.Fatalf("no quantile %v", q)
	}
	return v
}

// expectedFraction is the fraction of the pods' generated latencies at
// most le ms on Istio's buckets, each pod weighted by its rate,
// interpolated inside the bucket as the adapter does.
func expectedFraction(t *testing.T, le float64, pods ...*simPod) float64 {
	t.Helper()
	var bs []adapter.Bucket
	for _, p := range pods {
		bounds := append(append([]float64(nil), exporters.IstioDurationBucketsMs...), math.Inf(1))
		for _, b := range bounds {
			share := math.Min(math.Max((b-p.lo)/(p.hi-p.lo), 0), 1)
			bs = append(bs, adapter.Bucket{UpperBound: b, Count: p.rate * share})
		}
	}
	v, ok := adapter.HistogramFractionAtMost(le, adapter.MergeHistograms(bs))
	if !ok {
		t.Fatalf("no fraction at %v ms", le)
	}
	return v
}

// TestAdapterPrometheusBackend runs hetsev-metrics-adapter on its Prometheus
// backend, as its own service account with manifests/' RBAC, against a real
// Prometheus scraping simulated Istio sidecars and a dcgm-exporter on
// loopback. Through the aggregated API, rates and latency percentiles per
// pod, Deployment and ModelService, and GPU utilisation and memory joined
// through node and hetsev.io/gpu-index, match what the exporters generated
// within 5 %, whatever a tenant's pod exposes as DCGM series. A user without rights is refused, by the API server and by
// the adapter itself. With Prometheus hanging (behind a proxy the test
// controls) the API answers 503 after --prometheus-timeout, and with it gone
// at once; never a zero.
func TestAdapterPrometheusBackend(t *testing.T) {
	cp, ctx := controlPlane(t)
	c := cp.Client
	if err := cluster.InstallCRDs(ctx, cp); err != nil {
		t.Fatal(err)
	}
	const ns, node = "default", "gpu-node-0"

	// Objects: two pods of Deployment resnet50-t4 and ModelService resnet50,
	// on GPUs 0 and 1 of one node. Replicas 0: the pods are created here, so
	// their names are known; nothing needs to run them.
	sel := map[string]string{"app": "resnet50"}
	zero := int32(0)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "resnet50-t4", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "model-server", Image: "model-server:resnet50"}}}}},
	}
	if _, err := c.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	profiles, err := catalog.DefaultProfiles()
	if err != nil {
		t.Fatal(err)
	}
	ms, err := modelservice.For("resnet50", ns, "resnet50", 400, profiles, modelservice.Knobs{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	a, err := cluster.NewApplier(cp)
	if err != nil {
		t.Fatal(err)
	}
	if err := demo.CreateModelService(ctx, a.Dynamic, ms); err != nil {
		t.Fatal(err)
	}
	pods := []*simPod{
		{name: "resnet50-t4-a", gpu: 0, rate: 40, lo: 40, hi: 390},
		{name: "resnet50-t4-b", gpu: 1, rate: 15, lo: 100, hi: 1000},
	}
	var targets []cluster.PrometheusTarget
	for _, p := range pods {
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: ns,
				Labels:      map[string]string{"app": "resnet50", v1alpha1.LabelModelService: "resnet50"},
				Annotations: map[string]string{v1alpha1.AnnotationGPUIndex: fmt.Sprint(p.gpu)}},
			Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "model-server", Image: "model-server:resnet50"}}},
		}
		if _, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p.istio = exporters.NewIstio(exporters.IstioLabels{DestinationWorkload: "resnet50-t4", DestinationWorkloadNamespace: ns}, nil)
		addr, stop, err := cluster.ServeLoopback(exporters.Handler(p.istio))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		// The labels Prometheus' pod service discovery adds.
		targets = append(targets, cluster.PrometheusTarget{Job: "istio-sidecars", Address: addr, Path: "/stats/prometheus",
			Labels: map[string]string{"namespace": ns, "pod": p.name}})
	}
	targets = append(targets, serveDCGM(t, node,
		exporters.GPUSample{Index: 0, UUID: "GPU-0", ModelName: "Tesla T4", UtilPercent: 37, FBUsedMiB: 2048, FBFreeMiB: 13312},
		exporters.GPUSample{Index: 1, UUID: "GPU-1", ModelName: "Tesla T4", UtilPercent: 81, FBUsedMiB: 6144, FBFreeMiB: 9216}))
	// A tenant's pod, scraped by its annotations, exposes DCGM series of
	// its own for GPU 1, busier than the real one: the default queries
	// read dcgm-exporter's job only, so GPU 1 stays at 81 %.
	spoof := serveDCGM(t, node, exporters.GPUSample{Index: 1, UUID: "GPU-1", ModelName: "Tesla T4", UtilPercent: 100, FBUsedMiB: 16000, FBFreeMiB: 384})
	spoof.Job = "kubernetes-pods"
	targets = append(targets, spoof)

	prom, err := cluster.StartPrometheus(ctx, cp.Dir, time.Second, targets)
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, prom.Process)
	gctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	go generate(gctx, pods)

	// The adapter as its service account, with manifests/' RBAC only.
	rbac, err := cluster.ReadManifests(filepath.Join(cluster.RepoRoot(), "manifests", "namespace.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	more, err := cluster.ReadManifests(filepath.Join(cluster.RepoRoot(), "manifests", "metrics-adapter", "serviceaccount-rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Apply(ctx, ns, append(rbac, more...)); err != nil {
		t.Fatal(err)
	}
	kc, err := cp.KubeconfigAs(adapterSA)
	if err != nil {
		t.Fatal(err)
	}
	// The adapter reaches Prometheus through a proxy the test can make hang,
	// as an overloaded Prometheus would.
	target, err := url.Parse(prom.URL)
	if err != nil {
		t.Fatal(err)
	}
	var hang atomic.Bool
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxyAddr, stopProxy, err := cluster.ServeLoopback(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hang.Load() {
			<-r.Context().Done()
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopProxy)
	const window = 10 * time.Second
	ad, port, err := cluster.StartAdapter(ctx, cp, cluster.AdapterOptions{
		PrometheusURL: "http://" + proxyAddr, RateWindow: window.String(), Kubeconfig: kc,
		ExtraArgs: []string{"--prometheus-timeout=2s", "--prometheus-cache-ttl=500ms"},
	})
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, ad)

	cm := customMetrics(t, cp.Config)
	podsGK, depGK, msGK := schema.GroupKind{Kind: "Pod"}, schema.GroupKind{Group: "apps", Kind: "Deployment"}, schema.GroupKind{Group: "hetsev.io", Kind: "ModelService"}
	get := func(gk schema.GroupKind, name, metric string) (float64, error) {
		v, err := cm.NamespacedMetrics(ns).GetForObject(gk, name, metric, labels.Everything())
		if err != nil {
			return 0, err
		}
		return v.Value.AsApproximateFloat64(), nil
	}
	// The window must be full of generated load. Prometheus starts scraping
	// a few seconds after it is ready (its discovery updates are
	// throttled), so ask it: every series must have a sample a second for
	// the whole window.
	full := fmt.Sprintf("min(count_over_time(istio_requests_total[%s]))", window)
	waitFor(ctx, t, 60*time.Second, "a full rate window in Prometheus", func(ctx context.Context) (bool, error) {
		if n, err := prom.QueryScalar(ctx, full); err != nil || n < window.Seconds() {
			return false, nil
		}
		_, err := get(depGK, "resnet50-t4", adapter.MetricRequestsPerSecond)
		if err != nil {
			t.Logf("not yet: %v", err)
		}
		return err == nil, nil
	})

	a0, b0 := pods[0], pods[1]
	checks := []struct {
		gk     schema.GroupKind
		name   string
		metric string
		want   float64
	}{
		{podsGK, a0.name, adapter.MetricRequestsPerSecond, a0.rate},
		{podsGK, b0.name, adapter.MetricRequestsPerSecond, b0.rate},
		{depGK, "resnet50-t4", adapter.MetricRequestsPerSecond, a0.rate + b0.rate},
		{msGK, "resnet50", adapter.MetricRequestsPerSecond, a0.rate + b0.rate},
		{podsGK, a0.name, adapter.MetricLatencyP50, expectedQuantile(t, 0.50, a0)},
		{podsGK, b0.name, adapter.MetricLatencyP98, expectedQuantile(t, 0.98, b0)},
		{depGK, "resnet50-t4", adapter.MetricLatencyP98, expectedQuantile(t, 0.98, a0, b0)},
		{msGK, "resnet50", adapter.MetricLatencyP99, expectedQuantile(t, 0.99, a0, b0)},
		{msGK, "resnet50", adapter.MetricLatencyP50, expectedQuantile(t, 0.50, a0, b0)},
		{podsGK, a0.name, adapter.MetricGPUUtilization, 37},
		{podsGK, b0.name, adapter.MetricGPUUtilization, 81},
		{podsGK, b0.name, adapter.MetricGPUMemoryUsed, 6144},
		{depGK, "resnet50-t4", adapter.MetricGPUUtilization, (37 + 81) / 2.0},
	}
	for _, ch := range checks {
		got, err := get(ch.gk, ch.name, ch.metric)
		if err != nil {
			t.Errorf("%s %s %s: %v", ch.gk.Kind, ch.name, ch.metric, err)
			continue
		}
		t.Logf("%s %s %s = %.3f (generated %.3f)", ch.gk.Kind, ch.name, ch.metric, got, ch.want)
		if d := (got - ch.want) / ch.want; d > 0.05 || d < -0.05 {
			t.Errorf("%s %s %s = %.3f, generated %.3f: off by %.1f %%", ch.gk.Kind, ch.name, ch.metric, got, ch.want, 100*d)
		}
	}
	// The metrics parametrised by the metric selector: the latency at any
	// quantile and the fraction within a response time, per pod,
	// Deployment and ModelService; a malformed parameter is a 400.
	selected := []struct {
		gk           schema.GroupKind
		name, metric string
		selector     string
		want         float64
	}{
		{depGK, "resnet50-t4", adapter.MetricLatency, "quantile=0.98", expectedQuantile(t, 0.98, a0, b0)},
		{msGK, "resnet50", adapter.MetricLatency, "quantile=0.999", expectedQuantile(t, 0.999, a0, b0)},
		{podsGK, a0.name, adapter.MetricLatency, "quantile=0.9", expectedQuantile(t, 0.9, a0)},
		{podsGK, b0.name, adapter.MetricSLOAttainment, "le=250", expectedFraction(t, 250, b0)},
		{depGK, "resnet50-t4", adapter.MetricSLOAttainment, "le=400", expectedFraction(t, 400, a0, b0)},
		{msGK, "resnet50", adapter.MetricSLOAttainment, "le=300", expectedFraction(t, 300, a0, b0)},
	}
	for _, ch := range selected {
		sel, err := labels.Parse(ch.selector)
		if err != nil {
			t.Fatal(err)
		}
		v, err := cm.NamespacedMetrics(ns).GetForObject(ch.gk, ch.name, ch.metric, sel)
		if err != nil {
			t.Errorf("%s %s %s{%s}: %v", ch.gk.Kind, ch.name, ch.metric, ch.selector, err)
			continue
		}
		got := v.Value.AsApproximateFloat64()
		t.Logf("%s %s %s{%s} = %.4f (generated %.4f)", ch.gk.Kind, ch.name, ch.metric, ch.selector, got, ch.want)
		if ch.metric == adapter.MetricSLOAttainment {
			// A fraction of counts is off by whole requests: a 10 s window
			// holds about 135 of resnet50-t4-b's, and the worst such run of
			// its van der Corput latencies puts 0.011 of them on the wrong
			// side of 250 ms, 7 % of the 0.17 there. Hence an absolute bound.
			if d := got - ch.want; d > 0.02 || d < -0.02 {
				t.Errorf("%s %s %s{%s} = %.4f, generated %.4f: off by %.4f", ch.gk.Kind, ch.name, ch.metric, ch.selector, got, ch.want, d)
			}
		} else if d := (got - ch.want) / ch.want; d > 0.05 || d < -0.05 {
			t.Errorf("%s %s %s{%s} = %.4f, generated %.4f: off by %.1f %%", ch.gk.Kind, ch.name, ch.metric, ch.selector, got, ch.want, 100*d)
		}
	}
	for metric, bad := range map[string]string{adapter.MetricLatency: "quantile=1.5", adapter.MetricSLOAttainment: "le=soon"} {
		sel, err := labels.Parse(bad)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cm.NamespacedMetrics(ns).GetForObject(depGK, "resnet50-t4", metric, sel); !apierrors.IsBadRequest(err) {
			t.Errorf("%s{%s}: %v, want 400 Bad Request", metric, bad, err)
		}
	}

	// The list HPA reads: both pods, each at its own rate.
	list, err := cm.NamespacedMetrics(ns).GetForObjects(podsGK, labels.SelectorFromSet(sel), adapter.MetricRequestsPerSecond, labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, it := range list.Items {
		listed = append(listed, fmt.Sprintf("%s=%.0f", it.DescribedObject.Name, it.Value.AsApproximateFloat64()))
	}
	sort.Strings(listed)
	if want := []string{"resnet50-t4-a=40", "resnet50-t4-b=15"}; strings.Join(listed, " ") != strings.Join(want, " ") {
		t.Errorf("pod list %v, want %v", listed, want)
	}

	// ModelServices listed by selector, from the adapter's ModelService
	// informer: resnet50, the only one, at its pods' total.
	msList, err := cm.NamespacedMetrics(ns).GetForObjects(msGK, labels.Everything(), adapter.MetricRequestsPerSecond, labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(msList.Items) != 1 || msList.Items[0].DescribedObject.Name != "resnet50" ||
		math.Abs(msList.Items[0].Value.AsApproximateFloat64()-(a0.rate+b0.rate)) > 0.05*(a0.rate+b0.rate) {
		t.Errorf("ModelService list %+v, want resnet50 at %.0f requests/s", msList.Items, a0.rate+b0.rate)
	}

	checkRefused(ctx, t, cp, port)

	// Prometheus slow, then gone: an error naming it, in bounded time,
	// never a zero.
	for _, fault := range []struct {
		name, want string
		apply      func()
	}{
		{"hanging", "no answer within 2s", func() { hang.Store(true) }},
		{"stopped", "connection refused", func() { stopProxy(); prom.Stop(5 * time.Second) }},
	} {
		fault.apply()
		// The adapter answers from its cache until the entry expires; the
		// first answer after that must be the error.
		var err error
		var took time.Duration
		waitFor(ctx, t, 30*time.Second, fmt.Sprintf("an error with Prometheus %s, once the adapter's cache expired", fault.name), func(context.Context) (bool, error) {
			start := time.Now()
			_, err = get(podsGK, a0.name, adapter.MetricRequestsPerSecond)
			took = time.Since(start)
			return err != nil, nil
		})
		if apierrors.IsNotFound(err) || !strings.Contains(err.Error(), "Prometheus") || !strings.Contains(err.Error(), fault.want) {
			t.Errorf("with Prometheus %s: %v, want an error naming Prometheus and %q", fault.name, err, fault.want)
		}
		// Bounded by --prometheus-timeout (2 s), not by the client's or
		// the aggregator's own timeouts: the hanging case's error says the
		// query timeout fired ("no answer within 2s"); the time it took is
		// logged, not asserted.
		t.Logf("with Prometheus %s, after %v: %v", fault.name, took.Round(time.Millisecond), err)
		if list, err := cm.NamespacedMetrics(ns).GetForObjects(podsGK, labels.Everything(), adapter.MetricRequestsPerSecond, labels.Everything()); err == nil {
			t.Errorf("with Prometheus %s the pod list answered %d items", fault.name, len(list.Items))
		}
	}
}

// checkRefused: a service account without RBAC is refused by the API
// server; one bound to manifests/' hetsev-custom-metrics-reader is served;
// an anonymous request straight to the adapter is refused by the adapter's
// delegated authorisation.
func checkRefused(ctx context.Context, t *testing.T, cp *cluster.ControlPlane, adapterPort int) {
	t.Helper()
	if _, err := cp.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "test-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "hetsev-custom-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "reader", Namespace: "default"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := schema.GroupKind{Kind: "Pod"}
	for _, c := range []struct {
		user    string
		allowed bool
	}{
		{"system:serviceaccount:default:no-rights", false},
		{"system:serviceaccount:default:reader", true},
	} {
		cfg := rest.CopyConfig(cp.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: c.user}
		_, err := customMetrics(t, cfg).NamespacedMetrics("default").GetForObjects(pods, labels.Everything(), adapter.MetricRequestsPerSecond, labels.Everything())
		switch {
		case c.allowed && err != nil:
			t.Errorf("%s: %v, want served", c.user, err)
		case !c.allowed && !apierrors.IsForbidden(err):
			t.Errorf("%s: %v, want Forbidden", c.user, err)
		}
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // the adapter's self-signed certificate
	resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/pods/*/requests_per_second", adapterPort))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	t.Logf("anonymous request to the adapter: HTTP %d", resp.StatusCode)
	// Anonymous requests are authenticated as system:anonymous, whom the
	// SubjectAccessReview denies.
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("anonymous request to the adapter: HTTP %d, want 403", resp.StatusCode)
	}
}

// customMetrics is a custom.metrics.k8s.io client for cfg.
func customMetrics(t *testing.T, cfg *rest.Config) cmclient.CustomMetricsClient {
	t.Helper()
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	return cmclient.NewForConfig(cfg, mapper, cmclient.NewAvailableAPIsGetter(disc))
}

// serveDCGM serves a simulated dcgm-exporter of node's GPUs on loopback
// until the test ends, and returns it as a Prometheus scrape target.
func serveDCGM(t *testing.T, node string, gpus ...exporters.GPUSample) cluster.PrometheusTarget {
	t.Helper()
	dcgm := exporters.NewDCGM(node, nil)
	for _, g := range gpus {
		dcgm.SetGPU(g)
	}
	addr, stop, err := cluster.ServeLoopback(exporters.Handler(dcgm))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return cluster.PrometheusTarget{Job: "dcgm-exporter", Address: addr}
}
