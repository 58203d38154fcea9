package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	cmprovider "sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/adapter/internal/adaptertest"
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
)

// fakeSource serves fixed per-pod data; pods absent from a map have none.
type fakeSource struct {
	rates  map[types.NamespacedName]adapter.Value
	hists  map[types.NamespacedName]adapter.Histogram
	gauges map[string]adapter.Value // key: series/node/gpu
	fail   error                    // returned for every call when set
}

func (f *fakeSource) RequestRate(pod types.NamespacedName) (adapter.Value, error) {
	if f.fail != nil {
		return adapter.Value{}, f.fail
	}
	if v, ok := f.rates[pod]; ok {
		return v, nil
	}
	return adapter.Value{}, fmt.Errorf("fake: %w", adapter.ErrNoData)
}

func (f *fakeSource) RequestDurationHistogram(pod types.NamespacedName) (adapter.Histogram, error) {
	if f.fail != nil {
		return adapter.Histogram{}, f.fail
	}
	if h, ok := f.hists[pod]; ok {
		return h, nil
	}
	return adapter.Histogram{}, fmt.Errorf("fake: %w", adapter.ErrNoData)
}

func (f *fakeSource) GPUGauge(series string, gpu adapter.GPU) (adapter.Value, error) {
	if f.fail != nil {
		return adapter.Value{}, f.fail
	}
	if v, ok := f.gauges[series+"/"+gpu.UUID]; ok && gpu.UUID != "" {
		return v, nil
	}
	if v, ok := f.gauges[fmt.Sprintf("%s/%s/%d", series, gpu.Node, gpu.Index)]; ok {
		return v, nil
	}
	return adapter.Value{}, fmt.Errorf("fake: %w", adapter.ErrNoData)
}

// fixture: Deployment resnet-t4 selects pods a, b and c; a and b have data,
// c has none. Deployment idle selects pod d, which has none.
func fixture(t *testing.T) (*Provider, *fakeSource) {
	t.Helper()
	at := adaptertest.SimEpoch.Add(90 * time.Second)
	src := &fakeSource{
		rates: map[types.NamespacedName]adapter.Value{
			adaptertest.NN("ml", "a"): {Value: 12.5, Time: at, Window: time.Minute},
			adaptertest.NN("ml", "b"): {Value: 7.25, Time: at.Add(-time.Second), Window: time.Minute},
		},
		hists: map[types.NamespacedName]adapter.Histogram{
			// a: 100 requests all <= 100 ms; b: 100 requests in (250, 500].
			adaptertest.NN("ml", "a"): {Buckets: []adapter.Bucket{{UpperBound: 100, Count: 100}, {UpperBound: 250, Count: 100}, {UpperBound: 500, Count: 100}, {UpperBound: adaptertest.Inf, Count: 100}}, Time: at, Window: time.Minute},
			adaptertest.NN("ml", "b"): {Buckets: []adapter.Bucket{{UpperBound: 100, Count: 0}, {UpperBound: 250, Count: 0}, {UpperBound: 500, Count: 100}, {UpperBound: adaptertest.Inf, Count: 100}}, Time: at, Window: time.Minute},
		},
		gauges: map[string]adapter.Value{
			adapter.SeriesDCGMGPUUtil + "/node-1/0": {Value: 80, Time: at},
			adapter.SeriesDCGMGPUUtil + "/node-2/1": {Value: 40, Time: at},
			adapter.SeriesDCGMFBUsed + "/node-1/0":  {Value: 3072, Time: at},
		},
	}
	app := map[string]string{"app": "resnet", "gpu": "t4"}
	pods, deps := adaptertest.Listers(t, []*corev1.Pod{
		adaptertest.NewPod("ml", "a").Label("app", "resnet").Label("gpu", "t4").Label(v1alpha1.LabelModelService, "resnet").GPU("node-1", 0).Obj(),
		adaptertest.NewPod("ml", "b").Label("app", "resnet").Label("gpu", "t4").Label(v1alpha1.LabelModelService, "resnet").GPU("node-2", 1).Obj(),
		adaptertest.NewPod("ml", "c").Label("app", "resnet").Label("gpu", "t4").Obj(),
		adaptertest.NewPod("ml", "d").Label("app", "idle").Obj(),
		adaptertest.NewPod("other", "a").Label("app", "resnet").Label("gpu", "t4").Obj(),
	}, []*appsv1.Deployment{
		adaptertest.Deployment("ml", "resnet-t4", app),
		adaptertest.Deployment("ml", "idle", map[string]string{"app": "idle"}),
	})
	return New(src, pods, deps), src
}

