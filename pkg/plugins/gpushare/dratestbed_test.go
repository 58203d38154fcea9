package gpushare

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	resourceslicetracker "k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/util/assumecache"
	"k8s.io/utils/ptr"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/dra"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// The DRA testbed: DRAGPUShare on kube-scheduler's own SharedDRAManager
// (dynamicresources.NewDRAManager over informers of a fake clientset), as
// the scheduler builds it, so that pending allocations, the allocated
// state and the assume cache behave as in hetsev-scheduler.

// nicDriver and nicClass are a second DRA driver and its DeviceClass: the
// devices of a pod's other claim.
const (
	nicDriver = "nic.example.com"
	nicClass  = "nic.example.com"
)

type draTestbed struct {
	ctx     context.Context
	client  *fake.Clientset
	manager fwk.SharedDRAManager
	plugin  *DRAGPUShare
	h       *draHandle
}

// draHandle is the part of fwk.Handle DRAGPUShare uses; nominated holds
// the pods nominated per node.
type draHandle struct {
	handle
	factory   informers.SharedInformerFactory
	manager   fwk.SharedDRAManager
	nominated map[string][]*v1.Pod
}

func (h *draHandle) SharedInformerFactory() informers.SharedInformerFactory { return h.factory }
func (h *draHandle) SharedDRAManager() fwk.SharedDRAManager                 { return h.manager }
func (h *draHandle) EventRecorder() events.EventRecorderLogger              { return nil }
func (h *draHandle) NominatedPodsForNode(node string) []fwk.PodInfo {
	var out []fwk.PodInfo
	for _, p := range h.nominated[node] {
		pi, err := framework.NewPodInfo(p)
		if err != nil {
			panic(err)
		}
		out = append(out, pi)
	}
	return out
}

// newDRATestbed starts informers and the DRA manager on objs, and the
// plugin with a snapshot of the nodes and bound pods among them.
func newDRATestbed(t *testing.T, objs ...runtime.Object) *draTestbed {
	t.Helper()
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, dra.GateDRAConsumableCapacity, true)
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	t.Cleanup(cancel)
	for _, o := range objs {
		if m, ok := o.(metav1.Object); ok && m.GetResourceVersion() == "" {
			m.SetResourceVersion("1")
		}
	}
	client := fake.NewClientset(objs...)
	client.PrependReactor("*", "*", versionReactor(client.Tracker()))
	factory := informers.NewSharedInformerFactory(client, 0)
	sliceTracker, err := resourceslicetracker.StartTracker(ctx, resourceslicetracker.Options{SliceInformer: factory.Resource().V1().ResourceSlices(), KubeClient: client})
	if err != nil {
		t.Fatal(err)
	}
	claims := assumecache.NewAssumeCache(klog.Background(), factory.Resource().V1().ResourceClaims().Informer(), "resource claim", "", nil)
	manager := dynamicresources.NewDRAManager(ctx, claims, sliceTracker, factory)
	factory.Core().V1().Pods().Informer()
	factory.Resource().V1().DeviceClasses().Informer()
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer of %v not synced", typ)
		}
	}
	// The claim cache's handlers (the manager's allocated devices) run
	// after the informer's sync: wait until the cache has every claim.
	var nClaims int
	for _, o := range objs {
		if _, ok := o.(*resourceapi.ResourceClaim); ok {
			nClaims++
		}
	}
	if !cache.WaitForCacheSync(ctx.Done(), func() bool {
		l, err := manager.ResourceClaims().List()
		return err == nil && len(l) == nClaims
	}) {
		t.Fatal("claim cache not synced")
	}
	var nodes []*v1.Node
	var pods []*v1.Pod
	for _, o := range objs {
		switch o := o.(type) {
		case *v1.Node:
			nodes = append(nodes, o)
		case *v1.Pod:
			if o.Spec.NodeName != "" {
				pods = append(pods, o)
			}
		}
	}
	h := &draHandle{handle: handle{snapshot: schedcache.NewSnapshot(pods, nodes), client: client}, factory: factory, manager: manager}
	a, err := ParseArgs(nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := newDRAGPUShare(h, a.placer(), a.Driver)
	if err != nil {
		t.Fatal(err)
	}
	return &draTestbed{ctx: ctx, client: client, manager: manager, plugin: p, h: h}
}

// versionReactor gives the fake clientset the API server's optimistic
// concurrency: a create or update stores a new resourceVersion, and an
// update whose resourceVersion is not the stored one is a Conflict.
func versionReactor(tracker k8stesting.ObjectTracker) k8stesting.ReactionFunc {
	var mu sync.Mutex
	next := 100
	return func(action k8stesting.Action) (bool, runtime.Object, error) {
		a, ok := action.(k8stesting.CreateAction) // UpdateAction is one too
		if !ok {
			return false, nil, nil
		}
		obj, ok := a.GetObject().(metav1.Object)
		if !ok {
			return false, nil, nil
		}
		mu.Lock()
		defer mu.Unlock()
		if action.GetVerb() == "update" {
			stored, err := tracker.Get(action.GetResource(), action.GetNamespace(), obj.GetName())
			if err != nil {
				return true, nil, err
			}
			if m, ok := stored.(metav1.Object); ok && m.GetResourceVersion() != obj.GetResourceVersion() {
				return true, nil, apierrors.NewConflict(action.GetResource().GroupResource(), obj.GetName(), fmt.Errorf("resourceVersion %s, stored %s", obj.GetResourceVersion(), m.GetResourceVersion()))
			}
		}
		next++
		obj.SetResourceVersion(strconv.Itoa(next))
		return false, nil, nil
	}
}

