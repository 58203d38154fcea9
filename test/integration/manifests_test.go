package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hetsev/hetsev/internal/cluster"
)

const (
	schedulerSA = "system:serviceaccount:hetsev-system:hetsev-scheduler"
	scalerSA    = "system:serviceaccount:hetsev-system:hetsev-scaler"
	adapterSA   = "system:serviceaccount:hetsev-system:hetsev-metrics-adapter"
)

// exampleByAnnotation is the example pod that only the admission webhook
// makes schedulable.
const exampleByAnnotation = "pod-opt-in-by-annotation.yaml"

// applyManifests server-side applies `kustomize build manifests/` with
// strict field validation and returns the applier and what was applied.
// The webhook configuration is then pointed at https://127.0.0.1:webhookPort:
// without kube-proxy the API server would resolve the Service's .svc name
// through the machine's DNS, off loopback.
func applyManifests(ctx context.Context, t *testing.T, cp *cluster.ControlPlane, webhookPort int) (*cluster.Applier, []string) {
	t.Helper()
	return applyKustomization(ctx, t, cp, "manifests", webhookPort)
}

// applyKustomization is applyManifests for the kustomization in dir,
// relative to the repository root (manifests, overlays/dra).
func applyKustomization(ctx context.Context, t *testing.T, cp *cluster.ControlPlane, dir string, webhookPort int) (*cluster.Applier, []string) {
	t.Helper()
	objs, err := cluster.BuildKustomization(filepath.Join(cluster.RepoRoot(), dir))
	if err != nil {
		t.Fatal(err)
	}
	a, err := cluster.NewApplier(cp)
	if err != nil {
		t.Fatal(err)
	}
	applied, err := a.Apply(ctx, "default", objs)
	if err != nil {
		t.Fatalf("applying %s/: %v", dir, err)
	}
	whc, err := cp.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "hetsev-scheduler-selection", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("https://127.0.0.1:%d%s", webhookPort, *whc.Webhooks[0].ClientConfig.Service.Path)
	whc.Webhooks[0].ClientConfig.Service, whc.Webhooks[0].ClientConfig.URL = nil, &url
	if _, err := cp.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Update(ctx, whc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return a, applied
}

// Every object of the kustomize tree and of the examples is accepted by a
// Kubernetes 1.36 API server with strict field validation (server-side
// apply, for real: CRD schemas, CEL in the admission policy, RBAC), and the
// service accounts get what they need and no more.
func TestManifestsApplyToAPIServer(t *testing.T) {
	cp, ctx := controlPlane(t)
	port, err := cluster.FreePort() // nothing listens: the webhook is not under test here
	if err != nil {
		t.Fatal(err)
	}
	a, applied := applyManifests(ctx, t, cp, port)
	t.Logf("applied %d objects from manifests/", len(applied))
	all := strings.Join(applied, "\n")
	for _, want := range []string{
		"Namespace hetsev-system",
		"CustomResourceDefinition modelservices.hetsev.io",
		"ServiceAccount hetsev-system/hetsev-scheduler",
		"ServiceAccount hetsev-system/hetsev-metrics-adapter",
		"ServiceAccount hetsev-system/hetsev-scaler",
		"ConfigMap hetsev-system/hetsev-scheduler-config",
		"Deployment hetsev-system/hetsev-scheduler",
		"Deployment hetsev-system/hetsev-metrics-adapter",
		"Deployment hetsev-system/hetsev-scaler",
		"APIService v1beta2.custom.metrics.k8s.io",
		"Service hetsev-system/hetsev-webhook",
		"MutatingWebhookConfiguration hetsev-scheduler-selection",
		"ValidatingAdmissionPolicy hetsev-gpu-assignment",
		"ValidatingAdmissionPolicyBinding hetsev-gpu-assignment",
	} {
		if !strings.Contains(all, want+"\n") && !strings.HasSuffix(all, want) {
			t.Errorf("manifests/ does not contain %s", want)
		}
	}

	// The examples, in a user's namespace, against the CRD and the policy;
	// the GPU Operator provides the RuntimeClass GPU pods name.
	if err := cluster.CreateNvidiaRuntimeClass(ctx, cp.Client); err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Glob(filepath.Join(cluster.RepoRoot(), "manifests", "examples", "*.yaml"))
	if err != nil || len(examples) < 3 {
		t.Fatalf("examples: %v %v", examples, err)
	}
	for _, f := range examples {
		if filepath.Base(f) == exampleByAnnotation {
			continue // needs the webhook: TestAdmissionOptsInAndProtectsGPUAssignment applies it
		}
		objs, err := cluster.ReadManifests(f)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := a.Apply(ctx, "default", objs)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
		}
		t.Logf("%s: %v", filepath.Base(f), ids)
	}

	// The applier is strict: a misspelt field fails, so the checks above
	// can fail too.
	bad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "typo", "namespace": "default"},
		"date":     map[string]any{"a": "b"},
	}}
	if _, err := a.Apply(ctx, "default", []*unstructured.Unstructured{bad}); err == nil || !strings.Contains(err.Error(), "date") {
		t.Errorf("unknown field accepted: %v", err)
	}

	// Least privilege, as the API server's authorizer decides it.
	for _, c := range []struct {
		user string
		attr authorizationv1.ResourceAttributes
		want bool
	}{
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "patch", Group: "apps", Resource: "deployments", Namespace: "default"}, true},
		// What hetsev-scaler's controller-runtime manager needs: its cache
		// lists and watches ModelServices, their Deployments, and pods and
		// nodes (free GPUs), and its Services in all namespaces; it writes status and
		// core/v1 Events; it holds Lease hetsev-system/hetsev-scaler.
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "watch", Group: "hetsev.io", Resource: "modelservices"}, true},
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "update", Group: "hetsev.io", Resource: "modelservices", Subresource: "status", Namespace: "default"}, true},
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "update", Group: "hetsev.io", Resource: "modelservices", Namespace: "default"}, false},
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "list", Group: "apps", Resource: "deployments"}, true},
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "watch", Group: "apps", Resource: "deployments"}, true},
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods"}, true},
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "watch", Resource: "pods"}, true},
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "list", Resource: "nodes"}, true},
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "watch", Resource: "nodes"}, true},
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "create", Resource: "events", Namespace: "default"}, true},
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "create", Resource: "services", Namespace: "default"}, true},
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "watch", Resource: "services"}, true},
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "delete", Resource: "services", Namespace: "default"}, false},
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "create", Group: "coordination.k8s.io", Resource: "leases", Namespace: "hetsev-system"}, true},
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: "hetsev-system", Name: "hetsev-scaler"}, true},
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: "hetsev-system", Name: "hetsev-scheduler"}, false},
		// A removed GPU type's Deployment, once scaled to 0.
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "delete", Group: "apps", Resource: "deployments", Namespace: "default"}, true},
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Namespace: "hetsev-system", Name: "hetsev-webhook-tls"}, true},
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Namespace: "hetsev-system", Name: "other"}, false},
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "update", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations", Name: "hetsev-scheduler-selection"}, true},
		{scalerSA, authorizationv1.ResourceAttributes{Verb: "update", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations", Name: "istio-sidecar-injector"}, false},
		{schedulerSA, authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Subresource: "binding", Namespace: "default"}, true},
		{schedulerSA, authorizationv1.ResourceAttributes{Verb: "patch", Resource: "pods", Namespace: "default"}, false},
		{schedulerSA, authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Namespace: "default"}, false},
		{adapterSA, authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods", Namespace: "default"}, true},
		{adapterSA, authorizationv1.ResourceAttributes{Verb: "list", Resource: "secrets", Namespace: "default"}, false},
		{adapterSA, authorizationv1.ResourceAttributes{Verb: "watch", Group: "hetsev.io", Resource: "modelservices", Namespace: "default"}, true},
		{adapterSA, authorizationv1.ResourceAttributes{Verb: "update", Group: "hetsev.io", Resource: "modelservices", Namespace: "default"}, false},
	} {
		sar, err := cp.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User: c.user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:hetsev-system", "system:authenticated"},
				ResourceAttributes: &c.attr,
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sar.Status.Allowed != c.want {
			t.Errorf("%s %s %s/%s %s %s: allowed %v, want %v", c.user, c.attr.Verb, c.attr.Group, c.attr.Resource, c.attr.Subresource, c.attr.Name, sar.Status.Allowed, c.want)
		}
	}
}
