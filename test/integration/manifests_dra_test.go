package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/internal/sim/exporters"
	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/webhook"
)

// The DRA overlay (overlays/dra: manifests/ plus the Component
// manifests/dra) is accepted by a Kubernetes 1.36 API server with strict
// field validation (the DeviceClass's CEL included), gives the service
// accounts the DRA permissions they need and no more, and runs for real:
// hetsev-scaler with --gpu-mode=dra, as its service account, writes a
// ResourceClaimTemplate per Deployment that the API server accepts, its
// webhook gives an annotated pod a claim from a namespace template it
// creates, the admission policy refuses a hetsev GPU pod without a
// claim, and hetsev-metrics-adapter with --gpu-mode=dra, as its service
// account, serves the GPU utilisation of a pod whose claim another
// scheduler allocated (no hetsev.io/gpu-index).
func TestDRAOverlayAppliesAndRuns(t *testing.T) {
	cp, ctx := controlPlane(t)
	c := cp.Client
	port, err := cluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	a, applied := applyKustomization(ctx, t, cp, "overlays/dra", port)
	all := strings.Join(applied, "\n") + "\n"
	for _, want := range []string{
		"DeviceClass " + v1alpha1.DeviceClassName,
		"ClusterRole hetsev-scheduler-dra", "ClusterRoleBinding hetsev-scheduler-dra",
		"ClusterRole hetsev-scaler-dra", "ClusterRoleBinding hetsev-scaler-dra",
		"ClusterRole hetsev-metrics-adapter-dra", "ClusterRoleBinding hetsev-metrics-adapter-dra",
		"Deployment hetsev-system/hetsev-scaler", "Deployment hetsev-system/hetsev-metrics-adapter",
		"ConfigMap hetsev-system/hetsev-scheduler-config",
		"ValidatingAdmissionPolicy hetsev-gpu-assignment",
	} {
		if !strings.Contains(all, want+"\n") {
			t.Errorf("overlays/dra does not contain %s", want)
		}
	}

	// The scheduler's config is the base's with DynamicResources disabled
	// in the profile and gpuMode dra, and nothing else.
	cm, err := c.CoreV1().ConfigMaps("hetsev-system").Get(ctx, "hetsev-scheduler-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkDRASchedulerConfig(t, cm.Data["scheduler-config.yaml"])

	dep, err := c.AppsV1().Deployments("hetsev-system").Get(ctx, "hetsev-scaler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if args := dep.Spec.Template.Spec.Containers[0].Args; !hasArg(args, "--gpu-mode=dra") {
		t.Errorf("hetsev-scaler args %v, want --gpu-mode=dra", args)
	}
	adapterDep, err := c.AppsV1().Deployments("hetsev-system").Get(ctx, "hetsev-metrics-adapter", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if args := adapterDep.Spec.Template.Spec.Containers[0].Args; !hasArg(args, "--gpu-mode=dra") {
		t.Errorf("hetsev-metrics-adapter args %v, want --gpu-mode=dra", args)
	}
	whc, err := c.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "hetsev-scheduler-selection", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if se := whc.Webhooks[0].SideEffects; se == nil || string(*se) != "NoneOnDryRun" {
		t.Errorf("webhook sideEffects %v, want NoneOnDryRun (it creates templates, never on a dry run)", se)
	}

	for _, ac := range []struct {
		user string
		attr authorizationv1.ResourceAttributes
		want bool
	}{
		// hetsev-scheduler allocates claims: status.allocation and
		// reservedFor through resourceclaims/binding in 1.36.
		{schedulerSA, authorizationv1.ResourceAttributes{Verb: "update", Group: "resource.k8s.io", Resource: "resourceclaims", Subresource: "binding", Namespace: "default"}, true},
		{schedulerSA, authorizationv1.ResourceAttributes{Verb: "patch", Group: "resource.k8s.io", Resource: "resourceclaims", Subresource: "status", Namespace: "default"}, true},
		{schedulerSA, authorizationv1.ResourceAttributes{Verb: "watch", Group: "resource.k8s.io", Resource: "resourceclaims"}, true},
		{schedulerSA, authorizationv1.ResourceAttributes{Verb: "list", Group: "resource.k8s.io", Resource: "resourceslices"}, true},
		{schedulerSA, authorizationv1.ResourceAttributes{Verb: "watch", Group: "resource.k8s.io", Resource: "deviceclasses"}, true},
		{schedulerSA, authorizationv1.ResourceAttributes{Verb: "update", Group: "resource.k8s.io", Resource: "resourceclaims", Subresource: "driver", Namespace: "default"}, false},
		{schedulerSA, authorizationv1.ResourceAttributes{Verb: "create", Group: "resource.k8s.io", Resource: "resourceclaimtemplates", Namespace: "default"}, false},
		{schedulerSA, authorizationv1.ResourceAttributes{Verb: "create", Group: "resource.k8s.io", Resource: "resourceslices"}, false},
		// hetsev-scaler keeps templates, never claims.
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "create", Group: "resource.k8s.io", Resource: "resourceclaimtemplates", Namespace: "default"}, true},
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "delete", Group: "resource.k8s.io", Resource: "resourceclaimtemplates", Namespace: "default"}, true},
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "watch", Group: "resource.k8s.io", Resource: "resourceclaimtemplates"}, true},
		// Its free-slot count caches slices and claims in DRA mode; it
		// never writes them.
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "watch", Group: "resource.k8s.io", Resource: "resourceslices"}, true},
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "list", Group: "resource.k8s.io", Resource: "resourceclaims"}, true},
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "watch", Group: "resource.k8s.io", Resource: "resourceclaims"}, true},
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "watch", Group: "resource.k8s.io", Resource: "deviceclasses"}, true},
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "create", Group: "resource.k8s.io", Resource: "deviceclasses"}, false},
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "patch", Group: "resource.k8s.io", Resource: "devicetaintrules"}, true},
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "create", Group: "resource.k8s.io", Resource: "resourceslices"}, false},
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "update", Group: "resource.k8s.io", Resource: "resourceclaims", Namespace: "default"}, false},
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "update", Group: "resource.k8s.io", Resource: "resourceclaims", Subresource: "binding", Namespace: "default"}, false},
		// hetsev-metrics-adapter caches claims and slices to join pods
		// without hetsev.io/gpu-index to their GPU; it never writes them.
		{adapterSA, authorizationv1.ResourceAttributes{Verb: "list", Group: "resource.k8s.io", Resource: "resourceclaims"}, true},
		{adapterSA, authorizationv1.ResourceAttributes{Verb: "watch", Group: "resource.k8s.io", Resource: "resourceclaims"}, true},
		{adapterSA, authorizationv1.ResourceAttributes{Verb: "get", Group: "resource.k8s.io", Resource: "resourceclaims", Namespace: "default"}, true},
		{adapterSA, authorizationv1.ResourceAttributes{Verb: "list", Group: "resource.k8s.io", Resource: "resourceslices"}, true},
		{adapterSA, authorizationv1.ResourceAttributes{Verb: "watch", Group: "resource.k8s.io", Resource: "resourceslices"}, true},
		{adapterSA, authorizationv1.ResourceAttributes{Verb: "update", Group: "resource.k8s.io", Resource: "resourceclaims", Subresource: "status", Namespace: "default"}, false},
		{adapterSA, authorizationv1.ResourceAttributes{Verb: "create", Group: "resource.k8s.io", Resource: "resourceslices"}, false},
		{adapterSA, authorizationv1.ResourceAttributes{Verb: "list", Group: "resource.k8s.io", Resource: "resourceclaimtemplates"}, false},
	} {
		sar, err := c.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User: ac.user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:hetsev-system", "system:authenticated"},
				ResourceAttributes: &ac.attr,
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sar.Status.Allowed != ac.want {
			t.Errorf("%s %s %s/%s %s: allowed %v, want %v", ac.user, ac.attr.Verb, ac.attr.Group, ac.attr.Resource, ac.attr.Subresource, sar.Status.Allowed, ac.want)
		}
	}

	// hetsev-scaler in DRA mode, as its service account.
	asScaler, err := cp.KubeconfigAs(scalerSA)
	if err != nil {
		t.Fatal(err)
	}
	scaler, err := cluster.StartScaler(ctx, cp, "--kubeconfig="+asScaler, "--gpu-mode=dra",
		fmt.Sprintf("--webhook-bind-address=127.0.0.1:%d", port), "--webhook-cert-hosts=127.0.0.1", "--webhook-namespace=hetsev-system")
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, scaler)

	// Its Deployments' templates, accepted by the API server (capacity
	// request, CEL selector), claimed by the pod templates.
	objs, err := cluster.ReadManifests(filepath.Join(cluster.RepoRoot(), "manifests", "examples", "modelservice-resnet50.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Apply(ctx, "default", objs); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"resnet50-t4", "resnet50-v100-32gb"} {
		waitFor(ctx, t, 60*time.Second, "resourceclaimtemplate and deployment "+name, func(ctx context.Context) (bool, error) {
			_, err := c.ResourceV1().ResourceClaimTemplates("default").Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			if err != nil {
				return false, err
			}
			_, err = c.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
			return err == nil, nil
		})
		tpl, _ := c.ResourceV1().ResourceClaimTemplates("default").Get(ctx, name, metav1.GetOptions{})
		if mib, ok := gpuinventory.ClaimMemoryMiB(tpl.Spec.Spec); !ok || mib <= 0 {
			t.Errorf("template %s: no GPU memory request in %+v", name, tpl.Spec.Spec)
		}
		d, _ := c.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
		ps := d.Spec.Template.Spec
		if len(ps.ResourceClaims) != 1 || *ps.ResourceClaims[0].ResourceClaimTemplateName != name || len(ps.Containers[0].Resources.Claims) != 1 {
			t.Errorf("deployment %s: resourceClaims %+v, container claims %+v", name, ps.ResourceClaims, ps.Containers[0].Resources.Claims)
		}
		if ps.RuntimeClassName != nil || gpuinventory.VisibleDevicesIndex(ps.Containers[0].Env) >= 0 {
			t.Errorf("deployment %s: runtimeClassName %v, env %+v in DRA mode", name, ps.RuntimeClassName, ps.Containers[0].Env)
		}
	}

	// The webhook: once the API server has its caBundle, an annotated pod
	// gets the claim from the namespace's template of its GPU memory.
	waitFor(ctx, t, 60*time.Second, "the webhook to give a dry-run pod a claim", func(ctx context.Context) (bool, error) {
		p, err := c.CoreV1().Pods("default").Create(ctx, userPod("probe", true, ""), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && len(p.Spec.ResourceClaims) == 1, nil
	})
	if _, err := c.ResourceV1().ResourceClaimTemplates("default").Get(ctx, webhook.ClaimTemplateName(2048), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a dry run created template %s: %v", webhook.ClaimTemplateName(2048), err)
	}
	p, err := c.CoreV1().Pods("default").Create(ctx, userPod("annotated", true, ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.SchedulerName != v1alpha1.SchedulerName || len(p.Spec.ResourceClaims) != 1 || *p.Spec.ResourceClaims[0].ResourceClaimTemplateName != webhook.ClaimTemplateName(2048) ||
		len(p.Spec.Containers[0].Resources.Claims) != 1 || p.Spec.RuntimeClassName != nil {
		t.Errorf("annotated pod: scheduler %q, resourceClaims %+v, container claims %+v, runtimeClassName %v",
			p.Spec.SchedulerName, p.Spec.ResourceClaims, p.Spec.Containers[0].Resources.Claims, p.Spec.RuntimeClassName)
	}
	tpl, err := c.ResourceV1().ResourceClaimTemplates("default").Get(ctx, webhook.ClaimTemplateName(2048), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the webhook's template: %v", err)
	}
	if mib, ok := gpuinventory.ClaimMemoryMiB(tpl.Spec.Spec); !ok || mib != 2048 {
		t.Errorf("the webhook's template requests %d MiB (%v), want 2048", mib, ok)
	}

	// The match conditions are DRA mode's: a pod shaped for annotation mode
	// (runtime class, NVIDIA_VISIBLE_DEVICES, the pool) lacks the claim, so
	// the webhook is called and gives it one.
	if err := cluster.CreateNvidiaRuntimeClass(ctx, c); err != nil {
		t.Fatal(err)
	}
	p, err = c.CoreV1().Pods("default").Create(ctx, annotationModePod("annotation-shaped"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil || !hasPodClaim(p) {
		t.Errorf("annotation-mode pod in DRA mode: %v, resourceClaims %+v: want the webhook's claim", err, p.Spec.ResourceClaims)
	}

	// The policy refuses a hetsev GPU pod without the claim that bypassed
	// the webhook: one created in hetsev-system, which the webhook's
	// namespace selector leaves out and the policy does not exempt.
	inSystem := func(name string) *v1.Pod {
		p := annotationModePod(name)
		p.Namespace = cluster.SystemNamespace
		// hetsev-system enforces the restricted Pod Security Standard.
		p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsNonRoot: ptrTo(true), SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}}
		p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AllowPrivilegeEscalation: ptrTo(false), Capabilities: &v1.Capabilities{Drop: []v1.Capability{"ALL"}}}
		return p
	}
	waitFor(ctx, t, 30*time.Second, "the admission policy to refuse a hetsev pod without a claim", func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().Pods(cluster.SystemNamespace).Create(ctx, inSystem("probe-no-claim"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil, nil
	})
	_, err = c.CoreV1().Pods(cluster.SystemNamespace).Create(ctx, inSystem("no-claim"), metav1.CreateOptions{})
	expectDenied(t, "a hetsev GPU pod without a claim", err, "has no pod claim named gpu")

	// With the webhook down (failurePolicy Fail), a pod that has what DRA
	// mode needs is admitted without calling it; one that lacks the claim
	// is refused, rather than run without its GPU.
	scaler.Stop(5 * time.Second)
	optedIn := userPod("opted-in-webhook-down", true, v1alpha1.SchedulerName)
	optedIn.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: v1alpha1.PodClaimName, ResourceClaimTemplateName: ptrTo(webhook.ClaimTemplateName(2048))}}
	optedIn.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: v1alpha1.PodClaimName}}
	optedIn.Spec.NodeSelector[v1alpha1.LabelGPUPool] = v1alpha1.GPUPoolValue
	optedIn.Spec.Tolerations = []v1.Toleration{gpuinventory.GPUPoolToleration()}
	if _, err := c.CoreV1().Pods("default").Create(ctx, optedIn, metav1.CreateOptions{}); err != nil {
		t.Errorf("a pod with the claim, the scheduler and the pool, the webhook down: %v (the webhook was called for a pod that needs nothing)", err)
	}
	_, err = c.CoreV1().Pods("default").Create(ctx, annotationModePod("no-claim-webhook-down"), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "scheduler-selection.hetsev.io") {
		t.Errorf("a pod without the claim, the webhook down: err = %v, want a failed call to scheduler-selection.hetsev.io", err)
	}

	checkDRAAdapterJoin(ctx, t, cp)
}

