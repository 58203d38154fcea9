package scrape

import (
	"fmt"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/hetsev/hetsev/pkg/adapter"
)

// Target is one metrics endpoint to scrape: a pod's Prometheus URL.
type Target struct {
	// Pod is the pod the endpoint belongs to; Istio series are attributed
	// to it.
	Pod types.NamespacedName
	// UID of the pod; a new UID under the same name starts a fresh history.
	UID types.UID
	// Node is the pod's spec.nodeName. DCGM series without a Hostname label
	// are attributed to this node.
	Node string
	// URL is http://<podIP>:<port><path>.
	URL string
	// DCGM says the pod is a trusted dcgm-exporter (DCGMExporters.Match):
	// only such a target's DCGM series are read, and only for GPUs of its
	// own node. Any other pod's are ignored, so a tenant cannot write
	// another pod's GPU utilisation.
	DCGM bool
}

// DCGMExporters says which pods are trusted dcgm-exporters: those in
// Namespace ("" any namespace) whose labels match Selector (nil: none).
// A tenant who can only create pods in its own namespaces cannot pass for
// one when Namespace is the GPU stack's (gpu-operator by default).
type DCGMExporters struct {
	Namespace string
	Selector  labels.Selector
}

// Match reports whether pod is a trusted dcgm-exporter.
func (d DCGMExporters) Match(pod *corev1.Pod) bool {
	return pod != nil && d.Selector != nil && !d.Selector.Empty() &&
		(d.Namespace == "" || pod.Namespace == d.Namespace) && d.Selector.Matches(labels.Set(pod.Labels))
}

// TargetLister returns the current scrape targets. The Scraper calls it at
// the start of every scrape round.
type TargetLister func() ([]Target, error)

// TargetForPod returns the scrape target of a pod and true when the pod
// should be scraped: phase Running, a pod IP, annotation
// prometheus.io/scrape "true", and a valid prometheus.io/port (1-65535;
// there is no default port). The path is prometheus.io/path, default
// /metrics.
func TargetForPod(pod *corev1.Pod) (Target, bool) {
	if pod == nil || pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" {
		return Target{}, false
	}
	ann := pod.Annotations
	if strings.TrimSpace(ann[adapter.AnnotationScrape]) != "true" {
		return Target{}, false
	}
	port, err := strconv.Atoi(strings.TrimSpace(ann[adapter.AnnotationPort]))
	if err != nil || port < 1 || port > 65535 {
		return Target{}, false
	}
	ip := net.ParseIP(pod.Status.PodIP)
	if ip == nil {
		return Target{}, false
	}
	path := strings.TrimSpace(ann[adapter.AnnotationPath])
	if path == "" {
		path = adapter.DefaultMetricsPath
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u := url.URL{Scheme: "http", Host: net.JoinHostPort(ip.String(), strconv.Itoa(port))}
	// Parse path and query as given (prometheus.io/path may carry a query).
	ref, err := url.Parse(path)
	if err != nil || ref.Scheme != "" || ref.Host != "" {
		return Target{}, false
	}
	full := u.ResolveReference(ref)
	return Target{
		Pod:  types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name},
		UID:  pod.UID,
		Node: pod.Spec.NodeName,
		URL:  full.String(),
	}, true
}

// PodTargetLister returns a TargetLister over the pods in lister (an
// informer's cache; its namespace scope is the informer's), applying
// TargetForPod and marking the pods dcgm matches as trusted dcgm-exporters
// (Target.DCGM). Targets are sorted by namespace and name.
func PodTargetLister(lister corelisters.PodLister, dcgm DCGMExporters) TargetLister {
	return func() ([]Target, error) {
		if lister == nil {
			return nil, fmt.Errorf("scrape: nil pod lister")
		}
		pods, err := lister.List(labels.Everything())
		if err != nil {
			return nil, err
		}
		ts := make([]Target, 0, len(pods))
		for _, p := range pods {
			if t, ok := TargetForPod(p); ok {
				t.DCGM = dcgm.Match(p)
				ts = append(ts, t)
			}
		}
		sort.Slice(ts, func(i, j int) bool {
			if ts[i].Pod.Namespace != ts[j].Pod.Namespace {
				return ts[i].Pod.Namespace < ts[j].Pod.Namespace
			}
			return ts[i].Pod.Name < ts[j].Pod.Name
		})
		return ts, nil
	}
}
