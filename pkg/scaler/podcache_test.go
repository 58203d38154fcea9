package scaler

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// injectedPod is a model server pod as the cluster holds it: applied with
// kubectl, Istio's sidecar and init container injected, a model volume,
// probes, bound to a GPU by hetsev-scheduler and running.
func injectedPod() *v1.Pod {
	always := v1.ContainerRestartPolicyAlways
	req := v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi")}}
	probe := &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/v2/health/ready"}}, PeriodSeconds: 5}
	env := []v1.EnvVar{gpuinventory.VisibleDevicesEnv()}
	for _, k := range []string{"ISTIO_META_POD_PORTS", "ISTIO_META_APP_CONTAINERS", "ISTIO_META_CLUSTER_ID", "ISTIO_META_INTERCEPTION_MODE", "ISTIO_META_WORKLOAD_NAME", "ISTIO_META_OWNER", "ISTIO_META_MESH_ID", "TRUST_DOMAIN", "PROXY_CONFIG", "ISTIO_META_NODE_NAME"} {
		env = append(env, v1.EnvVar{Name: k, Value: strings.Repeat("x", 120)})
	}
	mounts := []v1.VolumeMount{{Name: "istio-envoy", MountPath: "/etc/istio/proxy"}, {Name: "istio-data", MountPath: "/var/lib/istio/data"}, {Name: "istio-token", MountPath: "/var/run/secrets/tokens"}, {Name: "models", MountPath: "/models"}}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "resnet50-t4-7d9f-abcde", Namespace: "team-a", UID: "u1",
			Labels: map[string]string{v1alpha1.LabelModelService: "resnet50", "app": "resnet50"},
			Annotations: map[string]string{
				v1alpha1.AnnotationModel: "resnet50", v1alpha1.AnnotationGPUMemory: "2048Mi", v1alpha1.AnnotationGPUIndex: "1",
				"prometheus.io/scrape": "true", "sidecar.istio.io/status": strings.Repeat("s", 400),
				v1.LastAppliedConfigAnnotation: strings.Repeat("{}", 1500),
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "resnet50-t4-7d9f", UID: "rs1"}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}}},
		},
		Spec: v1.PodSpec{
			NodeName: "gpu-node-3", SchedulerName: v1alpha1.SchedulerName,
			Tolerations: []v1.Toleration{gpuinventory.GPUPoolToleration()},
			Volumes:     []v1.Volume{{Name: "models", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}, {Name: "istio-envoy"}, {Name: "istio-data"}, {Name: "istio-token"}},
			InitContainers: []v1.Container{
				{Name: "istio-init", Image: "istio/proxyv2", Args: []string{"istio-iptables", "-p", "15001"}, Env: env[:1], Resources: req},
				{Name: "istio-proxy", Image: "istio/proxyv2", RestartPolicy: &always, Args: []string{"proxy", "sidecar"}, Env: env, VolumeMounts: mounts, Resources: req, ReadinessProbe: probe, StartupProbe: probe},
			},
			Containers: []v1.Container{{
				Name: "server", Image: "nvcr.io/nvidia/tritonserver:24.08-py3", Command: []string{"tritonserver"}, Args: []string{"--model-repository=/models"},
				Env: env[:1], VolumeMounts: mounts[3:], Resources: req, LivenessProbe: probe, ReadinessProbe: probe,
				Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8000}},
			}},
			Overhead: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")},
		},
		Status: v1.PodStatus{
			Phase:             v1.PodRunning,
			Conditions:        []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue}, {Type: v1.PodReady, Status: v1.ConditionTrue}},
			ContainerStatuses: []v1.ContainerStatus{{Name: "server", Ready: true, RestartCount: 2, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}},
			PodIP:             "127.0.0.10",
		},
	}
}

