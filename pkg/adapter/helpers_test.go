package adapter

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/legacyregistry"
)

// simEpoch is a simulated clock far from the wall clock, so a test shows
// which clock a computation used.
var simEpoch = time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)

func nn(ns, name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }

// podBuilder builds pods fluently.
type podBuilder struct{ p *corev1.Pod }

func newPod(ns, name string) *podBuilder {
	return &podBuilder{p: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name),
			Labels: map[string]string{}, Annotations: map[string]string{}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}}
}

func (b *podBuilder) label(k, v string) *podBuilder       { b.p.Labels[k] = v; return b }
func (b *podBuilder) annotate(k, v string) *podBuilder    { b.p.Annotations[k] = v; return b }
func (b *podBuilder) node(n string) *podBuilder           { b.p.Spec.NodeName = n; return b }
func (b *podBuilder) ip(ip string) *podBuilder            { b.p.Status.PodIP = ip; return b }
func (b *podBuilder) phase(p corev1.PodPhase) *podBuilder { b.p.Status.Phase = p; return b }
func (b *podBuilder) gpu(node string, idx int) *podBuilder {
	return b.node(node).annotate(v1alpha1.AnnotationGPUIndex, fmt.Sprint(idx))
}
func (b *podBuilder) scrape(port int) *podBuilder {
	return b.annotate(AnnotationScrape, "true").annotate(AnnotationPort, fmt.Sprint(port))
}
func (b *podBuilder) obj() *corev1.Pod { return b.p }

func deployment(ns, name string, match map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: match}},
	}
}

// listers returns pod and deployment listers over fixed objects.
func listers(t *testing.T, pods []*corev1.Pod, deps []*appsv1.Deployment) (corelisters.PodLister, appslisters.DeploymentLister) {
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

// counterValue returns the value of a counter in the legacy registry (0 if
// absent), matching the given labels.
func counterValue(t *testing.T, name string, match map[string]string) float64 {
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

var inf = math.Inf(+1)

func isNoData(err error) bool { return errors.Is(err, ErrNoData) }

func approx(got, want, rel float64) bool {
	if want == 0 {
		return got == 0
	}
	d := (got - want) / want
	return d <= rel && d >= -rel
}
