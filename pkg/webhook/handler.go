package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Path is where the webhook answers; manifests/admission names it.
const Path = "/mutate-pods"

// maxReviewBytes bounds a request body: the API server caps objects at
// 3 MiB, so a review is a little more than that.
const maxReviewBytes = 4 << 20

// NewHandler returns what the webhook server serves at Path:
// controller-runtime's admission webhook around PodMutator (it decodes the
// AdmissionReview, sets the response's UID and turns the patch operations
// into a JSONPatch), behind a check that keeps hetsev's answers to requests
// that are not reviews: HTTP 405 for a method other than POST and HTTP 400
// for a body that is not an admission.k8s.io/v1 AdmissionReview with a
// request (controller-runtime answers those with HTTP 200 and an error in
// the review). A request without a Content-Type is taken as JSON, as
// before; the API server always sends application/json.
func NewHandler(m PodMutator) http.Handler {
	wh := &admission.Webhook{Handler: m}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST an admission.k8s.io/v1 AdmissionReview", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxReviewBytes))
		if err != nil {
			http.Error(w, "reading body: "+err.Error(), http.StatusBadRequest)
			return
		}
		var review admissionv1.AdmissionReview
		if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
			http.Error(w, fmt.Sprintf("want an admission.k8s.io/v1 AdmissionReview with a request (%v)", err), http.StatusBadRequest)
			return
		}
		if r.Header.Get("Content-Type") == "" {
			r.Header.Set("Content-Type", "application/json")
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		wh.ServeHTTP(w, r)
	})
}
