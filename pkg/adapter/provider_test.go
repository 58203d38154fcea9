package adapter

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata/metadatalister"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"
)

// fakeSource serves fixed per-pod data; pods absent from a map have none.
type fakeSource struct {
	rates  map[types.NamespacedName]Value
	hists  map[types.NamespacedName]Histogram
	gauges map[string]Value // key: series/node/gpu
	fail   error            // returned for every call when set
}

func (f *fakeSource) RequestRate(pod types.NamespacedName) (Value, error) {
	if f.fail != nil {
		return Value{}, f.fail
	}
	if v, ok := f.rates[pod]; ok {
		return v, nil
	}
	return Value{}, fmt.Errorf("fake: %w", ErrNoData)
}

func (f *fakeSource) RequestDurationHistogram(pod types.NamespacedName) (Histogram, error) {
	if f.fail != nil {
		return Histogram{}, f.fail
	}
	if h, ok := f.hists[pod]; ok {
		return h, nil
	}
	return Histogram{}, fmt.Errorf("fake: %w", ErrNoData)
}

func (f *fakeSource) GPUGauge(series, node string, gpu int) (Value, error) {
	if f.fail != nil {
		return Value{}, f.fail
	}
	if v, ok := f.gauges[fmt.Sprintf("%s/%s/%d", series, node, gpu)]; ok {
		return v, nil
	}
	return Value{}, fmt.Errorf("fake: %w", ErrNoData)
}

var (
	podsInfo = func(m string) provider.CustomMetricInfo {
		return provider.CustomMetricInfo{GroupResource: PodsResource, Namespaced: true, Metric: m}
	}
	depInfo = func(m string) provider.CustomMetricInfo {
		return provider.CustomMetricInfo{GroupResource: DeploymentsResource, Namespaced: true, Metric: m}
	}
)

// fixture: Deployment resnet-t4 selects pods a, b and c; a and b have data,
// c has none. Deployment idle selects pod d, which has none.
func fixture(t *testing.T) (*Provider, *fakeSource) {
	t.Helper()
	at := simEpoch.Add(90 * time.Second)
	src := &fakeSource{
		rates: map[types.NamespacedName]Value{
			nn("ml", "a"): {Value: 12.5, Time: at, Window: time.Minute},
			nn("ml", "b"): {Value: 7.25, Time: at.Add(-time.Second), Window: time.Minute},
		},
		hists: map[types.NamespacedName]Histogram{
			// a: 100 requests all <= 100 ms; b: 100 requests in (250, 500].
			nn("ml", "a"): {Buckets: []Bucket{{100, 100}, {250, 100}, {500, 100}, {inf, 100}}, Time: at, Window: time.Minute},
			nn("ml", "b"): {Buckets: []Bucket{{100, 0}, {250, 0}, {500, 100}, {inf, 100}}, Time: at, Window: time.Minute},
		},
		gauges: map[string]Value{
			SeriesDCGMGPUUtil + "/node-1/0": {Value: 80, Time: at},
			SeriesDCGMGPUUtil + "/node-2/1": {Value: 40, Time: at},
			SeriesDCGMFBUsed + "/node-1/0":  {Value: 3072, Time: at},
		},
	}
	app := map[string]string{"app": "resnet", "gpu": "t4"}
	pods, deps := listers(t, []*corev1.Pod{
		newPod("ml", "a").label("app", "resnet").label("gpu", "t4").label(v1alpha1.LabelModelService, "resnet").gpu("node-1", 0).obj(),
		newPod("ml", "b").label("app", "resnet").label("gpu", "t4").label(v1alpha1.LabelModelService, "resnet").gpu("node-2", 1).obj(),
		newPod("ml", "c").label("app", "resnet").label("gpu", "t4").obj(),
		newPod("ml", "d").label("app", "idle").obj(),
		newPod("other", "a").label("app", "resnet").label("gpu", "t4").obj(),
	}, []*appsv1.Deployment{
		deployment("ml", "resnet-t4", app),
		deployment("ml", "idle", map[string]string{"app": "idle"}),
	})
	return NewProvider(src, pods, deps), src
}

