package scaler

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	networkingapi "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// routingFixture is a reconciler with the traffic split on, over
// controller-runtime's fake client (server-side apply and managed fields
// included) holding ms and objs. Its Client reads as the manager's cache
// does: a Service, VirtualService or DestinationRule without the label
// hetsev.io/modelservice is not found (RoutingCacheSelector); APIReader
// reads everything.
type routingFixture struct {
	r   *Reconciler
	api client.Client // the API server, uncached
	rec *record.FakeRecorder
	now time.Time
	req reconcile.Request
}

func newRoutingFixture(t *testing.T, ms *v1alpha1.ModelService, objs ...client.Object) *routingFixture {
	t.Helper()
	api := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(append([]client.Object{ms}, objs...)...).
		WithStatusSubresource(&v1alpha1.ModelService{}).WithReturnManagedFields().Build()
	cached := interceptor.NewClient(api, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			switch obj.(type) {
			case *v1.Service, *networkingv1.VirtualService, *networkingv1.DestinationRule:
				if _, ok := obj.GetLabels()[v1alpha1.LabelModelService]; !ok {
					return apierrors.NewNotFound(schema.GroupResource{Resource: "cached"}, key.Name)
				}
			}
			return nil
		},
	})
	f := &routingFixture{
		api: api, rec: record.NewFakeRecorder(100),
		now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
		req: reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ms.Namespace, Name: ms.Name}},
	}
	f.r = &Reconciler{
		Client: cached, APIReader: api, Metrics: noMetrics{}, Catalog: defaultCatalog(t), Recorder: f.rec,
		Now: func() time.Time { return f.now }, TrafficSplit: true, Defaults: wholeGPUDefaults(),
	}
	return f
}

// reconcile runs a reconcile, gives the GPU types' Deployments ready
// instances when they have none (one T4, two V100s: without metrics the
// decision holds the replicas) and reconciles again, between decisions,
// which splits traffic by them.
func (f *routingFixture) reconcile(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if _, err := f.r.Reconcile(ctx, f.req); err != nil {
		t.Fatal(err)
	}
	for typ, n := range map[string]int32{"T4": 1, "V100-32GB": 2} {
		d := &appsv1.Deployment{}
		if err := f.api.Get(ctx, types.NamespacedName{Namespace: "default", Name: DeploymentName("resnet50", typ)}, d); err != nil {
			t.Fatal(err)
		}
		if replicasOf(d) > 0 {
			continue
		}
		d.Spec.Replicas = ptr(n)
		if err := f.api.Update(ctx, d); err != nil {
			t.Fatal(err)
		}
		d.Status.Replicas, d.Status.ReadyReplicas = n, n
		if err := f.api.Status().Update(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	f.now = f.now.Add(time.Second)
	if _, err := f.r.Reconcile(ctx, f.req); err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(time.Second)
}

func (f *routingFixture) modelService(t *testing.T) *v1alpha1.ModelService {
	t.Helper()
	ms := &v1alpha1.ModelService{}
	if err := f.api.Get(context.Background(), f.req.NamespacedName, ms); err != nil {
		t.Fatal(err)
	}
	return ms
}

func (f *routingFixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func specJSON(t *testing.T, obj client.Object) string {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	s, _ := json.Marshal(map[string]any{"spec": m["spec"], "labels": m["metadata"].(map[string]any)["labels"], "ownerReferences": m["metadata"].(map[string]any)["ownerReferences"]})
	return string(s)
}

func userService() *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "resnet50", Namespace: "default", Labels: map[string]string{"app": "mine"}},
		Spec:       v1.ServiceSpec{Selector: map[string]string{"app": "mine"}, Ports: []v1.ServicePort{{Name: "grpc", Port: 9000, Protocol: v1.ProtocolTCP}}},
	}
}

func userVirtualService() *networkingv1.VirtualService {
	vs := &networkingv1.VirtualService{ObjectMeta: metav1.ObjectMeta{Name: "resnet50", Namespace: "default"}}
	vs.Spec.Hosts = []string{"resnet50.example.com"}
	vs.Spec.Http = []*networkingapi.HTTPRoute{{Name: "mine", Route: []*networkingapi.HTTPRouteDestination{{Destination: &networkingapi.Destination{Host: "mine"}, Weight: 100}}}}
	return vs
}

func userDestinationRule() *networkingv1.DestinationRule {
	dr := &networkingv1.DestinationRule{ObjectMeta: metav1.ObjectMeta{Name: "resnet50", Namespace: "default"}}
	dr.Spec.Host = "mine"
	dr.Spec.Subsets = []*networkingapi.Subset{{Name: "blue", Labels: map[string]string{"app": "mine"}}}
	return dr
}