func TestProviderPodMetrics(t *testing.T) {
	p, _ := fixture(t)
	ctx := context.Background()
	mv, err := p.GetMetricByName(ctx, adaptertest.NN("ml", "a"), adaptertest.PodsInfo(adapter.MetricRequestsPerSecond), labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if mv.Value.MilliValue() != 12500 || mv.Value.String() != "12500m" {
		t.Errorf("value %s, want 12500m", mv.Value.String())
	}
	if mv.WindowSeconds == nil || *mv.WindowSeconds != 60 {
		t.Errorf("window %v, want 60", mv.WindowSeconds)
	}
	if !mv.Timestamp.Time.Equal(adaptertest.SimEpoch.Add(90 * time.Second)) {
		t.Errorf("timestamp %v", mv.Timestamp)
	}
	if r := mv.DescribedObject; r.Kind != "Pod" || r.APIVersion != "v1" || r.Name != "a" || r.Namespace != "ml" {
		t.Errorf("described object %+v", r)
	}
	if mv.Metric.Name != adapter.MetricRequestsPerSecond {
		t.Errorf("metric %q", mv.Metric.Name)
	}
	if got := adaptertest.GetValue(t, p, adaptertest.PodsInfo(adapter.MetricLatencyP50), adaptertest.NN("ml", "a")); got != 50 {
		t.Errorf("p50 of a = %v, want 50", got)
	}
	if got := adaptertest.GetValue(t, p, adaptertest.PodsInfo(adapter.MetricGPUUtilization), adaptertest.NN("ml", "b")); got != 40 {
		t.Errorf("gpu util of b = %v, want 40 (node-2 GPU 1)", got)
	}
	if got := adaptertest.GetValue(t, p, adaptertest.PodsInfo(adapter.MetricGPUMemoryUsed), adaptertest.NN("ml", "a")); got != 3072 {
		t.Errorf("gpu memory of a = %v, want 3072", got)
	}
	// Singular resource names are accepted.
	info := adaptertest.PodsInfo(adapter.MetricRequestsPerSecond)
	info.GroupResource.Resource = "pod"
	if got := adaptertest.GetValue(t, p, info, adaptertest.NN("ml", "b")); got != 7.25 {
		t.Errorf("rate of b = %v", got)
	}
}

// The Deployment's percentile comes from the merged bucket increases:
// merged {100:100, 250:100, 500:200, +Inf:200}, p98 rank 196 in (250, 500]:
// 250 + 250*(196-100)/100 = 490 ms. Averaging the pods' p98 (98 and 495)
// would give 296.5.
func TestProviderDeploymentMergesHistograms(t *testing.T) {
	p, _ := fixture(t)
	d := adaptertest.NN("ml", "resnet-t4")
	for metric, want := range map[string]float64{
		adapter.MetricLatencyP50: 100, // rank 100 reaches le=100's count exactly
		adapter.MetricLatencyP98: 490,
		adapter.MetricLatencyP99: 495,
	} {
		if got := adaptertest.GetValue(t, p, adaptertest.DepInfo(metric), d); got != want {
			t.Errorf("%s = %v, want %v", metric, got, want)
		}
	}
	mv, err := p.GetMetricByName(context.Background(), d, adaptertest.DepInfo(adapter.MetricLatencyP98), labels.Everything())
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
	d := adaptertest.NN("ml", "resnet-t4")
	if got := adaptertest.GetValue(t, p, adaptertest.DepInfo(adapter.MetricRequestsPerSecond), d); got != 19.75 {
		t.Errorf("requests_per_second = %v, want 12.5+7.25", got)
	}
	if got := adaptertest.GetValue(t, p, adaptertest.DepInfo(adapter.MetricGPUUtilization), d); got != 60 {
		t.Errorf("gpu_utilization_percent = %v, want mean(80, 40)", got)
	}
	// Timestamp: the newest of the pods'.
	mv, _ := p.GetMetricByName(context.Background(), d, adaptertest.DepInfo(adapter.MetricRequestsPerSecond), labels.Everything())
	if !mv.Timestamp.Time.Equal(adaptertest.SimEpoch.Add(90 * time.Second)) {
		t.Errorf("timestamp %v", mv.Timestamp)
	}
	// "deployments" without the apps group is the same resource.
	info := adaptertest.DepInfo(adapter.MetricRequestsPerSecond)
	info.GroupResource.Group = ""
	if got := adaptertest.GetValue(t, p, info, d); got != 19.75 {
		t.Errorf("deployments without group: %v", got)
	}
}

// A ModelService is the sum over the pods labelled with its name (those of
// all its GPU types' Deployments); with a ModelService lister it is listed
// by selector, and one the lister lacks is NotFound.
func TestProviderModelServiceAggregation(t *testing.T) {
	p, _ := fixture(t)
	info := cmprovider.CustomMetricInfo{GroupResource: adapter.ModelServicesResource, Namespaced: true, Metric: adapter.MetricRequestsPerSecond}
	if got := adaptertest.GetValue(t, p, info, adaptertest.NN("ml", "resnet")); got != 19.75 {
		t.Errorf("requests_per_second = %v, want 12.5+7.25", got)
	}
	info.Metric = adapter.MetricLatencyP98
	if got := adaptertest.GetValue(t, p, info, adaptertest.NN("ml", "resnet")); got <= 250 || got > 500 {
		t.Errorf("request_latency_p98_ms = %v, want in b's (250, 500] bucket", got)
	}

	gvr := adapter.ModelServicesResource.WithVersion("v1alpha1")
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, name := range []string{"resnet", "ssd"} {
		if err := idx.Add(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	p.WithModelServices(metadatalister.New(idx, gvr), nil)
	info.Metric = adapter.MetricRequestsPerSecond
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
	if got := adaptertest.GetValue(t, p, info, adaptertest.NN("ml", "resnet")); got != 19.75 {
		t.Errorf("before sync: %v, want 19.75 from the pods", got)
	}
	synced = true
	if _, err := p.GetMetricByName(context.Background(), adaptertest.NN("ml", "resnet"), info, labels.Everything()); !apierrors.IsNotFound(err) {
		t.Errorf("ModelService absent from the synced lister: %v, want NotFound", err)
	}
}

// A Deployment or ModelService with a serving (Ready) pod that has no data
// has no value: summing the others would understate the load, and a scaler
// would scale in on it. A pod that is not Ready, or is terminating, does
// not count when it has no data.
func TestProviderWithholdsValueWhenAServingPodHasNoData(t *testing.T) {
	at := adaptertest.SimEpoch.Add(90 * time.Second)
	src := &fakeSource{
		rates: map[types.NamespacedName]adapter.Value{
			adaptertest.NN("ml", "a"): {Value: 12.5, Time: at, Window: time.Minute},
			adaptertest.NN("ml", "b"): {Value: 7.25, Time: at, Window: time.Minute},
		},
		hists: map[types.NamespacedName]adapter.Histogram{
			adaptertest.NN("ml", "a"): {Buckets: []adapter.Bucket{{UpperBound: 100, Count: 10}, {UpperBound: adaptertest.Inf, Count: 10}}, Time: at, Window: time.Minute},
			adaptertest.NN("ml", "b"): {Buckets: []adapter.Bucket{{UpperBound: 100, Count: 10}, {UpperBound: adaptertest.Inf, Count: 10}}, Time: at, Window: time.Minute},
		},
	}
	app := map[string]string{"app": "resnet"}
	pod := func(name string) *adaptertest.PodBuilder {
		return adaptertest.NewPod("ml", name).Label("app", "resnet").Label(v1alpha1.LabelModelService, "resnet")
	}
	terminating := pod("d").Ready().Obj()
	terminating.DeletionTimestamp = &metav1.Time{Time: at}
	pods, deps := adaptertest.Listers(t, []*corev1.Pod{
		pod("a").Ready().Obj(), pod("b").Ready().Obj(),
		pod("c").Ready().Obj(), // serving, stopped exporting
		pod("e").Obj(),         // starting: not Ready yet
		terminating,
	}, []*appsv1.Deployment{adaptertest.Deployment("ml", "resnet-t4", app)})
	p := New(src, pods, deps)
	ctx := context.Background()
	ms := cmprovider.CustomMetricInfo{GroupResource: adapter.ModelServicesResource, Namespaced: true, Metric: adapter.MetricRequestsPerSecond}
	for _, tc := range []struct {
		what string
		info cmprovider.CustomMetricInfo
		obj  types.NamespacedName
	}{
		{"deployment requests_per_second", adaptertest.DepInfo(adapter.MetricRequestsPerSecond), adaptertest.NN("ml", "resnet-t4")},
		{"deployment p98", adaptertest.DepInfo(adapter.MetricLatencyP98), adaptertest.NN("ml", "resnet-t4")},
		{"modelservice requests_per_second", ms, adaptertest.NN("ml", "resnet")},
	} {
		if mv, err := p.GetMetricByName(ctx, tc.obj, tc.info, labels.Everything()); !apierrors.IsNotFound(err) {
			t.Errorf("%s with serving pod c unmeasured: got %v, %v; want NotFound", tc.what, mv, err)
		}
		q, _ := parseQuery(tc.info.Metric, nil)
		_, err := p.value(kindOf(tc.info.GroupResource), tc.obj, q)
		if !adaptertest.IsNoData(err) || !strings.Contains(err.Error(), "(c;") {
			t.Errorf("%s: reason %v, want no data naming pod c only", tc.what, err)
		}
		list, err := p.GetMetricBySelector(ctx, "ml", labels.Everything(), tc.info, labels.Everything())
		if err != nil || len(list.Items) != 0 {
			t.Errorf("%s by selector: %+v, %v; want an empty list", tc.what, list, err)
		}
	}
	// c exports again: the sum is over every pod with data.
	src.rates[adaptertest.NN("ml", "c")] = adapter.Value{Value: 5, Time: at, Window: time.Minute}
	if got := adaptertest.GetValue(t, p, adaptertest.DepInfo(adapter.MetricRequestsPerSecond), adaptertest.NN("ml", "resnet-t4")); got != 24.75 {
		t.Errorf("all serving pods measured: requests_per_second = %v, want 12.5+7.25+5", got)
	}
}

// Missing data is NotFound, never zero.
func TestProviderMissingDataIsNotFound(t *testing.T) {
	p, src := fixture(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		info cmprovider.CustomMetricInfo
		obj  types.NamespacedName
	}{
		{"pod without data", adaptertest.PodsInfo(adapter.MetricRequestsPerSecond), adaptertest.NN("ml", "c")},
		{"pod without histogram", adaptertest.PodsInfo(adapter.MetricLatencyP98), adaptertest.NN("ml", "c")},
		{"unknown pod", adaptertest.PodsInfo(adapter.MetricRequestsPerSecond), adaptertest.NN("ml", "nope")},
		{"pod without gpu-index", adaptertest.PodsInfo(adapter.MetricGPUUtilization), adaptertest.NN("ml", "c")},
		{"pod's GPU without DCGM data", adaptertest.PodsInfo(adapter.MetricGPUMemoryUsed), adaptertest.NN("ml", "b")},
		{"deployment whose pods have no data", adaptertest.DepInfo(adapter.MetricRequestsPerSecond), adaptertest.NN("ml", "idle")},
		{"deployment latency, no data", adaptertest.DepInfo(adapter.MetricLatencyP50), adaptertest.NN("ml", "idle")},
		{"unknown deployment", adaptertest.DepInfo(adapter.MetricRequestsPerSecond), adaptertest.NN("ml", "nope")},
		{"memory not served for deployments", adaptertest.DepInfo(adapter.MetricGPUMemoryUsed), adaptertest.NN("ml", "resnet-t4")},
		{"unknown metric", adaptertest.PodsInfo("cpu_seconds"), adaptertest.NN("ml", "a")},
		{"unknown resource", cmprovider.CustomMetricInfo{GroupResource: schema.GroupResource{Group: "batch", Resource: "jobs"}, Namespaced: true, Metric: adapter.MetricRequestsPerSecond}, adaptertest.NN("ml", "a")},
		{"pods in another group", cmprovider.CustomMetricInfo{GroupResource: schema.GroupResource{Group: "apps", Resource: "pods"}, Namespaced: true, Metric: adapter.MetricRequestsPerSecond}, adaptertest.NN("ml", "a")},
	} {
		mv, err := p.GetMetricByName(ctx, tc.obj, tc.info, labels.Everything())
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s: got %v, %v; want NotFound", tc.name, mv, err)
		}
	}

	// No requests in the window: the latency is undefined, not 0 ms.
	src.hists[adaptertest.NN("ml", "a")] = adapter.Histogram{Buckets: []adapter.Bucket{{UpperBound: 100, Count: 0}, {UpperBound: adaptertest.Inf, Count: 0}}, Time: adaptertest.SimEpoch}
	if _, err := p.GetMetricByName(ctx, adaptertest.NN("ml", "a"), adaptertest.PodsInfo(adapter.MetricLatencyP99), labels.Everything()); !apierrors.IsNotFound(err) {
		t.Errorf("no requests: err = %v, want NotFound", err)
	}

	// A metric selector cannot match: the metrics have no labels.
	sel := labels.SelectorFromSet(labels.Set{"response_code": "200"})
	if _, err := p.GetMetricByName(ctx, adaptertest.NN("ml", "b"), adaptertest.PodsInfo(adapter.MetricRequestsPerSecond), sel); !apierrors.IsNotFound(err) {
		t.Errorf("metric selector: err = %v, want NotFound", err)
	}

	// Other source errors are passed on, not hidden as NotFound.
	src.fail = fmt.Errorf("prometheus unreachable")
	if _, err := p.GetMetricByName(ctx, adaptertest.NN("ml", "a"), adaptertest.PodsInfo(adapter.MetricRequestsPerSecond), labels.Everything()); err == nil || apierrors.IsNotFound(err) {
		t.Errorf("source failure: err = %v, want a non-NotFound error", err)
	}
}

func TestProviderGetMetricBySelector(t *testing.T) {
	p, _ := fixture(t)
	ctx := context.Background()
	sel := labels.SelectorFromSet(labels.Set{"app": "resnet"})
	list, err := p.GetMetricBySelector(ctx, "ml", sel, adaptertest.PodsInfo(adapter.MetricRequestsPerSecond), labels.Everything())
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
	dl, err := p.GetMetricBySelector(ctx, "ml", labels.Everything(), adaptertest.DepInfo(adapter.MetricRequestsPerSecond), labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(dl.Items) != 1 || dl.Items[0].DescribedObject.Name != "resnet-t4" || dl.Items[0].Value.MilliValue() != 19750 {
		t.Fatalf("deployments %+v", dl.Items)
	}
	empty, err := p.GetMetricBySelector(ctx, "ml", labels.SelectorFromSet(labels.Set{"app": "idle"}), adaptertest.PodsInfo(adapter.MetricRequestsPerSecond), labels.Everything())
	if err != nil || len(empty.Items) != 0 {
		t.Fatalf("idle pods: %v, %v; want an empty list", empty, err)
	}
	if _, err := p.GetMetricBySelector(ctx, "ml", sel, adaptertest.PodsInfo("nope"), labels.Everything()); !apierrors.IsNotFound(err) {
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
	for _, m := range []string{adapter.MetricRequestsPerSecond, adapter.MetricLatencyP50, adapter.MetricLatencyP98, adapter.MetricLatencyP99, adapter.MetricLatency, adapter.MetricSLOAttainment, adapter.MetricGPUUtilization, adapter.MetricGPUMemoryUsed} {
		if !got["pods/"+m] {
			t.Errorf("pods/%s not listed", m)
		}
		want := m != adapter.MetricGPUMemoryUsed
		for _, gr := range []string{"deployments.apps", "modelservices.hetsev.io"} {
			if got[gr+"/"+m] != want {
				t.Errorf("%s/%s listed=%v, want %v", gr, m, !want, want)
			}
		}
	}
	if len(got) != 22 {
		t.Errorf("%d metrics listed, want 22", len(got))
	}
}

// TestProviderJoinsGPUByUUID: a pod whose binding recorded its GPU's UUID
// (hetsev.io/gpu-uuid, GPU mode dra) reads that GPU's series, not the one
// its index names.
func TestProviderJoinsGPUByUUID(t *testing.T) {
	at := adaptertest.SimEpoch
	src := &fakeSource{gauges: map[string]adapter.Value{
		adapter.SeriesDCGMGPUUtil + "/node-1/0": {Value: 80, Time: at},
		adapter.SeriesDCGMGPUUtil + "/GPU-bbb":  {Value: 40, Time: at},
	}}
	pods, deps := adaptertest.Listers(t, []*corev1.Pod{
		adaptertest.NewPod("ml", "by-uuid").GPU("node-1", 0).Annotate(v1alpha1.AnnotationGPUUUID, "GPU-bbb").Obj(),
		adaptertest.NewPod("ml", "by-index").GPU("node-1", 0).Obj(),
	}, nil)
	p := New(src, pods, deps)
	for pod, want := range map[string]float64{"by-uuid": 40, "by-index": 80} {
		if got := adaptertest.GetValue(t, p, adaptertest.PodsInfo(adapter.MetricGPUUtilization), adaptertest.NN("ml", pod)); got != want {
			t.Errorf("%s: GPU utilisation %v, want %v", pod, got, want)
		}
	}
}