func getValue(t *testing.T, p *Provider, info provider.CustomMetricInfo, name types.NamespacedName) float64 {
	t.Helper()
	mv, err := p.GetMetricByName(context.Background(), name, info, labels.Everything())
	if err != nil {
		t.Fatalf("%s %s: %v", info, name, err)
	}
	return mv.Value.AsApproximateFloat64()
}

func TestProviderPodMetrics(t *testing.T) {
	p, _ := fixture(t)
	ctx := context.Background()
	mv, err := p.GetMetricByName(ctx, nn("ml", "a"), podsInfo(MetricRequestsPerSecond), labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if mv.Value.MilliValue() != 12500 || mv.Value.String() != "12500m" {
		t.Errorf("value %s, want 12500m", mv.Value.String())
	}
	if mv.WindowSeconds == nil || *mv.WindowSeconds != 60 {
		t.Errorf("window %v, want 60", mv.WindowSeconds)
	}
	if !mv.Timestamp.Time.Equal(simEpoch.Add(90 * time.Second)) {
		t.Errorf("timestamp %v", mv.Timestamp)
	}
	if r := mv.DescribedObject; r.Kind != "Pod" || r.APIVersion != "v1" || r.Name != "a" || r.Namespace != "ml" {
		t.Errorf("described object %+v", r)
	}
	if mv.Metric.Name != MetricRequestsPerSecond {
		t.Errorf("metric %q", mv.Metric.Name)
	}
	if got := getValue(t, p, podsInfo(MetricLatencyP50), nn("ml", "a")); got != 50 {
		t.Errorf("p50 of a = %v, want 50", got)
	}
	if got := getValue(t, p, podsInfo(MetricGPUUtilization), nn("ml", "b")); got != 40 {
		t.Errorf("gpu util of b = %v, want 40 (node-2 GPU 1)", got)
	}
	if got := getValue(t, p, podsInfo(MetricGPUMemoryUsed), nn("ml", "a")); got != 3072 {
		t.Errorf("gpu memory of a = %v, want 3072", got)
	}
	// Singular resource names are accepted.
	info := podsInfo(MetricRequestsPerSecond)
	info.GroupResource.Resource = "pod"
	if got := getValue(t, p, info, nn("ml", "b")); got != 7.25 {
		t.Errorf("rate of b = %v", got)
	}
}

// The Deployment's percentile comes from the merged bucket increases:
// merged {100:100, 250:100, 500:200, +Inf:200}, p98 rank 196 in (250, 500]:
// 250 + 250*(196-100)/100 = 490 ms. Averaging the pods' p98 (98 and 495)
// would give 296.5.
func TestProviderDeploymentMergesHistograms(t *testing.T) {
	p, _ := fixture(t)
	d := nn("ml", "resnet-t4")
	for metric, want := range map[string]float64{
		MetricLatencyP50: 100, // rank 100 reaches le=100's count exactly
		MetricLatencyP98: 490,
		MetricLatencyP99: 495,
	} {
		if got := getValue(t, p, depInfo(metric), d); got != want {
			t.Errorf("%s = %v, want %v", metric, got, want)
		}
	}
	mv, err := p.GetMetricByName(context.Background(), d, depInfo(MetricLatencyP98), labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if r := mv.DescribedObject; r.Kind != "Deployment" || r.APIVersion != "apps/v1" || r.Name != "resnet-t4" {
		t.Errorf("described object %+v", r)
	}
	if mv.WindowSeconds == nil || *mv.WindowSeconds != 60 {
		t.Errorf("window %v", mv.WindowSeconds)
	}
}

// A Deployment sums the rates of the pods that have data (c has none) and
// averages their GPU utilisation; pods of other namespaces are not counted.
func TestProviderDeploymentAggregation(t *testing.T) {
	p, _ := fixture(t)
	d := nn("ml", "resnet-t4")
	if got := getValue(t, p, depInfo(MetricRequestsPerSecond), d); got != 19.75 {
		t.Errorf("requests_per_second = %v, want 12.5+7.25", got)
	}
	if got := getValue(t, p, depInfo(MetricGPUUtilization), d); got != 60 {
		t.Errorf("gpu_utilization_percent = %v, want mean(80, 40)", got)
	}
	// Timestamp: the newest of the pods'.
	mv, _ := p.GetMetricByName(context.Background(), d, depInfo(MetricRequestsPerSecond), labels.Everything())
	if !mv.Timestamp.Time.Equal(simEpoch.Add(90 * time.Second)) {
		t.Errorf("timestamp %v", mv.Timestamp)
	}
	// "deployments" without the apps group is the same resource.
	info := depInfo(MetricRequestsPerSecond)
	info.GroupResource.Group = ""
	if got := getValue(t, p, info, d); got != 19.75 {
		t.Errorf("deployments without group: %v", got)
	}
}

// A ModelService is the sum over the pods labelled with its name (those of
// all its GPU types' Deployments); with a ModelService lister it is listed
// by selector, and one the lister lacks is NotFound.
func TestProviderModelServiceAggregation(t *testing.T) {
	p, _ := fixture(t)
	info := provider.CustomMetricInfo{GroupResource: ModelServicesResource, Namespaced: true, Metric: MetricRequestsPerSecond}
	if got := getValue(t, p, info, nn("ml", "resnet")); got != 19.75 {
		t.Errorf("requests_per_second = %v, want 12.5+7.25", got)
	}
	info.Metric = MetricLatencyP98
	if got := getValue(t, p, info, nn("ml", "resnet")); got <= 250 || got > 500 {
		t.Errorf("request_latency_p98_ms = %v, want in b's (250, 500] bucket", got)
	}

	gvr := ModelServicesResource.WithVersion("v1alpha1")
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, name := range []string{"resnet", "ssd"} {
		if err := idx.Add(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	p.WithModelServices(metadatalister.New(idx, gvr), nil)
	info.Metric = MetricRequestsPerSecond
	list, err := p.GetMetricBySelector(context.Background(), "ml", labels.Everything(), info, labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	// ssd has no pods, hence no data, and is left out.
	if len(list.Items) != 1 || list.Items[0].DescribedObject.Name != "resnet" || list.Items[0].DescribedObject.Kind != "ModelService" {
		t.Fatalf("list = %+v, want resnet only", list.Items)
	}
	// A ModelService the lister lacks is NotFound even though pods carry
	// its label, once the lister has synced; before, its pods answer.
	onlySSD := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := onlySSD.Add(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "ssd"}}); err != nil {
		t.Fatal(err)
	}
	synced := false
	p.WithModelServices(metadatalister.New(onlySSD, gvr), func() bool { return synced })
	if got := getValue(t, p, info, nn("ml", "resnet")); got != 19.75 {
		t.Errorf("before sync: %v, want 19.75 from the pods", got)
	}
	synced = true
	if _, err := p.GetMetricByName(context.Background(), nn("ml", "resnet"), info, labels.Everything()); !apierrors.IsNotFound(err) {
		t.Errorf("ModelService absent from the synced lister: %v, want NotFound", err)
	}
}

// Missing data is NotFound, never zero.
func TestProviderMissingDataIsNotFound(t *testing.T) {
	p, src := fixture(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		info provider.CustomMetricInfo
		obj  types.NamespacedName
	}{
		{"pod without data", podsInfo(MetricRequestsPerSecond), nn("ml", "c")},
		{"pod without histogram", podsInfo(MetricLatencyP98), nn("ml", "c")},
		{"unknown pod", podsInfo(MetricRequestsPerSecond), nn("ml", "nope")},
		{"pod without gpu-index", podsInfo(MetricGPUUtilization), nn("ml", "c")},
		{"pod's GPU without DCGM data", podsInfo(MetricGPUMemoryUsed), nn("ml", "b")},
		{"deployment whose pods have no data", depInfo(MetricRequestsPerSecond), nn("ml", "idle")},
		{"deployment latency, no data", depInfo(MetricLatencyP50), nn("ml", "idle")},
		{"unknown deployment", depInfo(MetricRequestsPerSecond), nn("ml", "nope")},
		{"memory not served for deployments", depInfo(MetricGPUMemoryUsed), nn("ml", "resnet-t4")},
		{"unknown metric", podsInfo("cpu_seconds"), nn("ml", "a")},
		{"unknown resource", provider.CustomMetricInfo{GroupResource: schema.GroupResource{Group: "batch", Resource: "jobs"}, Namespaced: true, Metric: MetricRequestsPerSecond}, nn("ml", "a")},
		{"pods in another group", provider.CustomMetricInfo{GroupResource: schema.GroupResource{Group: "apps", Resource: "pods"}, Namespaced: true, Metric: MetricRequestsPerSecond}, nn("ml", "a")},
	} {
		mv, err := p.GetMetricByName(ctx, tc.obj, tc.info, labels.Everything())
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s: got %v, %v; want NotFound", tc.name, mv, err)
		}
	}

	// No requests in the window: the latency is undefined, not 0 ms.
	src.hists[nn("ml", "a")] = Histogram{Buckets: []Bucket{{100, 0}, {inf, 0}}, Time: simEpoch}
	if _, err := p.GetMetricByName(ctx, nn("ml", "a"), podsInfo(MetricLatencyP99), labels.Everything()); !apierrors.IsNotFound(err) {
		t.Errorf("no requests: err = %v, want NotFound", err)
	}

	// A metric selector cannot match: the metrics have no labels.
	sel := labels.SelectorFromSet(labels.Set{"response_code": "200"})
	if _, err := p.GetMetricByName(ctx, nn("ml", "b"), podsInfo(MetricRequestsPerSecond), sel); !apierrors.IsNotFound(err) {
		t.Errorf("metric selector: err = %v, want NotFound", err)
	}

	// Other source errors are passed on, not hidden as NotFound.
	src.fail = fmt.Errorf("prometheus unreachable")
	if _, err := p.GetMetricByName(ctx, nn("ml", "a"), podsInfo(MetricRequestsPerSecond), labels.Everything()); err == nil || apierrors.IsNotFound(err) {
		t.Errorf("source failure: err = %v, want a non-NotFound error", err)
	}
}

func TestProviderGetMetricBySelector(t *testing.T) {
	p, _ := fixture(t)
	ctx := context.Background()
	sel := labels.SelectorFromSet(labels.Set{"app": "resnet"})
	list, err := p.GetMetricBySelector(ctx, "ml", sel, podsInfo(MetricRequestsPerSecond), labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	// a and b have data; c (no data) is left out, other/a is another namespace.
	if len(list.Items) != 2 || list.Items[0].DescribedObject.Name != "a" || list.Items[1].DescribedObject.Name != "b" {
		t.Fatalf("items %+v", list.Items)
	}
	if list.Items[0].Value.MilliValue() != 12500 || list.Items[1].Value.MilliValue() != 7250 {
		t.Errorf("values %v %v", list.Items[0].Value, list.Items[1].Value)
	}
	dl, err := p.GetMetricBySelector(ctx, "ml", labels.Everything(), depInfo(MetricRequestsPerSecond), labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(dl.Items) != 1 || dl.Items[0].DescribedObject.Name != "resnet-t4" || dl.Items[0].Value.MilliValue() != 19750 {
		t.Fatalf("deployments %+v", dl.Items)
	}
	empty, err := p.GetMetricBySelector(ctx, "ml", labels.SelectorFromSet(labels.Set{"app": "idle"}), podsInfo(MetricRequestsPerSecond), labels.Everything())
	if err != nil || len(empty.Items) != 0 {
		t.Fatalf("idle pods: %v, %v; want an empty list", empty, err)
	}
	if _, err := p.GetMetricBySelector(ctx, "ml", sel, podsInfo("nope"), labels.Everything()); !apierrors.IsNotFound(err) {
		t.Errorf("unknown metric: %v", err)
	}
}

func TestProviderListAllMetrics(t *testing.T) {
	p, _ := fixture(t)
	got := map[string]bool{}
	for _, i := range p.ListAllMetrics() {
		if !i.Namespaced {
			t.Errorf("%s not namespaced", i)
		}
		got[i.GroupResource.String()+"/"+i.Metric] = true
	}
	for _, m := range []string{MetricRequestsPerSecond, MetricLatencyP50, MetricLatencyP98, MetricLatencyP99, MetricGPUUtilization, MetricGPUMemoryUsed} {
		if !got["pods/"+m] {
			t.Errorf("pods/%s not listed", m)
		}
		want := m != MetricGPUMemoryUsed
		for _, gr := range []string{"deployments.apps", "modelservices.hetsev.io"} {
			if got[gr+"/"+m] != want {
				t.Errorf("%s/%s listed=%v, want %v", gr, m, !want, want)
			}
		}
	}
	if len(got) != 16 {
		t.Errorf("%d metrics listed, want 16", len(got))
	}
}
