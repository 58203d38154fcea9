package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// admissionStack is a testbed with manifests/ applied, hetsev-scaler
// serving the webhook and hetsev-scheduler running, both as their service
// accounts, once the webhook mutates and the admission policy refuses.
type admissionStack struct {
	cp  *cluster.ControlPlane
	ctx context.Context
	c   kubernetes.Interface
	a   *cluster.Applier
}

func startAdmission(t *testing.T) *admissionStack {
	t.Helper()
	cp, ctx := testbed(t)
	port, err := cluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	a, _ := applyManifests(ctx, t, cp, port)
	asScaler, err := cp.KubeconfigAs(scalerSA)
	if err != nil {
		t.Fatal(err)
	}
	scaler, err := cluster.StartScaler(ctx, cp, "--kubeconfig="+asScaler,
		fmt.Sprintf("--webhook-bind-address=127.0.0.1:%d", port), "--webhook-cert-hosts=127.0.0.1", "--webhook-namespace=hetsev-system")
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, scaler)
	asScheduler, err := cp.KubeconfigAs(schedulerSA)
	if err != nil {
		t.Fatal(err)
	}
	sched, err := cluster.StartSchedulerWith(ctx, cp, asScheduler)
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, sched)
	c := cp.Client
	waitFor(ctx, t, 30*time.Second, "the webhook to mutate a dry-run pod", func(ctx context.Context) (bool, error) {
		p, err := c.CoreV1().Pods("default").Create(ctx, userPod("probe", true, ""), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && p.Spec.SchedulerName == v1alpha1.SchedulerName, nil
	})
	waitFor(ctx, t, 30*time.Second, "the admission policy to refuse a literal NVIDIA_VISIBLE_DEVICES", func(ctx context.Context) (bool, error) {
		lit := userPod("probe-literal", false, "")
		lit.Spec.Containers[0].Env = []v1.EnvVar{{Name: gpuinventory.EnvVisibleDevices, Value: "all"}}
		_, err := c.CoreV1().Pods("default").Create(ctx, lit, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil, nil
	})
	if pol, err := c.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, "hetsev-gpu-assignment", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if pol.Status.TypeChecking != nil && len(pol.Status.TypeChecking.ExpressionWarnings) > 0 {
		t.Errorf("admission policy type-check warnings: %+v", pol.Status.TypeChecking.ExpressionWarnings)
	}
	return &admissionStack{cp: cp, ctx: ctx, c: c, a: a}
}

// TestGPUAnnotationsImmutableOnceBound: once hetsev-scheduler has bound a
// pod to a GPU, the annotations every program counts the GPU from cannot be
// edited (directly or through pods/status), not even by the scheduler for
// hetsev.io/gpu-index: its model and GPU memory, and its declared GPU time
// (hetsev.io/busy-share, hetsev.io/max-inflation), which can be neither
// added, changed nor removed; init containers and native sidecars of a GPU
// pod get NVIDIA_VISIBLE_DEVICES from the webhook, and without the webhook
// the policy refuses a GPU pod with a container lacking it.
func TestGPUAnnotationsImmutableOnceBound(t *testing.T) {
	s := startAdmission(t)
	ctx, c := s.ctx, s.c
	always := v1.ContainerRestartPolicyAlways
	p := userPod("bound", true, "")
	p.Annotations[v1alpha1.AnnotationBusyShare] = "0.5"
	p.Annotations[v1alpha1.AnnotationMaxInflation] = "2"
	p.Spec.InitContainers = []v1.Container{{Name: "fetch-model", Image: "x"}, {Name: "proxy", Image: "y", RestartPolicy: &always}}
	created, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A pod that declares no GPU time: it cannot declare it later either.
	if _, err := c.CoreV1().Pods("default").Create(ctx, userPod("undeclared", true, ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, ctr := range append(append([]v1.Container{}, created.Spec.InitContainers...), created.Spec.Containers...) {
		if i := gpuinventory.VisibleDevicesIndex(ctr.Env); i < 0 || !gpuinventory.IsVisibleDevicesFromGPUIndex(ctr.Env[i]) {
			t.Errorf("container %s: env %+v, want %s from %s", ctr.Name, ctr.Env, gpuinventory.EnvVisibleDevices, gpuinventory.GPUIndexFieldPath)
		}
	}
	waitRunning(ctx, t, c, "app in (bound, undeclared)", 2)
	bound, err := c.CoreV1().Pods("default").Get(ctx, "bound", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	idx, ok, err := gpuinventory.ParseGPUIndex(bound.Annotations)
	if !ok || err != nil || bound.Spec.NodeName == "" {
		t.Fatalf("pod on %q with annotations %v (%v)", bound.Spec.NodeName, bound.Annotations, err)
	}
	// The scheduler's binding writes the placement notes past the policy.
	if bound.Annotations[v1alpha1.AnnotationPredictedInflation] == "" {
		t.Fatalf("bound pod has no %s: annotations %v", v1alpha1.AnnotationPredictedInflation, bound.Annotations)
	}
	forged := userPod("forged-notes", true, "")
	forged.Annotations[v1alpha1.AnnotationGPUNeighbours] = "default/other resnet50 0.1"
	_, err = c.CoreV1().Pods("default").Create(ctx, forged, metav1.CreateOptions{})
	expectDenied(t, "creating a pod with hetsev.io/gpu-neighbours", err, "remove them from the pod or its template")

	asScheduler, err := s.cp.KubeconfigAs(schedulerSA)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", asScheduler)
	if err != nil {
		t.Fatal(err)
	}
	scheduler, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	annotate := func(k, v string) []byte {
		if v == "" {
			return []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, k))
		}
		return []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, k, v))
	}
	for _, tc := range []struct {
		what        string
		pod         string
		client      kubernetes.Interface
		subresource []string
		patch       []byte
		msg         string
	}{
		{"lowering hetsev.io/gpu-memory", "bound", c, nil, annotate(v1alpha1.AnnotationGPUMemory, "1Mi"), "hetsev.io/gpu-memory cannot change once the pod exists"},
		{"removing hetsev.io/gpu-memory", "bound", c, nil, annotate(v1alpha1.AnnotationGPUMemory, ""), "hetsev.io/gpu-memory cannot change"},
		{"changing hetsev.io/model", "bound", c, nil, annotate(v1alpha1.AnnotationModel, "another-model"), "hetsev.io/model cannot change"},
		{"lowering hetsev.io/gpu-memory through pods/status", "bound", c, []string{"status"}, annotate(v1alpha1.AnnotationGPUMemory, "1Mi"), "hetsev.io/gpu-memory cannot change"},
		{"removing hetsev.io/gpu-index", "bound", c, nil, annotate(v1alpha1.AnnotationGPUIndex, ""), "is fixed once set"},
		{"changing hetsev.io/gpu-index through pods/status", "bound", c, []string{"status"}, annotate(v1alpha1.AnnotationGPUIndex, fmt.Sprint(1-idx)), "is fixed once set"},
		{"the scheduler changing hetsev.io/gpu-index", "bound", scheduler, []string{"status"}, annotate(v1alpha1.AnnotationGPUIndex, fmt.Sprint(1-idx)), "is fixed once set"},
		// Lowering a busy share after binding would over-commit the GPU's
		// time as lowering gpu-memory would its memory; raising max-inflation
		// would let a neighbour inflate the pod's latency past its SLO.
		{"lowering hetsev.io/busy-share", "bound", c, nil, annotate(v1alpha1.AnnotationBusyShare, "0.1"), "hetsev.io/busy-share cannot change once the pod exists"},
		{"raising hetsev.io/busy-share", "bound", c, nil, annotate(v1alpha1.AnnotationBusyShare, "0.9"), "hetsev.io/busy-share cannot change"},
		{"removing hetsev.io/busy-share", "bound", c, nil, annotate(v1alpha1.AnnotationBusyShare, ""), "hetsev.io/busy-share cannot change"},
		{"lowering hetsev.io/busy-share through pods/status", "bound", c, []string{"status"}, annotate(v1alpha1.AnnotationBusyShare, "0.1"), "hetsev.io/busy-share cannot change"},
		{"adding hetsev.io/busy-share", "undeclared", c, nil, annotate(v1alpha1.AnnotationBusyShare, "0.1"), "hetsev.io/busy-share cannot change"},
		{"changing hetsev.io/max-inflation", "bound", c, nil, annotate(v1alpha1.AnnotationMaxInflation, "5"), "hetsev.io/max-inflation cannot change once the pod exists"},
		{"removing hetsev.io/max-inflation", "bound", c, nil, annotate(v1alpha1.AnnotationMaxInflation, ""), "hetsev.io/max-inflation cannot change"},
		{"changing hetsev.io/max-inflation through pods/status", "bound", c, []string{"status"}, annotate(v1alpha1.AnnotationMaxInflation, "5"), "hetsev.io/max-inflation cannot change"},
		{"adding hetsev.io/max-inflation", "undeclared", c, nil, annotate(v1alpha1.AnnotationMaxInflation, "1.5"), "hetsev.io/max-inflation cannot change"},
		// The placement notes are the scheduler's figures: a tenant that
		// rewrote them would show operators a prediction nobody made.
		{"changing hetsev.io/predicted-inflation", "bound", c, nil, annotate(v1alpha1.AnnotationPredictedInflation, "9.99"), "written by it only, in the pod's binding; they cannot be set or changed by"},
		{"removing hetsev.io/gpu-neighbours through pods/status", "bound", c, []string{"status"}, annotate(v1alpha1.AnnotationGPUNeighbours, ""), "cannot be set or changed by"},
	} {
		_, err := tc.client.CoreV1().Pods("default").Patch(ctx, tc.pod, types.MergePatchType, tc.patch, metav1.PatchOptions{}, tc.subresource...)
		expectDenied(t, tc.what, err, tc.msg)
	}
	// Other annotations stay editable.
	if _, err := c.CoreV1().Pods("default").Patch(ctx, "bound", types.MergePatchType, annotate("example.com/note", "checked"), metav1.PatchOptions{}); err != nil {
		t.Errorf("editing an unrelated annotation: %v", err)
	}
	after, err := c.CoreV1().Pods("default").Get(ctx, "bound", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{v1alpha1.AnnotationModel, v1alpha1.AnnotationGPUMemory, v1alpha1.AnnotationGPUIndex, v1alpha1.AnnotationBusyShare, v1alpha1.AnnotationMaxInflation,
		v1alpha1.AnnotationPredictedInflation, v1alpha1.AnnotationGPUNeighbours} {
		if after.Annotations[k] != bound.Annotations[k] {
			t.Errorf("%s = %q after the refused edits, was %q", k, after.Annotations[k], bound.Annotations[k])
		}
	}
	undeclared, err := c.CoreV1().Pods("default").Get(ctx, "undeclared", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{v1alpha1.AnnotationBusyShare, v1alpha1.AnnotationMaxInflation} {
		if v, ok := undeclared.Annotations[k]; ok {
			t.Errorf("pod undeclared has %s=%q after the refused edits, want none", k, v)
		}
	}

	// Without the webhook, a GPU pod whose init container has no
	// NVIDIA_VISIBLE_DEVICES is refused by the policy.
	if err := c.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, "hetsev-scheduler-selection", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, 30*time.Second, "the API server to stop calling the webhook", func(ctx context.Context) (bool, error) {
		p, err := c.CoreV1().Pods("default").Create(ctx, userPod("probe", true, ""), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && p.Spec.SchedulerName == v1.DefaultSchedulerName, nil
	})
	bare := userPod("bare-init", true, v1alpha1.SchedulerName)
	bare.Spec.Containers[0].Env = []v1.EnvVar{gpuinventory.VisibleDevicesEnv()}
	bare.Spec.InitContainers = []v1.Container{{Name: "fetch-model", Image: "x"}, {Name: "proxy", Image: "y", RestartPolicy: &always, Env: []v1.EnvVar{gpuinventory.VisibleDevicesEnv()}}}
	_, err = c.CoreV1().Pods("default").Create(ctx, bare, metav1.CreateOptions{})
	expectDenied(t, "a GPU pod with an init container without NVIDIA_VISIBLE_DEVICES", err, "container(s) fetch-model of this hetsev GPU pod have no NVIDIA_VISIBLE_DEVICES")
}

// TestGPUPodsGetNvidiaRuntimeClass: GPU pods run with the NVIDIA runtime,
// which reads NVIDIA_VISIBLE_DEVICES and is not the node's default under the
// GPU Operator's CDI mode: pods the webhook opts in and the pod template of
// the scaler's Deployments get runtimeClassName nvidia, and the policy
// refuses a tenant pod that names it without a GPU assignment (hetsev's, or
// the device plugin's).
func TestGPUPodsGetNvidiaRuntimeClass(t *testing.T) {
	s := startAdmission(t)
	ctx, c := s.ctx, s.c
	created, err := c.CoreV1().Pods("default").Create(ctx, userPod("opted-in", true, ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rc := created.Spec.RuntimeClassName; rc == nil || *rc != gpuinventory.DefaultRuntimeClassName {
		t.Errorf("pod opted in by the webhook: runtimeClassName %v, want %q", rc, gpuinventory.DefaultRuntimeClassName)
	}
	waitRunning(ctx, t, c, "app=opted-in", 1)

	objs, err := cluster.ReadManifests(filepath.Join(cluster.RepoRoot(), "manifests", "examples", "modelservice-resnet50.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.a.Apply(ctx, "default", objs); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, 30*time.Second, "the scaler's Deployments with the NVIDIA runtime class", func(ctx context.Context) (bool, error) {
		deps, err := c.AppsV1().Deployments("default").List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelModelService + "=resnet50"})
		if err != nil || len(deps.Items) == 0 {
			return false, nil
		}
		for _, d := range deps.Items {
			if rc := d.Spec.Template.Spec.RuntimeClassName; rc == nil || *rc != gpuinventory.DefaultRuntimeClassName {
				return false, fmt.Errorf("deployment %s: runtimeClassName %v, want %q", d.Name, rc, gpuinventory.DefaultRuntimeClassName)
			}
		}
		return true, nil
	})

	nvidia := gpuinventory.DefaultRuntimeClassName
	tenant := userPod("tenant", false, "")
	tenant.Spec.RuntimeClassName = &nvidia
	_, err = c.CoreV1().Pods("default").Create(ctx, tenant, metav1.CreateOptions{})
	expectDenied(t, "a tenant pod with the NVIDIA runtime and no GPU assignment", err, "runtimeClassName nvidia (the NVIDIA runtime) needs a GPU assignment")
	otherScheduler := userPod("volcano-gpu", true, "volcano")
	otherScheduler.Spec.RuntimeClassName = &nvidia
	_, err = c.CoreV1().Pods("default").Create(ctx, otherScheduler, metav1.CreateOptions{})
	expectDenied(t, "an annotated pod of another scheduler with the NVIDIA runtime", err, "needs a GPU assignment")

	devicePlugin := userPod("device-plugin-gpu", false, "")
	devicePlugin.Spec.RuntimeClassName = &nvidia
	devicePlugin.Spec.Containers[0].Resources.Limits = v1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
	if _, err := c.CoreV1().Pods("default").Create(ctx, devicePlugin, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("a pod with the NVIDIA runtime and a device-plugin GPU: %v", err)
	}
	// A hetsev share and a device-plugin GPU in one pod: refused, naming
	// both (the webhook opts the annotated pod in first).
	both := userPod("share-and-device-plugin", true, "")
	both.Spec.Containers[0].Resources.Limits = v1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
	_, err = c.CoreV1().Pods("default").Create(ctx, both, metav1.CreateOptions{})
	expectDenied(t, "a hetsev pod that also asks for nvidia.com/gpu", err, "asks for both a hetsev GPU share (hetsev.io/model, scheduled by hetsev-scheduler) and nvidia.com/gpu from the device plugin (container(s) server)")
	system := userPod("gpu-operator-agent", false, "")
	system.Namespace = "kube-system"
	system.Spec.RuntimeClassName = &nvidia
	if _, err := c.CoreV1().Pods("kube-system").Create(ctx, system, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("a kube-system pod with the NVIDIA runtime: %v", err)
	}
}