// checkDRAAdapterJoin runs hetsev-metrics-adapter with --gpu-mode=dra as
// its service account (the overlay's RBAC only) and reads, through the
// aggregated API, the GPU utilisation of a pod that has no
// hetsev.io/gpu-index, its claim allocated by hand as another scheduler
// would: the value of the GPU whose index attribute the allocated device
// publishes (GPU 1 at 30 %, not GPU 0 at 80 %). DCGM's series come from a
// dcgm-exporter scraped by a real Prometheus.
func checkDRAAdapterJoin(ctx context.Context, t *testing.T, cp *cluster.ControlPlane) {
	t.Helper()
	c := cp.Client
	const node = "dra-gpu-0"
	if _, err := c.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Device names in the reverse order of their indexes: the join must
	// read the attribute.
	publishGPUs(ctx, t, c, node, []draGPU{
		{name: "gpu-a", index: 1, product: "Tesla T4", memory: "16Gi", shared: true},
		{name: "gpu-b", index: 0, product: "Tesla T4", memory: "16Gi", shared: true},
	})
	claim, err := c.ResourceV1().ResourceClaims("default").Create(ctx, &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "upstream-gpu", Namespace: "default"},
		Spec:       claimSpec("4Gi"),
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claim.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
		Request: v1alpha1.ClaimRequestName, Driver: v1alpha1.DRADriver, Pool: node, Device: "gpu-a",
	}}}}
	if _, err := c.ResourceV1().ResourceClaims("default").UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("allocating claim upstream-gpu: %v", err)
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "upstream", Namespace: "default"},
		Spec: v1.PodSpec{
			NodeName:       node,
			ResourceClaims: []v1.PodResourceClaim{{Name: v1alpha1.PodClaimName, ResourceClaimName: &claim.Name}},
			Containers: []v1.Container{{Name: "server", Image: "model-server",
				Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: v1alpha1.PodClaimName}}}}},
		},
	}
	if _, err := c.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// A simulated dcgm-exporter on the node, scraped by a real Prometheus.
	dcgm := serveDCGM(t, node,
		exporters.GPUSample{Index: 0, UUID: "GPU-0", ModelName: "Tesla T4", UtilPercent: 80, FBUsedMiB: 8192, FBFreeMiB: 8192},
		exporters.GPUSample{Index: 1, UUID: "GPU-1", ModelName: "Tesla T4", UtilPercent: 30, FBUsedMiB: 4096, FBFreeMiB: 12288})
	prom, err := cluster.StartPrometheus(ctx, cp.Dir, time.Second, []cluster.PrometheusTarget{dcgm})
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, prom.Process)
	// The overlay's Service selects the Deployment's pods, which do not
	// run here; the adapter started below is reached through an
	// ExternalName Service that StartAdapter creates in its place.
	if err := c.CoreV1().Services(cluster.SystemNamespace).Delete(ctx, cluster.AdapterService, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	kc, err := cp.KubeconfigAs(adapterSA)
	if err != nil {
		t.Fatal(err)
	}
	ad, _, err := cluster.StartAdapter(ctx, cp, cluster.AdapterOptions{
		PrometheusURL: prom.URL, Kubeconfig: kc, ExtraArgs: []string{"--gpu-mode=dra"},
	})
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, ad)
	cm := customMetrics(t, cp.Config)
	var (
		got  float64
		last string
	)
	waitFor(ctx, t, 60*time.Second, "gpu_utilization_percent of pod upstream", func(ctx context.Context) (bool, error) {
		v, err := cm.NamespacedMetrics("default").GetForObject(schema.GroupKind{Kind: "Pod"}, "upstream", adapter.MetricGPUUtilization, labels.Everything())
		if err != nil {
			if err.Error() != last {
				t.Logf("not yet: %v", err)
				last = err.Error()
			}
			return false, nil
		}
		got = v.Value.AsApproximateFloat64()
		return true, nil
	})
	if got != 30 {
		t.Errorf("gpu_utilization_percent of pod upstream = %v, want 30 (its claim's device gpu-a publishes index 1)", got)
	}
}

