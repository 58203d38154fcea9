package webhook

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"

	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

func pod(annotated bool, scheduler string, env ...[]v1.EnvVar) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: v1.PodSpec{SchedulerName: scheduler}}
	if annotated {
		p.Annotations = map[string]string{v1alpha1.AnnotationModel: "resnet50"}
	}
	for i, e := range env {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: string(rune('a' + i)), Image: "x", Env: e})
	}
	return p
}

// review sends p through the HTTP handler (runtime class
// gpuinventory.DefaultRuntimeClassName) as the API server would and returns
// the response and the pod after applying its patch.
func review(t *testing.T, p *v1.Pod) (*admissionv1.AdmissionResponse, *v1.Pod) {
	t.Helper()
	return reviewWith(t, p, gpuinventory.DefaultRuntimeClassName)
}

// reviewWith is review with the webhook's runtime class runtimeClass; the
// response must allow the pod.
func reviewWith(t *testing.T, p *v1.Pod, runtimeClass string) (*admissionv1.AdmissionResponse, *v1.Pod) {
	t.Helper()
	resp, got := reviewBy(t, PodMutator{RuntimeClassName: runtimeClass}, p, false)
	if resp.UID != "u-1" || !resp.Allowed {
		t.Fatalf("response %+v", resp)
	}
	return resp, got
}

// review1 answers one admission request as the webhook server does
// (PodMutator, then controller-runtime's completion of the response), without
// HTTP.
func review1(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	r := admission.Request{AdmissionRequest: *req}
	resp := PodMutator{}.Handle(context.Background(), r)
	if err := resp.Complete(r); err != nil {
		panic(err)
	}
	return &resp.AdmissionResponse
}

func TestAnnotatedPodIsOptedIn(t *testing.T) {
	literal := []v1.EnvVar{{Name: "A", Value: "1"}, {Name: gpuinventory.EnvVisibleDevices, Value: "all"}}
	for _, scheduler := range []string{"", DefaultSchedulerName} {
		_, got := review(t, pod(true, scheduler, nil, []v1.EnvVar{{Name: "A", Value: "1"}}, literal))
		if got.Spec.SchedulerName != v1alpha1.SchedulerName {
			t.Errorf("schedulerName %q -> %q, want %s", scheduler, got.Spec.SchedulerName, v1alpha1.SchedulerName)
		}
		c := got.Spec.Containers
		if len(c[0].Env) != 1 || c[0].Env[0].ValueFrom.FieldRef.FieldPath != "metadata.annotations['hetsev.io/gpu-index']" {
			t.Errorf("container without env: %+v", c[0].Env)
		}
		if len(c[1].Env) != 2 || c[1].Env[0].Name != "A" || c[1].Env[1].ValueFrom == nil {
			t.Errorf("container with env: %+v", c[1].Env)
		}
		// Left for the admission policy to refuse with a reason.
		if len(c[2].Env) != 2 || c[2].Env[1].Value != "all" {
			t.Errorf("container setting %s itself was changed: %+v", gpuinventory.EnvVisibleDevices, c[2].Env)
		}
	}
}

// Init containers, native sidecars (restartPolicy Always) included, get
// NVIDIA_VISIBLE_DEVICES like the other containers, also in a pod that
// already names hetsev-scheduler (a sidecar injected after the pod was
// opted in); the pod gets the NVIDIA runtime class unless it names one, and
// none when the webhook's runtime class is empty.
func TestGPUPodsGetVisibleDevicesInEveryContainerAndTheRuntimeClass(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	p := pod(true, v1alpha1.SchedulerName, nil)
	p.Spec.InitContainers = []v1.Container{
		{Name: "fetch-model", Image: "x"},
		{Name: "istio-proxy", Image: "x", RestartPolicy: &always, Env: []v1.EnvVar{{Name: "A", Value: "1"}}},
	}
	resp, got := review(t, p)
	if resp.Patch == nil {
		t.Fatalf("no patch for a hetsev pod whose init containers lack %s", gpuinventory.EnvVisibleDevices)
	}
	for _, c := range append(append([]v1.Container{}, got.Spec.InitContainers...), got.Spec.Containers...) {
		if i := gpuinventory.VisibleDevicesIndex(c.Env); i < 0 || !gpuinventory.IsVisibleDevicesFromGPUIndex(c.Env[i]) {
			t.Errorf("container %s: env %+v, want %s from %s", c.Name, c.Env, gpuinventory.EnvVisibleDevices, gpuinventory.GPUIndexFieldPath)
		}
	}
	if rc := got.Spec.RuntimeClassName; rc == nil || *rc != gpuinventory.DefaultRuntimeClassName {
		t.Errorf("runtimeClassName %v, want %q", rc, gpuinventory.DefaultRuntimeClassName)
	}
	own := "nvidia-legacy"
	p2 := pod(true, "", nil)
	p2.Spec.RuntimeClassName = &own
	if _, got := review(t, p2); *got.Spec.RuntimeClassName != own {
		t.Errorf("runtimeClassName %q the pod named was replaced by %q", own, *got.Spec.RuntimeClassName)
	}
	if _, got := reviewWith(t, pod(true, "", nil), ""); got.Spec.RuntimeClassName != nil || got.Spec.SchedulerName != v1alpha1.SchedulerName {
		t.Errorf("with no runtime class configured: runtimeClassName %v (want none), schedulerName %q", got.Spec.RuntimeClassName, got.Spec.SchedulerName)
	}
}

func TestOtherPodsAreLeftAlone(t *testing.T) {
	done := pod(true, v1alpha1.SchedulerName, []v1.EnvVar{gpuinventory.VisibleDevicesEnv()})
	rc := gpuinventory.DefaultRuntimeClassName
	done.Spec.RuntimeClassName = &rc
	cases := map[string]*v1.Pod{
		"no hetsev.io/model":     pod(false, DefaultSchedulerName, nil),
		"names another schedule": pod(true, "volcano", nil),
		"already opted in":       done,
	}
	for name, p := range cases {
		resp, got := review(t, p)
		if resp.Patch != nil || got.Spec.SchedulerName != p.Spec.SchedulerName {
			t.Errorf("%s: patch %s", name, resp.Patch)
		}
	}
}

func TestBadReviewsAreRefusedNotCrashed(t *testing.T) {
	for _, body := range []string{"", "{", `{"kind":"AdmissionReview"}`} {
		rec := httptest.NewRecorder()
		NewHandler(PodMutator{}).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, bytes.NewBufferString(body)))
		if rec.Code != http.StatusBadRequest {
			t.Errorf("body %q: HTTP %d", body, rec.Code)
		}
	}
	resp := review1(&admissionv1.AdmissionRequest{UID: "u", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Object: runtime.RawExtension{Raw: []byte(`{"spec":7}`)}})
	if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusBadRequest {
		t.Errorf("undecodable pod: %+v", resp)
	}
	// Not a pod (a misconfigured rule): allowed unchanged.
	resp = review1(&admissionv1.AdmissionRequest{UID: "u", Kind: metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}})
	if !resp.Allowed || resp.Patch != nil {
		t.Errorf("deployment: %+v", resp)
	}
}
