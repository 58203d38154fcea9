package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
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

// review sends p through the HTTP handler as the API server would and
// returns the response and the pod after applying its patch.
func review(t *testing.T, p *v1.Pod) (*admissionv1.AdmissionResponse, *v1.Pod) {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	in := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: types.UID("u-1"), Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Namespace: p.Namespace, Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}},
	}
	body, _ := json.Marshal(in)
	rec := httptest.NewRecorder()
	NewHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body)))
	if rec.Code != http.StatusOK {
		t.Fatalf("HTTP %d: %s", rec.Code, rec.Body)
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
		t.Fatalf("response %s: %v", rec.Body, err)
	}
	if out.Response.UID != "u-1" || !out.Response.Allowed {
		t.Fatalf("response %+v", out.Response)
	}
	if out.Response.Patch == nil {
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

func TestOtherPodsAreLeftAlone(t *testing.T) {
	cases := map[string]*v1.Pod{
		"no hetsev.io/model":     pod(false, DefaultSchedulerName, nil),
		"names another schedule": pod(true, "volcano", nil),
		"already hetsev":         pod(true, v1alpha1.SchedulerName, nil),
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
		NewHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, bytes.NewBufferString(body)))
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
