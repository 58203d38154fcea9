package integration

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"text/template"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/internal/sim/exporters"
	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/adapter/prometheus"
	"github.com/hetsev/hetsev/pkg/adapter/provider"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// adapterRule is one rule of prometheus-adapter's config, the fields the
// test reads.
type adapterRule struct {
	SeriesQuery string `json:"seriesQuery"`
	Resources   struct {
		Overrides map[string]struct {
			Group    string `json:"group"`
			Resource string `json:"resource"`
		} `json:"overrides"`
	} `json:"resources"`
	Name struct {
		Matches string `json:"matches"`
		As      string `json:"as"`
	} `json:"name"`
	MetricsQuery string `json:"metricsQuery"`
}

// renderAdapterQuery renders a rule's metricsQuery as prometheus-adapter's
// metricsQuery.Build (kubernetes-sigs/prometheus-adapter,
// pkg/naming/metrics_query.go) does for namespaced objects: Go
// text/template with << >> delimiters; .Series is the discovered series
// name; .LabelMatchers the namespace matcher, then the resource's label
// equal to the one name asked about or matching "a|b" for several
// (pkg/client/helpers.go: label="value", label=~"value"); .GroupBy the
// resource's label.
func renderAdapterQuery(t *testing.T, r adapterRule, namespace, resourceLabel string, names ...string) string {
	t.Helper()
	tmpl, err := template.New("metrics-query").Delims("<<", ">>").Parse(r.MetricsQuery)
	if err != nil {
		t.Fatalf("rule %s: %v", r.Name.As, err)
	}
	op := "="
	if len(names) > 1 {
		op = "=~"
	}
	series, _, _ := strings.Cut(r.SeriesQuery, "{")
	var b bytes.Buffer
	if err := tmpl.Execute(&b, map[string]any{
		"Series":        series,
		"LabelMatchers": fmt.Sprintf("namespace=%q,%s%s%q", namespace, resourceLabel, op, strings.Join(names, "|")),
		"GroupBy":       resourceLabel,
		"GroupBySlice":  []string{resourceLabel},
	}); err != nil {
		t.Fatalf("rule %s: %v", r.Name.As, err)
	}
	return b.String()
}

