package scaler

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Pod and Deployment listers (client-go's interfaces, which the metrics
// adapter's provider reads) over a controller-runtime reader: the
// scaler's own cache, so that reading metrics from Prometheus watches
// nothing more. The objects returned are the cache's: read-only.

type podLister struct{ r client.Reader }

func (l podLister) List(sel labels.Selector) ([]*v1.Pod, error) { return listPods(l.r, "", sel) }
func (l podLister) Pods(ns string) corelisters.PodNamespaceLister {
	return podNamespaceLister{r: l.r, ns: ns}
}

type podNamespaceLister struct {
	r  client.Reader
	ns string
}

func (l podNamespaceLister) List(sel labels.Selector) ([]*v1.Pod, error) {
	return listPods(l.r, l.ns, sel)
}
func (l podNamespaceLister) Get(name string) (*v1.Pod, error) {
	p := &v1.Pod{}
	if err := l.r.Get(context.Background(), types.NamespacedName{Namespace: l.ns, Name: name}, p); err != nil {
		return nil, err
	}
	return p, nil
}

func listPods(r client.Reader, ns string, sel labels.Selector) ([]*v1.Pod, error) {
	var list v1.PodList
	if err := r.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := make([]*v1.Pod, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

type deploymentLister struct{ r client.Reader }

func (l deploymentLister) List(sel labels.Selector) ([]*appsv1.Deployment, error) {
	return listDeployments(l.r, "", sel)
}
func (l deploymentLister) Deployments(ns string) appslisters.DeploymentNamespaceLister {
	return deploymentNamespaceLister{r: l.r, ns: ns}
}

type deploymentNamespaceLister struct {
	r  client.Reader
	ns string
}

func (l deploymentNamespaceLister) List(sel labels.Selector) ([]*appsv1.Deployment, error) {
	return listDeployments(l.r, l.ns, sel)
}
func (l deploymentNamespaceLister) Get(name string) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	if err := l.r.Get(context.Background(), types.NamespacedName{Namespace: l.ns, Name: name}, d); err != nil {
		return nil, err
	}
	return d, nil
}

func listDeployments(r client.Reader, ns string, sel labels.Selector) ([]*appsv1.Deployment, error) {
	var list appsv1.DeploymentList
	if err := r.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := make([]*appsv1.Deployment, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

var (
	_ corelisters.PodLister        = podLister{}
	_ appslisters.DeploymentLister = deploymentLister{}
)