// A user's Service, VirtualService or DestinationRule named like the
// ModelService, without the ModelService as its controller (none, or
// another one, labelled or not), is left as it was; TrafficSplit is False
// at the ModelService's generation naming it, a Warning event names it, and
// the routes past it are not written.
func TestSplitTrafficLeavesForeignObjectsAlone(t *testing.T) {
	otherOwner := userVirtualService()
	otherOwner.Labels = map[string]string{v1alpha1.LabelModelService: "resnet50"}
	isController := true
	otherOwner.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "router", UID: "other", Controller: &isController}}
	for _, c := range []struct {
		obj    client.Object
		reason string
		names  string
		absent []client.Object // not written past it
	}{
		{userService(), "ServiceNotControlled", "service default/resnet50", []client.Object{&networkingv1.VirtualService{}, &networkingv1.DestinationRule{}}},
		{userDestinationRule(), "DestinationRuleNotControlled", "destinationrule default/resnet50", []client.Object{&networkingv1.VirtualService{}}},
		{userVirtualService(), "VirtualServiceNotControlled", "virtualservice default/resnet50", nil},
		{otherOwner, "VirtualServiceNotControlled", "virtualservice default/resnet50 exists and is not controlled by this ModelService (controller Deployment/router)", nil},
	} {
		t.Run(c.reason+"/"+c.names, func(t *testing.T) {
			ms := resnet()
			ms.Generation = 4
			f := newRoutingFixture(t, ms, c.obj)
			key := client.ObjectKeyFromObject(c.obj)
			before := specJSON(t, c.obj)
			f.reconcile(t)

			got := c.obj.DeepCopyObject().(client.Object)
			if err := f.api.Get(context.Background(), key, got); err != nil {
				t.Fatal(err)
			}
			if after := specJSON(t, got); after != before {
				t.Errorf("user's %s changed:\nbefore %s\nafter  %s", c.names, before, after)
			}
			if fm := fieldManagers(got); fm[FieldManager] {
				t.Errorf("user's %s has fields managed by %s: %v", c.names, FieldManager, got.GetManagedFields())
			}
			cond := meta.FindStatusCondition(f.modelService(t).Status.Conditions, v1alpha1.ConditionTrafficSplit)
			if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != c.reason || !strings.Contains(cond.Message, c.names) || cond.ObservedGeneration != 4 {
				t.Errorf("TrafficSplit condition %+v, want False, %s, naming %q, at generation 4", cond, c.reason, c.names)
			}
			warned := 0
			for _, e := range f.events() {
				if strings.HasPrefix(e, "Warning "+c.reason) && strings.Contains(e, c.names) {
					warned++
				}
			}
			if warned != 1 {
				t.Errorf("%d Warning events %s naming %q, want 1 (news only)", warned, c.reason, c.names)
			}
			for _, a := range c.absent {
				if err := f.api.Get(context.Background(), key, a); !apierrors.IsNotFound(err) {
					t.Errorf("%T written past the user's %s: %v", a, c.names, err)
				}
			}
		})
	}
}

func fieldManagers(obj client.Object) map[string]bool {
	out := map[string]bool{}
	for _, m := range obj.GetManagedFields() {
		out[m.Manager] = true
	}
	return out
}

// The ModelService's own Service, VirtualService and DestinationRule are
// created with it as their controller, its label, and hetsev-scaler as
// their field manager; TrafficSplit is True.
func TestSplitTrafficCreatesOwnedRoutes(t *testing.T) {
	ms := resnet()
	f := newRoutingFixture(t, ms)
	f.reconcile(t)
	key := types.NamespacedName{Namespace: "default", Name: "resnet50"}
	for _, obj := range []client.Object{&v1.Service{}, &networkingv1.VirtualService{}, &networkingv1.DestinationRule{}} {
		if err := f.api.Get(context.Background(), key, obj); err != nil {
			t.Fatalf("%T: %v", obj, err)
		}
		if ref := metav1.GetControllerOf(obj); ref == nil || ref.UID != ms.UID || ref.Kind != v1alpha1.Kind {
			t.Errorf("%T: controller %+v, want ModelService %s", obj, ref, ms.Name)
		}
		if obj.GetLabels()[v1alpha1.LabelModelService] != ms.Name {
			t.Errorf("%T: labels %v", obj, obj.GetLabels())
		}
		if fm := fieldManagers(obj); !fm[FieldManager] || len(fm) != 1 {
			t.Errorf("%T: field managers %v, want %s only", obj, fm, FieldManager)
		}
	}
	// One T4 (363 requests/s) beside two V100s (709 each): 20 / 80.
	got := f.modelService(t).Status
	if c := meta.FindStatusCondition(got.Conditions, v1alpha1.ConditionTrafficSplit); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("TrafficSplit condition %+v, want True", c)
	}
	if got.TrafficWeights["T4"] != 20 || got.TrafficWeights["V100-32GB"] != 80 {
		t.Errorf("traffic weights %v, want T4 20, V100-32GB 80", got.TrafficWeights)
	}
}

