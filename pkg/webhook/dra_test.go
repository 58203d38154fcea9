package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/dra"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// reviewBy sends p through the HTTP handler of m as the API server would
// (dryRun as given) and returns the response and, when allowed, the pod
// after its patch.
func reviewBy(t *testing.T, m PodMutator, p *v1.Pod, dryRun bool) (*admissionv1.AdmissionResponse, *v1.Pod) {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	in := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: types.UID("u-1"), Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Namespace: p.Namespace, Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}, DryRun: &dryRun},
	}
	body, _ := json.Marshal(in)
	rec := httptest.NewRecorder()
	NewHandler(m).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body)))
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); rec.Code != http.StatusOK || err != nil || out.Response == nil {
		t.Fatalf("HTTP %d %s: %v", rec.Code, rec.Body, err)
	}
	if !out.Response.Allowed || out.Response.Patch == nil {
		return out.Response, p
	}
	patch, err := jsonpatch.DecodePatch(out.Response.Patch)
	if err != nil {
		t.Fatalf("patch %s: %v", out.Response.Patch, err)
	}
	patched, err := patch.Apply(raw)
	if err != nil {
		t.Fatalf("applying %s: %v", out.Response.Patch, err)
	}
	var got v1.Pod
	if err := json.Unmarshal(patched, &got); err != nil {
		t.Fatal(err)
	}
	return out.Response, &got
}

// draPod is a pod annotated for a GPU share of mem, with two containers (the
// second already claiming something else) and an init container.
func draPod(mem string) *v1.Pod {
	p := pod(true, "", nil, nil)
	if mem != "" {
		p.Annotations[v1alpha1.AnnotationGPUMemory] = mem
	}
	p.Spec.InitContainers = []v1.Container{{Name: "fetch-model", Image: "x"}}
	p.Spec.Containers[1].Resources.Claims = []v1.ResourceClaim{{Name: "scratch"}}
	other := "scratch-template"
	p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "scratch", ResourceClaimTemplateName: &other}}
	return p
}

// In DRA mode an annotated pod is referred to the namespace's template of
// its GPU memory, which the webhook creates when missing, and claims it in
// every container; it gets no NVIDIA_VISIBLE_DEVICES and no runtime class.
func TestDRAModeGivesAnnotatedPodAClaim(t *testing.T) {
	kube := fake.NewClientset()
	m := PodMutator{RuntimeClassName: gpuinventory.DefaultRuntimeClassName, GPUMode: v1alpha1.GPUModeDRA, Templates: ClaimTemplates{Client: kube}}
	resp, got := reviewBy(t, m, draPod("3Gi"), false)
	if !resp.Allowed || resp.Patch == nil {
		t.Fatalf("response %+v", resp)
	}
	if got.Spec.SchedulerName != v1alpha1.SchedulerName {
		t.Errorf("schedulerName %q", got.Spec.SchedulerName)
	}
	rc := got.Spec.ResourceClaims
	if len(rc) != 2 || rc[0].Name != "scratch" || rc[1].Name != v1alpha1.PodClaimName || rc[1].ResourceClaimTemplateName == nil || *rc[1].ResourceClaimTemplateName != "hetsev-gpu-3072mi" {
		t.Errorf("spec.resourceClaims %+v, want the pod's scratch and %s from hetsev-gpu-3072mi", rc, v1alpha1.PodClaimName)
	}
	for _, c := range got.Spec.Containers {
		if n := len(c.Resources.Claims); n == 0 || c.Resources.Claims[n-1].Name != v1alpha1.PodClaimName {
			t.Errorf("container %s: resources.claims %+v, want %s", c.Name, c.Resources.Claims, v1alpha1.PodClaimName)
		}
	}
	if len(got.Spec.Containers[1].Resources.Claims) != 2 {
		t.Errorf("the claim container b had was lost: %+v", got.Spec.Containers[1].Resources.Claims)
	}
	if len(got.Spec.InitContainers[0].Resources.Claims) != 0 {
		t.Errorf("init container claims %+v: it gets no GPU", got.Spec.InitContainers[0].Resources.Claims)
	}
	for _, c := range append(append([]v1.Container{}, got.Spec.InitContainers...), got.Spec.Containers...) {
		if gpuinventory.VisibleDevicesIndex(c.Env) >= 0 {
			t.Errorf("container %s: %s set in DRA mode", c.Name, gpuinventory.EnvVisibleDevices)
		}
	}
	if got.Spec.RuntimeClassName != nil {
		t.Errorf("runtimeClassName %q in DRA mode", *got.Spec.RuntimeClassName)
	}
	tpl, err := kube.ResourceV1().ResourceClaimTemplates("ns").Get(context.Background(), "hetsev-gpu-3072mi", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("template not created: %v", err)
	}
	ex := tpl.Spec.Spec.Devices.Requests[0].Exactly
	if mem := ex.Capacity.Requests[v1alpha1.DRAMemoryCapacity]; ex.DeviceClassName != v1alpha1.DeviceClassName || mem.Value() != 3<<30 {
		t.Errorf("template requests %v of class %s", ex.Capacity.Requests, ex.DeviceClassName)
	}

	// A second pod of that size shares the template; a reinvocation
	// (already claimed) changes nothing.
	if resp, _ := reviewBy(t, m, draPod("3072Mi"), false); !resp.Allowed {
		t.Errorf("second pod refused: %+v", resp.Result)
	}
	if resp, _ := reviewBy(t, m, got, false); !resp.Allowed || resp.Patch != nil {
		t.Errorf("reinvocation on the patched pod: allowed %v, patch %s", resp.Allowed, resp.Patch)
	}
	if list, _ := kube.ResourceV1().ResourceClaimTemplates("ns").List(context.Background(), metav1.ListOptions{}); len(list.Items) != 1 {
		t.Errorf("%d templates, want 1", len(list.Items))
	}
}