// TestPodCacheKeepsWhatTheScalerReads: the pod cache's transform keeps
// every field the scaler's rules read (labels, hetsev's annotations,
// owners, node, scheduler, tolerations, requests of every container,
// sidecars' restart policy, overhead, status) and drops what they never
// read, which is most of an injected pod.
func TestPodCacheKeepsWhatTheScalerReads(t *testing.T) {
	orig := injectedPod()
	got, err := TrimPod(orig.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	p := got.(*v1.Pod)
	if !reflect.DeepEqual(p.Status, orig.Status) || p.Spec.NodeName != orig.Spec.NodeName || p.Spec.SchedulerName != orig.Spec.SchedulerName ||
		!reflect.DeepEqual(p.Spec.Tolerations, orig.Spec.Tolerations) || !reflect.DeepEqual(p.Spec.Overhead, orig.Spec.Overhead) ||
		!reflect.DeepEqual(p.Labels, orig.Labels) || !reflect.DeepEqual(p.OwnerReferences, orig.OwnerReferences) {
		t.Errorf("trimmed pod lost what the scaler reads:\n%+v", p)
	}
	for k, v := range orig.Annotations {
		if k != v1.LastAppliedConfigAnnotation && p.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, p.Annotations[k], v)
		}
	}
	for i, c := range append(append([]v1.Container{}, orig.Spec.InitContainers...), orig.Spec.Containers...) {
		var g v1.Container
		if i < len(orig.Spec.InitContainers) {
			g = p.Spec.InitContainers[i]
		} else {
			g = p.Spec.Containers[i-len(orig.Spec.InitContainers)]
		}
		if g.Name != c.Name || g.Image != c.Image || !reflect.DeepEqual(g.Resources, c.Resources) || !reflect.DeepEqual(g.RestartPolicy, c.RestartPolicy) || !reflect.DeepEqual(g.Ports, c.Ports) {
			t.Errorf("container %s: kept %+v", c.Name, g)
		}
		if g.Env != nil || g.Command != nil || g.Args != nil || g.VolumeMounts != nil || g.LivenessProbe != nil || g.ReadinessProbe != nil || g.StartupProbe != nil {
			t.Errorf("container %s: not trimmed: %+v", c.Name, g)
		}
	}
	if p.ManagedFields != nil || p.Spec.Volumes != nil || p.Annotations[v1.LastAppliedConfigAnnotation] != "" {
		t.Errorf("managed fields %v, volumes %v, last-applied %q: want none", p.ManagedFields, p.Spec.Volumes, p.Annotations[v1.LastAppliedConfigAnnotation])
	}
	before, _ := json.Marshal(orig)
	after, _ := json.Marshal(p)
	t.Logf("injected model server pod: %d bytes as JSON, %d cached (%.0f %%)", len(before), len(after), 100*float64(len(after))/float64(len(before)))
	if len(after)*2 > len(before) {
		t.Errorf("cached pod %d bytes of %d: want under half", len(after), len(before))
	}
	// Other kinds only lose their managed fields.
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", ManagedFields: orig.ManagedFields, Annotations: map[string]string{v1.LastAppliedConfigAnnotation: "{}"}}}
	if got, err := TrimPod(n); err != nil || got.(*v1.Node).ManagedFields != nil || got.(*v1.Node).Annotations[v1.LastAppliedConfigAnnotation] != "{}" {
		t.Errorf("node: %+v, %v", got, err)
	}
}

// TestPodCacheLeavesOutFinishedPods: the scaler caches pods through the
// field selector that leaves out Succeeded and Failed pods, with TrimPod.
func TestPodCacheLeavesOutFinishedPods(t *testing.T) {
	opts := CacheOptions(false, false, "")
	var pods *cache.ByObject
	for obj, by := range opts.ByObject {
		if _, ok := obj.(*v1.Pod); ok {
			pods = &by
		}
	}
	if pods == nil || pods.Field == nil || pods.Transform == nil {
		t.Fatalf("pod cache entry %+v: want a field selector and a transform", pods)
	}
	for phase, want := range map[v1.PodPhase]bool{v1.PodPending: true, v1.PodRunning: true, v1.PodUnknown: true, v1.PodSucceeded: false, v1.PodFailed: false} {
		if got := pods.Field.Matches(fields.Set{"status.phase": string(phase)}); got != want {
			t.Errorf("phase %s cached %v, want %v", phase, got, want)
		}
	}
	if ns := CacheOptions(false, false, "team-a").DefaultNamespaces; len(ns) != 1 {
		t.Errorf("--namespace team-a: default namespaces %v", ns)
	}
}
