package integration

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/yaml"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/scaler"
)

// A ModelService written without the fields added to v1alpha1 since
// (protocol, modelScope, overrides) reconciles as before on a real API
// server: one Deployment whose pods carry no model scope (their identity
// is the namespace's), and a Service on port 8000 named http. A change of
// servicePort and protocol then leaves the Service with the new port
// only.
func TestScalerReconcilesModelServiceWithoutNewFields(t *testing.T) {
	b := newReconcileBed(t)
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(`
apiVersion: hetsev.io/v1alpha1
kind: ModelService
metadata: {name: legacy, namespace: default}
spec:
  model: legacy
  slo: {responseTimeMs: 400, serviceLevel: 0.98}
  batchSize: 8
  profiles:
  - {gpuType: T4, throughputRPS: 363, latencyMs: 22.41, gpuMemory: 2Gi}
  template:
    spec:
      containers:
      - {name: server, image: "triton:1"}
`), &u.Object); err != nil {
		t.Fatal(err)
	}
	if err := b.c.Create(b.ctx, u); err != nil {
		t.Fatal(err)
	}
	r := b.reconciler(record.NewFakeRecorder(100))
	r.TrafficSplit = true // the Service is written before the routes, which need Istio's CRDs
	b.reconcile(t, r, "legacy")
	d, ok := b.deployment(t, scaler.DeploymentName("legacy", "T4"))
	if !ok {
		t.Fatal("no T4 deployment")
	}
	if a := d.Spec.Template.Annotations; a[v1alpha1.AnnotationModel] != "legacy" || a[v1alpha1.AnnotationModelScope] != "" {
		t.Errorf("pod annotations %v, want model legacy and no model scope", a)
	}
	ports := func() []v1.ServicePort {
		t.Helper()
		svc := &v1.Service{}
		if err := b.c.Get(b.ctx, types.NamespacedName{Namespace: "default", Name: "legacy"}, svc); err != nil {
			t.Fatal(err)
		}
		return svc.Spec.Ports
	}
	if p := ports(); len(p) != 1 || p[0].Name != "http" || p[0].Port != 8000 {
		t.Fatalf("service ports %+v, want one http port 8000", p)
	}

	ms := b.get(t, "legacy")
	ms.Spec.ServicePort, ms.Spec.Protocol = 8001, v1alpha1.ProtocolGRPC
	if err := b.c.Update(b.ctx, ms); err != nil {
		t.Fatal(err)
	}
	b.now = b.now.Add(time.Second)
	b.reconcile(t, r, "legacy")
	if p := ports(); len(p) != 1 || p[0].Name != "grpc" || p[0].Port != 8001 || p[0].TargetPort.IntValue() != 8001 || p[0].AppProtocol == nil || *p[0].AppProtocol != "grpc" {
		t.Errorf("service ports %+v, want only grpc 8001 -> 8001 with appProtocol grpc", p)
	}
}
