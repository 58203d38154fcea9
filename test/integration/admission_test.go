package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// Scheduler selection by annotation and the protected GPU assignment, with
// manifests/ applied for real: the webhook is served by hetsev-scaler and
// the scheduler and scaler run as their service accounts, so the RBAC in
// manifests/ is what they get and the admission policy's exemption for the
// scheduler is exercised.
func TestAdmissionOptsInAndProtectsGPUAssignment(t *testing.T) {
	cp, ctx := testbed(t)
	port, err := cluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	a, _ := applyManifests(ctx, t, cp, port)
	c := cp.Client

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

	// The scaler created the shared certificate and injected its CA.
	waitFor(ctx, t, 30*time.Second, "the webhook's caBundle", func(ctx context.Context) (bool, error) {
		w, err := c.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "hetsev-scheduler-selection", metav1.GetOptions{})
		return err == nil && len(w.Webhooks[0].ClientConfig.CABundle) > 0, nil
	})
	if s, err := c.CoreV1().Secrets("hetsev-system").Get(ctx, "hetsev-webhook-tls", metav1.GetOptions{}); err != nil || s.Type != v1.SecretTypeTLS {
		t.Fatalf("webhook certificate Secret: %v", err)
	}
	// Until the API server has the new configuration, dry runs go through
	// unmutated.
	waitFor(ctx, t, 30*time.Second, "the webhook to mutate a dry-run pod", func(ctx context.Context) (bool, error) {
		p, err := c.CoreV1().Pods("default").Create(ctx, userPod("probe", true, ""), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && p.Spec.SchedulerName == "hetsev-scheduler", nil
	})

	// The API server loads admission policies asynchronously too.
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

	// The example annotated pod, naming no scheduler, is opted in, gets
	// NVIDIA_VISIBLE_DEVICES from the downward API and is placed by
	// hetsev-scheduler, which binds it with hetsev.io/gpu-index.
	objs, err := cluster.ReadManifests(filepath.Join(cluster.RepoRoot(), "manifests", "examples", exampleByAnnotation))
	if err != nil || len(objs) != 1 {
		t.Fatalf("%s: %v", exampleByAnnotation, err)
	}
	name := objs[0].GetName()
	if _, err := a.Apply(ctx, "default", objs); err != nil {
		t.Fatal(err)
	}
	p, err := c.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.SchedulerName != "hetsev-scheduler" {
		t.Errorf("schedulerName %q, want hetsev-scheduler", p.Spec.SchedulerName)
	}
	if env := p.Spec.Containers[0].Env; len(env) != 1 || env[0].ValueFrom == nil || env[0].ValueFrom.FieldRef.FieldPath != gpuinventory.GPUIndexFieldPath {
		t.Errorf("env %+v, want NVIDIA_VISIBLE_DEVICES from %s", env, gpuinventory.GPUIndexFieldPath)
	}
	waitRunning(ctx, t, c, "app.kubernetes.io/name="+name, 1)
	p, _ = c.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	idx, ok, err := gpuinventory.ParseGPUIndex(p.Annotations)
	if !ok || err != nil || p.Spec.NodeName == "" {
		t.Fatalf("pod on %q with %s %v (%v)", p.Spec.NodeName, v1alpha1.AnnotationGPUIndex, p.Annotations, err)
	}
	t.Logf("%s on %s GPU %d", name, p.Spec.NodeName, idx)

	// Nobody else may move it to another GPU.
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"%d"}}}`, v1alpha1.AnnotationGPUIndex, 1-idx)
	_, err = c.CoreV1().Pods("default").Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	expectDenied(t, "changing hetsev.io/gpu-index", err, "hetsev.io/gpu-index is written by hetsev-scheduler only")

	// Nor create a pod with a GPU of its choosing.
	own := userPod("own-index", true, "hetsev-scheduler")
	own.Annotations[v1alpha1.AnnotationGPUIndex] = "0"
	_, err = c.CoreV1().Pods("default").Create(ctx, own, metav1.CreateOptions{})
	expectDenied(t, "creating a pod with hetsev.io/gpu-index", err, "remove the annotation")

	// Nor name GPUs with a literal NVIDIA_VISIBLE_DEVICES, hetsev pod or not.
	for _, annotated := range []bool{true, false} {
		lit := userPod(fmt.Sprintf("literal-%v", annotated), annotated, "")
		lit.Spec.Containers[0].Env = []v1.EnvVar{{Name: gpuinventory.EnvVisibleDevices, Value: "all"}}
		_, err = c.CoreV1().Pods("default").Create(ctx, lit, metav1.CreateOptions{})
		expectDenied(t, "a literal NVIDIA_VISIBLE_DEVICES", err, "NVIDIA_VISIBLE_DEVICES in container(s) server must come from the downward API")
	}
	// kube-system is exempt (the NVIDIA device plugin sets it to all).
	sys := userPod("device-plugin", false, "")
	sys.Namespace = "kube-system"
	sys.Spec.Containers[0].Env = []v1.EnvVar{{Name: gpuinventory.EnvVisibleDevices, Value: "all"}}
	if _, err := c.CoreV1().Pods("kube-system").Create(ctx, sys, metav1.CreateOptions{}); err != nil {
		t.Errorf("kube-system pod with NVIDIA_VISIBLE_DEVICES=all: %v", err)
	}

	// Pods naming another scheduler, and pods without the annotation, are
	// left alone.
	for _, lp := range []*v1.Pod{userPod("other-scheduler", true, "volcano"), userPod("plain", false, "")} {
		got, err := c.CoreV1().Pods("default").Create(ctx, lp, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := lp.Spec.SchedulerName
		if want == "" {
			want = v1.DefaultSchedulerName
		}
		if got.Spec.SchedulerName != want || len(got.Spec.Containers[0].Env) != 0 {
			t.Errorf("%s: schedulerName %q env %+v, want %q and no env", lp.Name, got.Spec.SchedulerName, got.Spec.Containers[0].Env, want)
		}
	}

	// A device-plugin GPU pod may not reach the GPU pool: by tolerating its
	// taint (or every taint), or by naming its node. Without the
	// toleration it may; so may a pod that asks for no GPU and tolerates
	// every taint (a DaemonSet's).
	devicePluginPod := func(name string, tol []v1.Toleration, node string) *v1.Pod {
		p := userPod(name, false, "")
		p.Spec.Containers[0].Resources.Limits = v1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
		p.Spec.Tolerations, p.Spec.NodeName = tol, node
		return p
	}
	poolTol := []v1.Toleration{gpuinventory.GPUPoolToleration()}
	everyTaint := []v1.Toleration{{Operator: v1.TolerationOpExists}}
	for _, tc := range []struct {
		pod  *v1.Pod
		want string // "" allowed
	}{
		{devicePluginPod("dp-pool", poolTol, ""), "tolerates the GPU pool taint hetsev.io/gpu-pool"},
		{devicePluginPod("dp-every", everyTaint, ""), "tolerates the GPU pool taint hetsev.io/gpu-pool"},
		{devicePluginPod("dp-node", nil, "t4-0"), "names its node itself (spec.nodeName)"},
		{devicePluginPod("dp-plain", nil, ""), ""},
		{func() *v1.Pod { p := userPod("daemon-like", false, ""); p.Spec.Tolerations = everyTaint; return p }(), ""},
	} {
		_, err := c.CoreV1().Pods("default").Create(ctx, tc.pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v, want allowed", tc.pod.Name, err)
			}
			continue
		}
		expectDenied(t, tc.pod.Name, err, tc.want)
	}

	// Cluster model scope only where an administrator allowed it; no GPU
	// memory below 64Mi.
	clusterScoped := userPod("cluster-scoped", true, "")
	clusterScoped.Annotations[v1alpha1.AnnotationModelScope] = v1alpha1.ModelScopeClusterValue
	_, err = c.CoreV1().Pods("default").Create(ctx, clusterScoped, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	expectDenied(t, "hetsev.io/model-scope: cluster in an unlabelled namespace", err, "label the namespace hetsev.io/model-scope=cluster")
	tiny := userPod("tiny", true, "")
	tiny.Annotations[v1alpha1.AnnotationGPUMemory] = "1Mi"
	_, err = c.CoreV1().Pods("default").Create(ctx, tiny, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	expectDenied(t, "hetsev.io/gpu-memory=1Mi", err, "hetsev.io/gpu-memory=1Mi is below 64Mi")
	tiny.Annotations[v1alpha1.AnnotationGPUMemory] = "64Mi"
	if _, err := c.CoreV1().Pods("default").Create(ctx, tiny, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("hetsev.io/gpu-memory=64Mi: %v, want allowed", err)
	}
	nsPatch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, v1alpha1.AnnotationModelScope, v1alpha1.ModelScopeClusterValue)
	if _, err := c.CoreV1().Namespaces().Patch(ctx, "default", types.MergePatchType, []byte(nsPatch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, 30*time.Second, "hetsev.io/model-scope: cluster allowed in a labelled namespace", func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().Pods("default").Create(ctx, clusterScoped, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil, nil
	})

	// Ephemeral containers (kubectl debug): in a hetsev GPU pod one must
	// take NVIDIA_VISIBLE_DEVICES from the downward API, in any pod none
	// may set a literal.
	debug := func(pod, container string, env []v1.EnvVar) error {
		cur, err := c.CoreV1().Pods("default").Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.EphemeralContainers = append(cur.Spec.EphemeralContainers, v1.EphemeralContainer{
			EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: container, Image: "busybox", Env: env, TerminationMessagePolicy: v1.TerminationMessageReadFile, ImagePullPolicy: v1.PullIfNotPresent},
		})
		_, err = c.CoreV1().Pods("default").UpdateEphemeralContainers(ctx, pod, cur, metav1.UpdateOptions{})
		return err
	}
	literal := []v1.EnvVar{{Name: gpuinventory.EnvVisibleDevices, Value: "all"}}
	expectDenied(t, "an ephemeral container without NVIDIA_VISIBLE_DEVICES in a hetsev GPU pod", debug(name, "debugger", nil),
		"ephemeral container(s) debugger must take NVIDIA_VISIBLE_DEVICES from the downward API")
	expectDenied(t, "an ephemeral container with a literal NVIDIA_VISIBLE_DEVICES", debug("plain", "debugger", literal),
		"ephemeral container(s) debugger must take NVIDIA_VISIBLE_DEVICES from the downward API")
	if err := debug(name, "debugger-gpu", []v1.EnvVar{gpuinventory.VisibleDevicesEnv()}); err != nil {
		t.Errorf("an ephemeral container with NVIDIA_VISIBLE_DEVICES from the downward API: %v", err)
	}
	if err := debug("plain", "debugger-plain", nil); err != nil {
		t.Errorf("an ephemeral container in a pod without a GPU: %v", err)
	}

	// failurePolicy Fail: with the webhook down, annotated pods are refused
	// rather than sent to the default scheduler; other pods are not affected.
	scaler.Stop(5 * time.Second)
	_, err = c.CoreV1().Pods("default").Create(ctx, userPod("webhook-down", true, ""), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "scheduler-selection.hetsev.io") {
		t.Errorf("annotated pod with the webhook down: err = %v, want a failed call to scheduler-selection.hetsev.io", err)
	}
	if _, err := c.CoreV1().Pods("default").Create(ctx, userPod("plain-webhook-down", false, ""), metav1.CreateOptions{}); err != nil {
		t.Errorf("unannotated pod with the webhook down: %v", err)
	}
	// A pod the webhook would leave as it is (hetsev-scheduler, the runtime
	// class, the variable in every container, the pool) is not sent; one
	// that lacks only the pool's toleration is, and is refused.
	if _, err := c.CoreV1().Pods("default").Create(ctx, annotationModePod("opted-in-webhook-down"), metav1.CreateOptions{}); err != nil {
		t.Errorf("an opted-in pod with the webhook down: %v (the webhook was called for a pod that needs nothing)", err)
	}
	noPool := annotationModePod("no-pool-webhook-down")
	noPool.Spec.Tolerations = nil
	_, err = c.CoreV1().Pods("default").Create(ctx, noPool, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "scheduler-selection.hetsev.io") {
		t.Errorf("a pod without the pool toleration, the webhook down: err = %v, want a failed call to scheduler-selection.hetsev.io", err)
	}
}

// userPod is a pod as a user would write it: optionally annotated for
// hetsev, naming scheduler (or none), on a T4 node.
func userPod(name string, annotated bool, scheduler string) *v1.Pod {
	p := modelPod(name, "resnet50", "2048Mi").on("Tesla-T4").pod
	p.Labels = map[string]string{"app": name}
	p.Spec.SchedulerName = scheduler
	if !annotated {
		p.Annotations = map[string]string{}
	}
	return p
}

func expectDenied(t *testing.T, what string, err error, msg string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: allowed, want denied", what)
		return
	}
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Errorf("%s: %v, want Forbidden", what, err)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Errorf("%s: %q does not say %q", what, err.Error(), msg)
	}
	t.Logf("%s: refused: %v", what, err)
}