// TestPrometheusAdapterRulesMatchHetsev: every rule of
// manifests/prometheus-adapter/rules.yaml, rendered as prometheus-adapter
// renders it and run against a real Prometheus scraping simulated Istio
// sidecars, a dcgm-exporter and kube-state-metrics, gives each pod (and,
// where the rule maps destination_workload, the Deployment) what hetsev's
// own Prometheus backend and provider give, within 2 %; together the rules
// serve every metric hetsev's adapter serves for pods.
func TestPrometheusAdapterRulesMatchHetsev(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(cluster.RepoRoot(), "manifests", "prometheus-adapter", "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Rules []adapterRule `json:"rules"`
	}
	if err := yaml.UnmarshalStrict(raw, &cfg); err != nil {
		t.Fatalf("rules.yaml: %v", err)
	}
	const ns, node, deployment = "default", "gpu-node-0", "resnet50-t4"
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	sims := []*simPod{
		{name: "resnet50-t4-a", gpu: 0, rate: 40, lo: 40, hi: 390},
		{name: "resnet50-t4-b", gpu: 1, rate: 15, lo: 100, hi: 1000},
	}
	// kube-state-metrics' series for the pods, as it exports them with
	// --metric-annotations-allowlist=pods=[hetsev.io/gpu-index].
	ksm := promclient.NewRegistry()
	annotations := promclient.NewGaugeVec(promclient.GaugeOpts{Name: "kube_pod_annotations"}, []string{"namespace", "pod", "annotation_hetsev_io_gpu_index"})
	info := promclient.NewGaugeVec(promclient.GaugeOpts{Name: "kube_pod_info"}, []string{"namespace", "pod", "node"})
	ksm.MustRegister(annotations, info)

	var targets []cluster.PrometheusTarget
	var objs []*v1.Pod
	for _, p := range sims {
		p.istio = exporters.NewIstio(exporters.IstioLabels{DestinationWorkload: deployment, DestinationWorkloadNamespace: ns}, nil)
		addr, stop, err := cluster.ServeLoopback(exporters.Handler(p.istio))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		targets = append(targets, cluster.PrometheusTarget{Job: "istio-sidecars", Address: addr, Path: "/stats/prometheus",
			Labels: map[string]string{"namespace": ns, "pod": p.name}})
		annotations.WithLabelValues(ns, p.name, fmt.Sprint(p.gpu)).Set(1)
		info.WithLabelValues(ns, p.name, node).Set(1)
		objs = append(objs, &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: ns, Labels: map[string]string{"app": "resnet50"},
				Annotations: map[string]string{v1alpha1.AnnotationGPUIndex: fmt.Sprint(p.gpu)}},
			Spec:   v1.PodSpec{NodeName: node},
			Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}},
		})
	}
	ksmAddr, stopKSM, err := cluster.ServeLoopback(promhttp.HandlerFor(ksm, promhttp.HandlerOpts{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopKSM)
	targets = append(targets, cluster.PrometheusTarget{Job: "kube-state-metrics", Address: ksmAddr},
		serveDCGM(t, node,
			exporters.GPUSample{Index: 0, UUID: "GPU-0", ModelName: "Tesla T4", UtilPercent: 37, FBUsedMiB: 2048, FBFreeMiB: 13312},
			exporters.GPUSample{Index: 1, UUID: "GPU-1", ModelName: "Tesla T4", UtilPercent: 81, FBUsedMiB: 6144, FBFreeMiB: 9216}))

	prom, err := cluster.StartPrometheus(ctx, t.TempDir(), time.Second, targets)
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, prom.Process)
	go generate(ctx, sims)

	// hetsev's side: its Prometheus backend and provider over the same
	// pods and Deployment, with the rules' one-minute window.
	opts := prometheus.DefaultOptions()
	opts.URL, opts.RateWindow, opts.CacheTTL = prom.URL, time.Minute, -1
	src, err := prometheus.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: deployment, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "resnet50"}}}}
	kube := fake.NewClientset(dep, objs[0], objs[1])
	inf := informers.NewSharedInformerFactory(kube, 0)
	pods, deps := inf.Core().V1().Pods(), inf.Apps().V1().Deployments()
	pods.Informer()
	deps.Informer()
	inf.Start(ctx.Done())
	inf.WaitForCacheSync(ctx.Done())
	hetsev := provider.New(src, pods.Lister(), deps.Lister())

	client, err := promapi.NewClient(promapi.Config{Address: prom.URL})
	if err != nil {
		t.Fatal(err)
	}
	api := promv1.NewAPI(client)
	query := func(q string) map[string]float64 {
		t.Helper()
		v, _, err := api.Query(ctx, q, time.Time{})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		out := map[string]float64{}
		for _, s := range v.(model.Vector) {
			for _, l := range []model.LabelName{"pod", "destination_workload"} {
				if n := string(s.Metric[l]); n != "" {
					out[n] = float64(s.Value)
				}
			}
		}
		return out
	}

	// Ten seconds of samples in every series: rates over the window are
	// then steady.
	waitFor(ctx, t, 60*time.Second, "ten samples of every series", func(ctx context.Context) (bool, error) {
		n, err := prom.QueryScalar(ctx, `min(count_over_time({__name__=~"istio_requests_total|DCGM_FI_DEV_GPU_UTIL|kube_pod_annotations"}[1m]))`)
		return err == nil && n >= 10, nil
	})

	served := map[string]bool{}
	close := func(a, b float64) bool { return math.Abs(a-b) <= 0.02*math.Max(math.Abs(a), math.Abs(b)) }
	for _, r := range cfg.Rules {
		metric := r.Name.As
		served[metric] = true
		names := []string{sims[0].name, sims[1].name}
		q := renderAdapterQuery(t, r, ns, "pod", names...)
		got := query(q)
		want, err := hetsev.PodValues(ctx, ns, labels.Everything(), metric)
		if err != nil {
			t.Fatalf("hetsev %s: %v", metric, err)
		}
		for _, n := range names {
			t.Logf("%s pod %s: prometheus-adapter %.3f, hetsev %.3f", metric, n, got[n], want[n])
			if _, ok := got[n]; !ok || !close(got[n], want[n]) {
				t.Errorf("%s of pod %s: rule gives %v (present %v), hetsev %v\n\tquery: %s", metric, n, got[n], ok, want[n], q)
			}
		}
		if _, ok := r.Resources.Overrides["destination_workload"]; !ok {
			continue
		}
		q = renderAdapterQuery(t, r, ns, "destination_workload", deployment)
		got = query(q)
		w, err := hetsev.DeploymentValue(ctx, types.NamespacedName{Namespace: ns, Name: deployment}, metric)
		if err != nil {
			t.Fatalf("hetsev %s of %s: %v", metric, deployment, err)
		}
		t.Logf("%s Deployment %s: prometheus-adapter %.3f, hetsev %.3f", metric, deployment, got[deployment], w)
		if _, ok := got[deployment]; !ok || !close(got[deployment], w) {
			t.Errorf("%s of Deployment %s: rule gives %v, hetsev %v\n\tquery: %s", metric, deployment, got[deployment], w, q)
		}
	}
	var missing []string
	for _, m := range []string{adapter.MetricRequestsPerSecond, adapter.MetricLatencyP50, adapter.MetricLatencyP98, adapter.MetricLatencyP99,
		adapter.MetricGPUUtilization, adapter.MetricGPUMemoryUsed} {
		if !served[m] {
			missing = append(missing, m)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("rules.yaml serves no %v", missing)
	}
}
