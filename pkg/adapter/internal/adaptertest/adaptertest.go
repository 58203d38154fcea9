// Package adaptertest holds the fixtures the adapter's packages share in
// their tests: pods and Deployments with listers over them, ResourceClaims
// and ResourceSlices (GPU mode dra) with theirs, a simulated clock, the
// hand-worked latency histogram, reading the adapter's own counters, and
// getting one metric value through a provider.
package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/legacyregistry"
	cmprovider "sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// SimEpoch is a simulated clock far from the wall clock, so a test shows
// which clock a computation used.
var SimEpoch = time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)

// Inf is the upper bound of a histogram's last bucket.
var Inf = math.Inf(+1)

// HandWorked is the hand-worked example: bucket increments over the window
// {le=100: 50, le=250: 90, le=500: 100, +Inf: 100}.
var HandWorked = []adapter.Bucket{{UpperBound: 100, Count: 50}, {UpperBound: 250, Count: 90}, {UpperBound: 500, Count: 100}, {UpperBound: Inf, Count: 100}}

// NN returns the namespaced name ns/name.
func NN(ns, name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }

// PodBuilder builds pods fluently.
type PodBuilder struct{ p *corev1.Pod }

// NewPod returns a builder of a Running pod ns/name (UID "ns/name").
func NewPod(ns, name string) *PodBuilder {
	return &PodBuilder{p: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name),
			Labels: map[string]string{}, Annotations: map[string]string{}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}}
}

func (b *PodBuilder) Label(k, v string) *PodBuilder       { b.p.Labels[k] = v; return b }
func (b *PodBuilder) Annotate(k, v string) *PodBuilder    { b.p.Annotations[k] = v; return b }
func (b *PodBuilder) Node(n string) *PodBuilder           { b.p.Spec.NodeName = n; return b }
func (b *PodBuilder) IP(ip string) *PodBuilder            { b.p.Status.PodIP = ip; return b }
func (b *PodBuilder) Phase(p corev1.PodPhase) *PodBuilder { b.p.Status.Phase = p; return b }

// Ready gives the pod the Ready condition: it serves traffic.
func (b *PodBuilder) Ready() *PodBuilder {
	b.p.Status.Conditions = append(b.p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
	return b
}

// GPU binds the pod to GPU idx of node, as hetsev-scheduler does.
func (b *PodBuilder) GPU(node string, idx int) *PodBuilder {
	return b.Node(node).Annotate(v1alpha1.AnnotationGPUIndex, fmt.Sprint(idx))
}

// Claim gives the pod spec.resourceClaims entry entry naming the
// ResourceClaim claim.
func (b *PodBuilder) Claim(entry, claim string) *PodBuilder {
	b.p.Spec.ResourceClaims = append(b.p.Spec.ResourceClaims, corev1.PodResourceClaim{Name: entry, ResourceClaimName: &claim})
	return b
}

// TemplateClaim gives the pod spec.resourceClaims entry entry from
// ResourceClaimTemplate template and, when generated is not "", the name
// of the claim generated from it in status.resourceClaimStatuses.
func (b *PodBuilder) TemplateClaim(entry, template, generated string) *PodBuilder {
	b.p.Spec.ResourceClaims = append(b.p.Spec.ResourceClaims, corev1.PodResourceClaim{Name: entry, ResourceClaimTemplateName: &template})
	if generated != "" {
		b.p.Status.ResourceClaimStatuses = append(b.p.Status.ResourceClaimStatuses, corev1.PodResourceClaimStatus{Name: entry, ResourceClaimName: &generated})
	}
	return b
}

// Scrape annotates the pod for scraping on port.
func (b *PodBuilder) Scrape(port int) *PodBuilder {
	return b.Annotate(adapter.AnnotationScrape, "true").Annotate(adapter.AnnotationPort, fmt.Sprint(port))
}

// Obj returns the pod.
func (b *PodBuilder) Obj() *corev1.Pod { return b.p }

// Deployment returns a Deployment ns/name selecting match.
func Deployment(ns, name string, match map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: match}},
	}
}