// cycle runs PreFilter and Filter on every node of the snapshot for pod
// and returns the state and each node's Filter status (nil: passes).
func (tb *draTestbed) cycle(t *testing.T, pod *v1.Pod) (fwk.CycleState, map[string]*fwk.Status) {
	t.Helper()
	state := framework.NewCycleState()
	res, st := tb.plugin.PreFilter(tb.ctx, state, pod, nil)
	if !st.IsSuccess() {
		t.Fatalf("PreFilter of %s: %v", pod.Name, st)
	}
	infos, err := tb.h.snapshot.NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*fwk.Status{}
	for _, ni := range infos {
		name := ni.Node().Name
		if res != nil && res.NodeNames != nil && !res.NodeNames.Has(name) {
			out[name] = fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "PreFilter result")
			continue
		}
		out[name] = tb.plugin.Filter(tb.ctx, state, pod, ni)
	}
	return state, out
}

// schedule runs the cycle, Reserve and PreBind on node, failing the test
// on an error.
func (tb *draTestbed) schedule(t *testing.T, pod *v1.Pod, node string) fwk.CycleState {
	t.Helper()
	state, filtered := tb.cycle(t, pod)
	if st := filtered[node]; !st.IsSuccess() {
		t.Fatalf("Filter of %s on %s: %v", pod.Name, node, st)
	}
	if st := tb.plugin.Reserve(tb.ctx, state, pod, node); !st.IsSuccess() {
		t.Fatalf("Reserve of %s on %s: %v", pod.Name, node, st)
	}
	if st := tb.plugin.PreBind(tb.ctx, state, pod, node); !st.IsSuccess() {
		t.Fatalf("PreBind of %s on %s: %v", pod.Name, node, st)
	}
	return state
}

// storedClaim is the claim as the API server (the fake clientset) has it.
func (tb *draTestbed) storedClaim(t *testing.T, name string) *resourceapi.ResourceClaim {
	t.Helper()
	c, err := tb.client.ResourceV1().ResourceClaims("default").Get(tb.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func kubeNode(name string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
}

// gpuSlice publishes node's GPUs (memory each) as NVIDIA's DRA driver
// would: shareable, with an index attribute, pool named for the node.
func gpuSlice(node string, memory ...string) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-gpus"},
		Spec: resourceapi.ResourceSliceSpec{Driver: v1alpha1.DRADriver, NodeName: ptr.To(node),
			Pool: resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1}},
	}
	for i, m := range memory {
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{
			Name:                     fmt.Sprintf("gpu-%d", i),
			Attributes:               map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{dra.AttributeIndex: {IntValue: ptr.To(int64(i))}},
			Capacity:                 map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{v1alpha1.DRAMemoryCapacity: {Value: resource.MustParse(m)}},
			AllowMultipleAllocations: ptr.To(true),
		})
	}
	return s
}

// nicSlice publishes one exclusive NIC of nicDriver on node.
func nicSlice(node string) *resourceapi.ResourceSlice {
	return &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-nics"},
		Spec: resourceapi.ResourceSliceSpec{Driver: nicDriver, NodeName: ptr.To(node),
			Pool:    resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
			Devices: []resourceapi.Device{{Name: "nic-0"}}},
	}
}

// deviceClasses are hetsev's GPU class and the NIC class, each selecting
// its driver's devices.
func deviceClasses() []runtime.Object {
	class := func(name, driver string) *resourceapi.DeviceClass {
		return &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourceapi.DeviceClassSpec{
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", driver)}}}}}
	}
	return []runtime.Object{class(v1alpha1.DeviceClassName, v1alpha1.DRADriver), class(nicClass, nicDriver)}
}

// gpuClaim is a hetsev claim for memory of GPU memory, with the spec
// hetsev-scaler's templates give (gpuinventory.GPUClaimSpec).
func gpuClaim(name, memory string) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid")},
		Spec:       gpuinventory.GPUClaimSpec(mib(memory), nil),
	}
}

// nicClaim is a claim for one NIC of nicClass.
func nicClaim(name string) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid")},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name:    "nic",
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: nicClass, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
		}}}},
	}
}

// draPod is a pod of model with the hetsev claim gpu and, per other
// entry, a claim of that name (entry name = claim name).
func draPod(name, model, gpu string, others ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid"),
		Annotations: map[string]string{v1alpha1.AnnotationModel: model}}}
	p.Spec.SchedulerName = v1alpha1.SchedulerName
	p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: v1alpha1.PodClaimName, ResourceClaimName: ptr.To(gpu)})
	for _, o := range others {
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: o, ResourceClaimName: ptr.To(o)})
	}
	return p
}

// allocatedDevice is the device of the claim's allocation result of driver,
// "" when it has none.
func allocatedDevice(c *resourceapi.ResourceClaim, driver string) string {
	if c.Status.Allocation == nil {
		return ""
	}
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver == driver {
			return r.Pool + "/" + r.Device
		}
	}
	return ""
}

func uidOf(s string) types.UID { return types.UID(s) }

// nodeSelectorFor selects the node named node, as the allocator writes it
// for a device of a node-local slice.
func nodeSelectorFor(node string) *v1.NodeSelector {
	return &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{
		{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{node}}}}}}
}

// mib is a quantity such as "4Gi" in MiB.
func mib(q string) int64 {
	v := resource.MustParse(q)
	return v.Value() >> 20
}

// captureBindings answers the pods/binding creations of the fake
// clientset and records their Bindings, in order.
func (tb *draTestbed) captureBindings() *[]*v1.Binding {
	var bindings []*v1.Binding
	tb.client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "binding" {
			return false, nil, nil
		}
		bindings = append(bindings, a.(k8stesting.CreateAction).GetObject().(*v1.Binding))
		return true, nil, nil
	})
	return &bindings
}