// annotationModePod is a hetsev GPU pod as annotation mode's webhook
// leaves it (hetsev-scheduler, the runtime class, NVIDIA_VISIBLE_DEVICES
// from the downward API, the GPU pool's node selector and toleration),
// which annotation mode's match conditions skip.
func annotationModePod(name string) *v1.Pod {
	p := userPod(name, true, v1alpha1.SchedulerName)
	rc := gpuinventory.DefaultRuntimeClassName
	p.Spec.RuntimeClassName = &rc
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].Env = []v1.EnvVar{gpuinventory.VisibleDevicesEnv()}
	}
	p.Spec.NodeSelector[v1alpha1.LabelGPUPool] = v1alpha1.GPUPoolValue
	p.Spec.Tolerations = []v1.Toleration{gpuinventory.GPUPoolToleration()}
	return p
}

func hasPodClaim(p *v1.Pod) bool {
	for _, c := range p.Spec.ResourceClaims {
		if c.Name == v1alpha1.PodClaimName {
			return true
		}
	}
	return false
}

// checkDRASchedulerConfig compares the DRA overlay's scheduler config with
// manifests/scheduler-config.yaml: equal once the profile's multiPoint
// (DynamicResources disabled), preBind (HetsevGPUShare) and HetsevGPUShare's
// gpuMode (dra) are taken out, which must be there.
func checkDRASchedulerConfig(t *testing.T, dra string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(cluster.RepoRoot(), "manifests", "scheduler-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var base, got map[string]any
	if err := yaml.Unmarshal(raw, &base); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(dra), &got); err != nil {
		t.Fatalf("the DRA scheduler config: %v", err)
	}
	profile := got["profiles"].([]any)[0].(map[string]any)
	plugins := profile["plugins"].(map[string]any)
	want := map[string]any{"disabled": []any{map[string]any{"name": "DynamicResources"}}}
	if !reflect.DeepEqual(plugins["multiPoint"], want) {
		t.Errorf("profile plugins.multiPoint %v, want %v", plugins["multiPoint"], want)
	}
	delete(plugins, "multiPoint")
	wantPreBind := map[string]any{"enabled": []any{map[string]any{"name": "HetsevGPUShare"}}}
	if !reflect.DeepEqual(plugins["preBind"], wantPreBind) {
		t.Errorf("profile plugins.preBind %v, want %v", plugins["preBind"], wantPreBind)
	}
	delete(plugins, "preBind")
	if !reflect.DeepEqual(plugins["postFilter"], wantPreBind) {
		t.Errorf("profile plugins.postFilter %v, want %v", plugins["postFilter"], wantPreBind)
	}
	delete(plugins, "postFilter")
	found := false
	for _, pc := range profile["pluginConfig"].([]any) {
		pc := pc.(map[string]any)
		if pc["name"] == "HetsevGPUShare" {
			args := pc["args"].(map[string]any)
			found = args["gpuMode"] == v1alpha1.GPUModeDRA
			delete(args, "gpuMode")
		}
	}
	if !found {
		t.Errorf("HetsevGPUShare args lack gpuMode: %s", v1alpha1.GPUModeDRA)
	}
	if !reflect.DeepEqual(base, got) {
		b, _ := yaml.Marshal(base)
		g, _ := yaml.Marshal(got)
		t.Errorf("manifests/dra/scheduler-config.yaml differs from manifests/scheduler-config.yaml beyond DRA mode:\n--- base\n%s\n--- dra\n%s", b, g)
	}
}

func hasArg(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