// Listers returns pod and deployment listers over fixed objects.
func Listers(t testing.TB, pods []*corev1.Pod, deps []*appsv1.Deployment) (corelisters.PodLister, appslisters.DeploymentLister) {
	t.Helper()
	pi := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	di := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range pods {
		if err := pi.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range deps {
		if err := di.Add(d); err != nil {
			t.Fatal(err)
		}
	}
	return corelisters.NewPodLister(pi), appslisters.NewDeploymentLister(di)
}

// GPUDevice is a device a ResourceSlice publishes: Name, and Index as its
// int attribute "index" (none when negative).
type GPUDevice struct {
	Name  string
	Index int64
}

// GPUSlice is the ResourceSlice v1alpha1.DRADriver publishes for node:
// pool node, generation 1, the devices given.
func GPUSlice(node string, devices ...GPUDevice) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + v1alpha1.DRADriver},
		Spec: resourceapi.ResourceSliceSpec{Driver: v1alpha1.DRADriver, NodeName: &node,
			Pool: resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1}},
	}
	for _, d := range devices {
		dev := resourceapi.Device{Name: d.Name, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}}
		if d.Index >= 0 {
			idx := d.Index
			dev.Attributes["index"] = resourceapi.DeviceAttribute{IntValue: &idx}
		}
		s.Spec.Devices = append(s.Spec.Devices, dev)
	}
	return s
}

// Result is an allocation result: device of driver in pool.
func Result(driver, pool, device string) resourceapi.DeviceRequestAllocationResult {
	return resourceapi.DeviceRequestAllocationResult{Request: v1alpha1.ClaimRequestName, Driver: driver, Pool: pool, Device: device}
}

// Claim is ResourceClaim ns/name, allocated results when any is given,
// not allocated otherwise.
func Claim(ns, name string, results ...resourceapi.DeviceRequestAllocationResult) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name)}}
	if len(results) > 0 {
		c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results}}
	}
	return c
}

// DRAListers returns ResourceClaim and ResourceSlice listers over fixed
// objects.
func DRAListers(t testing.TB, claims []*resourceapi.ResourceClaim, slices []*resourceapi.ResourceSlice) (resourcelisters.ResourceClaimLister, resourcelisters.ResourceSliceLister) {
	t.Helper()
	ci := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	si := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, c := range claims {
		if err := ci.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range slices {
		if err := si.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	return resourcelisters.NewResourceClaimLister(ci), resourcelisters.NewResourceSliceLister(si)
}

// CounterValue returns the value of a counter in the legacy registry (0 if
// absent), matching the given labels.
func CounterValue(t testing.TB, name string, match map[string]string) float64 {
	t.Helper()
	fams, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	metric:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range match {
				if got[k] != v {
					continue metric
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// IsNoData reports whether err wraps adapter.ErrNoData.
func IsNoData(err error) bool { return errors.Is(err, adapter.ErrNoData) }

// Approx reports whether got is within rel (relative) of want.
func Approx(got, want, rel float64) bool {
	if want == 0 {
		return got == 0
	}
	d := (got - want) / want
	return d <= rel && d >= -rel
}

// PodsInfo is metric m of pods.
func PodsInfo(m string) cmprovider.CustomMetricInfo {
	return cmprovider.CustomMetricInfo{GroupResource: adapter.PodsResource, Namespaced: true, Metric: m}
}

// DepInfo is metric m of deployments.apps.
func DepInfo(m string) cmprovider.CustomMetricInfo {
	return cmprovider.CustomMetricInfo{GroupResource: adapter.DeploymentsResource, Namespaced: true, Metric: m}
}

// GetValue returns p's value of info for the object name, failing the test
// on an error.
func GetValue(t testing.TB, p cmprovider.CustomMetricsProvider, info cmprovider.CustomMetricInfo, name types.NamespacedName) float64 {
	t.Helper()
	mv, err := p.GetMetricByName(context.Background(), name, info, labels.Everything())
	if err != nil {
		t.Fatalf("%s %s: %v", info, name, err)
	}
	return mv.Value.AsApproximateFloat64()
}
