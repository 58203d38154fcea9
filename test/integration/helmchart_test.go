package integration

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/internal/helmchart"
)

// certManagerCRDs stands in for cert-manager's and the Prometheus
// Operator's CRDs: the kinds the chart renders with certificates.mode
// certManager and with monitoring on, served without a schema
// (cert-manager validates its objects with its own webhook; the Prometheus
// Operator's schemas are not hetsev's to check).
func certManagerCRDs() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, k := range []struct{ group, kind, plural string }{
		{"cert-manager.io", "Certificate", "certificates"}, {"cert-manager.io", "Issuer", "issuers"},
		{"monitoring.coreos.com", "PodMonitor", "podmonitors"}, {"monitoring.coreos.com", "PrometheusRule", "prometheusrules"},
	} {
		out = append(out, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": k.plural + "." + k.group},
			"spec": map[string]any{
				"group": k.group, "scope": "Namespaced",
				"names": map[string]any{"kind": k.kind, "plural": k.plural, "singular": strings.ToLower(k.kind), "listKind": k.kind + "List"},
				"versions": []any{map[string]any{
					"name": "v1", "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
				}},
			},
		}})
	}
	return out
}

// The chart's objects, rendered with the default values and with every
// value set (ci/all-values.yaml: namespace gpu-serving, gpuMode dra,
// cert-manager, the Prometheus backend, PDBs, priority classes), are
// accepted by a Kubernetes 1.36 API server with strict field validation,
// and the service accounts of the release in gpu-serving get their
// permissions in that namespace.
func TestHelmChartAppliesToAPIServer(t *testing.T) {
	cp, ctx := controlPlane(t)
	ch, err := helmchart.Load(filepath.Join(cluster.RepoRoot(), helmchart.Dir))
	if err != nil {
		t.Fatal(err)
	}
	all, err := helmchart.ReadValues(filepath.Join(cluster.RepoRoot(), helmchart.Dir, "ci", "all-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := cluster.NewApplier(cp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Apply(ctx, "default", certManagerCRDs()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		values map[string]any
		want   []string
	}{
		{"defaults", nil, []string{
			"Namespace hetsev-system",
			"CustomResourceDefinition modelservices.hetsev.io",
			"ConfigMap hetsev-system/hetsev-scheduler-config",
			"Deployment hetsev-system/hetsev-scheduler",
			"Deployment hetsev-system/hetsev-metrics-adapter",
			"Deployment hetsev-system/hetsev-scaler",
			"APIService v1beta2.custom.metrics.k8s.io",
			"APIService v1beta1.custom.metrics.k8s.io",
			"MutatingWebhookConfiguration hetsev-scheduler-selection",
			"ValidatingAdmissionPolicy hetsev-gpu-assignment",
		}},
		{"ci/all-values.yaml", all, []string{
			"Namespace gpu-serving",
			"Deployment gpu-serving/hetsev-scaler",
			"ConfigMap gpu-serving/hetsev-gpu-catalog",
			"Certificate gpu-serving/hetsev-ca",
			"Issuer gpu-serving/hetsev-ca",
			"Certificate gpu-serving/hetsev-webhook-serving-cert",
			"Certificate gpu-serving/hetsev-metrics-adapter-serving-cert",
			"DeviceClass shared-gpu.hetsev.io",
			"ClusterRoleBinding hetsev-scaler-dra",
			"PodDisruptionBudget gpu-serving/hetsev-scheduler",
			"PodDisruptionBudget gpu-serving/hetsev-metrics-adapter",
			"PodDisruptionBudget gpu-serving/hetsev-scaler",
			"ValidatingAdmissionPolicy hetsev-gpu-assignment",
			"PodMonitor gpu-serving/hetsev-scheduler",
			"PodMonitor gpu-serving/hetsev-metrics-adapter",
			"PodMonitor gpu-serving/hetsev-scaler",
			"PrometheusRule gpu-serving/hetsev",
			"ConfigMap gpu-serving/hetsev-grafana-dashboard",
			"ClusterRoleBinding hetsev-metrics-reader",
		}},
	} {
		objs, err := helmchart.Render(ch, c.values)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		applied, err := a.Apply(ctx, "default", objs)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		t.Logf("%s: applied %d objects", c.name, len(applied))
		got := strings.Join(applied, "\n") + "\n"
		for _, w := range c.want {
			if !strings.Contains(got, w+"\n") {
				t.Errorf("%s: %s not applied", c.name, w)
			}
		}
	}

	// The release in gpu-serving: its service accounts, as the API server's
	// authorizer decides.
	const ns = "gpu-serving"
	scheduler, scaler := "system:serviceaccount:"+ns+":hetsev-scheduler", "system:serviceaccount:"+ns+":hetsev-scaler"
	for _, c := range []struct {
		user string
		attr authorizationv1.ResourceAttributes
		want bool
	}{
		{scaler, authorizationv1.ResourceAttributes{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: ns, Name: "hetsev-scaler"}, true},
		{scaler, authorizationv1.ResourceAttributes{Verb: "create", Group: "resource.k8s.io", Resource: "resourceclaimtemplates", Namespace: "default"}, true},
		// cert-manager keeps the webhook's certificate: no Secret access.
		{scaler, authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Namespace: ns, Name: "hetsev-webhook-tls"}, false},
		{scheduler, authorizationv1.ResourceAttributes{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: ns, Name: "hetsev-scheduler"}, true},
		{scheduler, authorizationv1.ResourceAttributes{Verb: "update", Group: "resource.k8s.io", Resource: "resourceclaims", Subresource: "status", Namespace: "default"}, true},
	} {
		sar, err := cp.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User: c.user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
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
	checkPolicyScheduler(ctx, t, cp, "system:serviceaccount:"+ns+":hetsev-scheduler")
}

// checkPolicyScheduler checks that the admission policy lets user, the
// release's hetsev-scheduler, write hetsev.io/gpu-index.
func checkPolicyScheduler(ctx context.Context, t *testing.T, cp *cluster.ControlPlane, user string) {
	t.Helper()
	vap, err := cp.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, "hetsev-gpu-assignment", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vap.Spec.Variables {
		if v.Name == "scheduler" {
			if v.Expression != "'"+user+"'" {
				t.Errorf("policy variable scheduler = %s, want '%s'", v.Expression, user)
			}
			return
		}
	}
	t.Error("policy has no variable scheduler")
}