// An edit of the ModelService's own Service, VirtualService or
// DestinationRule (a field the scaler sets) is reverted by the next
// reconcile, by a server-side apply of hetsev-scaler.
func TestSplitTrafficRestoresEditedRoutes(t *testing.T) {
	ctx := context.Background()
	ms := resnet()
	f := newRoutingFixture(t, ms)
	f.reconcile(t)
	key := types.NamespacedName{Namespace: "default", Name: "resnet50"}
	want := map[string]string{}
	objs := []client.Object{&v1.Service{}, &networkingv1.VirtualService{}, &networkingv1.DestinationRule{}}
	for _, obj := range objs {
		if err := f.api.Get(ctx, key, obj); err != nil {
			t.Fatal(err)
		}
		want[typeName(obj)] = specJSON(t, obj)
		switch o := obj.(type) {
		case *v1.Service:
			o.Spec.Selector = map[string]string{"app": "elsewhere"}
		case *networkingv1.VirtualService:
			o.Spec.Http[0].Route[0].Weight, o.Spec.Http[0].Route[1].Weight = 50, 50
		case *networkingv1.DestinationRule:
			o.Spec.Subsets[0].Labels = map[string]string{"app": "elsewhere"}
		}
		if err := f.api.Update(ctx, obj, client.FieldOwner("kubectl-edit")); err != nil {
			t.Fatal(err)
		}
		if specJSON(t, obj) == want[typeName(obj)] {
			t.Fatalf("%T: the edit changed nothing", obj)
		}
	}
	f.reconcile(t)
	for _, obj := range objs {
		if err := f.api.Get(ctx, key, obj); err != nil {
			t.Fatal(err)
		}
		if got := specJSON(t, obj); got != want[typeName(obj)] {
			t.Errorf("%T not restored:\ngot  %s\nwant %s", obj, got, want[typeName(obj)])
		}
		applied := false
		for _, m := range obj.GetManagedFields() {
			applied = applied || (m.Manager == FieldManager && m.Operation == metav1.ManagedFieldsOperationApply)
		}
		if !applied {
			t.Errorf("%T: no server-side apply by %s: %v", obj, FieldManager, obj.GetManagedFields())
		}
	}
}

func typeName(obj client.Object) string { return fmt.Sprintf("%T", obj) }

// A change of spec.servicePort or spec.protocol moves the Service's one
// port, named and with the appProtocol of the protocol; the old port goes.
func TestServiceFollowsPortAndProtocol(t *testing.T) {
	ctx := context.Background()
	f := newRoutingFixture(t, resnet())
	f.reconcile(t)
	key := types.NamespacedName{Namespace: "default", Name: "resnet50"}
	ports := func() []v1.ServicePort {
		t.Helper()
		svc := &v1.Service{}
		if err := f.api.Get(ctx, key, svc); err != nil {
			t.Fatal(err)
		}
		return svc.Spec.Ports
	}
	if got := ports(); len(got) != 1 || got[0].Name != "http" || got[0].Port != DefaultServicePort || got[0].AppProtocol == nil || *got[0].AppProtocol != "http" {
		t.Fatalf("ports %+v, want one http port %d", got, DefaultServicePort)
	}
	ms := f.modelService(t)
	ms.Spec.ServicePort, ms.Spec.Protocol = 8001, v1alpha1.ProtocolGRPC
	ms.Generation++ // the fake API server keeps generations as written
	if err := f.api.Update(ctx, ms); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t)
	got := ports()
	if len(got) != 1 || got[0].Name != "grpc" || got[0].Port != 8001 || got[0].TargetPort.IntValue() != 8001 || got[0].AppProtocol == nil || *got[0].AppProtocol != "grpc" {
		t.Errorf("ports %+v, want only grpc 8001 -> 8001 with appProtocol grpc", got)
	}
}

// TestVirtualServiceHostUsesTheClusterDomain: the VirtualService's host is
// the ModelService's Service in --cluster-domain, cluster.local by
// default.
func TestVirtualServiceHostUsesTheClusterDomain(t *testing.T) {
	for domain, want := range map[string]string{"": "resnet50.default.svc.cluster.local", "corp.internal": "resnet50.default.svc.corp.internal"} {
		f := newRoutingFixture(t, resnet())
		f.r.ClusterDomain = domain
		f.reconcile(t)
		vs := &networkingv1.VirtualService{}
		if err := f.api.Get(context.Background(), f.req.NamespacedName, vs); err != nil {
			t.Fatal(err)
		}
		if len(vs.Spec.Hosts) != 1 || vs.Spec.Hosts[0] != want {
			t.Errorf("cluster domain %q: hosts %v, want [%s]", domain, vs.Spec.Hosts, want)
		}
	}
	o := NewOptions()
	o.ClusterDomain = "Not_A_Domain"
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--cluster-domain") {
		t.Errorf("--cluster-domain=Not_A_Domain: %v, want an error naming the flag", err)
	}
	o = NewOptions()
	o.StatusRefresh = 0
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--status-refresh") {
		t.Errorf("--status-refresh=0: %v, want an error naming the flag", err)
	}
}