// A pod whose GPU memory cannot be read is refused with the annotation's
// name; a dry run creates no template; a pod with its own claim named
// "gpu" keeps it; a hand-made template of the name that requests other
// memory refuses the pod rather than give it that.
func TestDRAModeRefusesOrLeavesAlone(t *testing.T) {
	kube := fake.NewClientset()
	m := PodMutator{GPUMode: v1alpha1.GPUModeDRA, Templates: ClaimTemplates{Client: kube}}
	for _, mem := range []string{"", "lots", "-1Gi"} {
		resp, _ := reviewBy(t, m, draPod(mem), false)
		if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusBadRequest || !strings.Contains(resp.Result.Message, v1alpha1.AnnotationGPUMemory) {
			t.Errorf("gpu-memory %q: %+v, want a refusal naming %s", mem, resp.Result, v1alpha1.AnnotationGPUMemory)
		}
	}

	resp, got := reviewBy(t, m, draPod("1Gi"), true)
	if !resp.Allowed || len(got.Spec.ResourceClaims) != 2 {
		t.Errorf("dry run: allowed %v, claims %+v", resp.Allowed, got.Spec.ResourceClaims)
	}
	if list, _ := kube.ResourceV1().ResourceClaimTemplates("ns").List(context.Background(), metav1.ListOptions{}); len(list.Items) != 0 {
		t.Errorf("dry run created %d templates", len(list.Items))
	}

	own := draPod("1Gi")
	mine := "my-gpu"
	own.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: v1alpha1.PodClaimName, ResourceClaimTemplateName: &mine}}
	resp, got = reviewBy(t, m, own, false)
	if !resp.Allowed || got.Spec.SchedulerName != v1alpha1.SchedulerName || len(got.Spec.ResourceClaims) != 1 || *got.Spec.ResourceClaims[0].ResourceClaimTemplateName != mine {
		t.Errorf("pod with its own claim: allowed %v, scheduler %q, claims %+v", resp.Allowed, got.Spec.SchedulerName, got.Spec.ResourceClaims)
	}

	odd := desiredNamespaceTemplate("ns", 4096, dra.NVIDIA)
	odd.Name = ClaimTemplateName(2048)
	if _, err := kube.ResourceV1().ResourceClaimTemplates("ns").Create(context.Background(), odd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	resp, _ = reviewBy(t, m, draPod("2Gi"), false)
	if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusInternalServerError || !strings.Contains(resp.Result.Message, "does not request 2048 MiB") {
		t.Errorf("template of the name requesting 4096 MiB: %+v, want a refusal that says so", resp.Result)
	}
}

// Under HAMi's profile the webhook's templates request the profile's
// cores beside the memory, and a template of the name without them (one
// written for NVIDIA's driver) is refused, not used.
func TestDRATemplatesRequestTheDriversCapacities(t *testing.T) {
	hami, err := dra.Profile(dra.ProfileHAMi)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	kube := fake.NewClientset()
	ct := ClaimTemplates{Client: kube, Driver: hami}
	if err := ct.Ensure(ctx, "ns", 2048); err != nil {
		t.Fatal(err)
	}
	tpl, err := kube.ResourceV1().ResourceClaimTemplates("ns").Get(ctx, ClaimTemplateName(2048), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reqs := tpl.Spec.Spec.Devices.Requests[0].Exactly.Capacity.Requests
	if cores, ok := reqs["cores"]; !ok || !cores.IsZero() || len(reqs) != 2 {
		t.Errorf("template requests %v, want memory and cores 0", reqs)
	}
	if _, err := kube.ResourceV1().ResourceClaimTemplates("ns").Create(ctx, desiredNamespaceTemplate("ns", 4096, dra.NVIDIA), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := ct.Ensure(ctx, "ns", 4096); err == nil || !strings.Contains(err.Error(), "claim requests of DRA driver "+dra.DriverHAMi) {
		t.Errorf("a template without the cores request: %v, want a refusal naming the driver", err)
	}
}
