package kubectlhetsev

import (
	"context"
	"fmt"
	"maps"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/dra"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// nodeNameField selects pods by spec.nodeName (a field selector the API
// server serves for pods).
const nodeNameField = "spec.nodeName"

// clusterObjects are the objects the GPU view is built from: nodes, the
// pods bound to them that hold anything (not terminal), and GPU mode
// dra's ResourceSlices and ResourceClaims.
type clusterObjects struct {
	nodes  []v1.Node
	pods   []*v1.Pod
	slices []*resourcev1.ResourceSlice
	claims []*resourcev1.ResourceClaim
	// class is hetsev's DeviceClass, nil when it could not be read.
	class *resourcev1.DeviceClass
	// notes say what could not be read, for the user.
	notes []string
}

// readCluster lists what the GPU view needs: every node and bound pod, or
// with node set that node and the pods bound to it. ResourceSlices and
// ResourceClaims are read when the API server serves resource.k8s.io/v1;
// a user who may not list them gets a note and the annotation view.
func readCluster(ctx context.Context, c client.Reader, node string) (*clusterObjects, error) {
	objs := &clusterObjects{}
	var pods v1.PodList
	if node != "" {
		var n v1.Node
		if err := c.Get(ctx, types.NamespacedName{Name: node}, &n); err != nil {
			return nil, apiError(err, "get", "nodes", "node", node)
		}
		objs.nodes = []v1.Node{n}
		if err := c.List(ctx, &pods, client.MatchingFields{nodeNameField: node}); err != nil {
			return nil, apiError(err, "list", "pods (all namespaces)", "", "")
		}
	} else {
		var nodes v1.NodeList
		if err := c.List(ctx, &nodes); err != nil {
			return nil, apiError(err, "list", "nodes", "", "")
		}
		objs.nodes = nodes.Items
		if err := c.List(ctx, &pods); err != nil {
			return nil, apiError(err, "list", "pods (all namespaces)", "", "")
		}
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != "" && !gpuinventory.Terminal(p) {
			objs.pods = append(objs.pods, p)
		}
	}
	var slices resourcev1.ResourceSliceList
	if ok, err := optionalList(ctx, c, &slices, "resourceslices", objs); err != nil {
		return nil, err
	} else if ok {
		for i := range slices.Items {
			objs.slices = append(objs.slices, &slices.Items[i])
		}
	}
	var claims resourcev1.ResourceClaimList
	if ok, err := optionalList(ctx, c, &claims, "resourceclaims", objs); err != nil {
		return nil, err
	} else if ok {
		for i := range claims.Items {
			objs.claims = append(objs.claims, &claims.Items[i])
		}
	}
	if len(objs.slices) > 0 {
		class := &resourcev1.DeviceClass{}
		switch err := c.Get(ctx, types.NamespacedName{Name: v1alpha1.DeviceClassName}, class); {
		case err == nil:
			objs.class = class
		case apierrors.IsNotFound(err):
			objs.notes = append(objs.notes, fmt.Sprintf("DeviceClass %s not found: hetsev-scheduler allocates no GPU in GPU mode dra", v1alpha1.DeviceClassName))
		case apierrors.IsForbidden(err):
			objs.notes = append(objs.notes, fmt.Sprintf("may not get DeviceClass %s: GPUs it does not select are shown as usable", v1alpha1.DeviceClassName))
		default:
			return nil, apiError(err, "get", "deviceclasses", "deviceclass", v1alpha1.DeviceClassName)
		}
	}
	return objs, nil
}

// optionalList lists GPU mode dra's objects: false without error when the
// API server does not serve them, or when the user may not list them (a
// note says so).
func optionalList(ctx context.Context, c client.Reader, list client.ObjectList, resource string, objs *clusterObjects) (bool, error) {
	err := c.List(ctx, list)
	switch {
	case err == nil:
		return true, nil
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		return false, nil
	case apierrors.IsForbidden(err):
		objs.notes = append(objs.notes, fmt.Sprintf("may not list %s.resource.k8s.io: GPU mode dra's claims are not shown", resource))
		return false, nil
	}
	return false, apiError(err, "list", resource, "", "")
}

// celCache compiles the DeviceClass's selectors once per process.
var celCache = sync.OnceValue(dra.DefaultCELCache)

// draView is GPU mode dra's accounting over the listed objects (pkg/dra,
// as hetsev-scheduler and hetsev-scaler count).
type draView struct {
	nodes  map[string]*dra.NodeDevices
	usages map[dra.DeviceKey][]dra.Usage
	claims map[types.NamespacedName]*resourcev1.ResourceClaim
	pods   map[types.NamespacedName]*v1.Pod
}

// newDRAView counts the GPUs of every driver profile (dra.Profiles): a
// node's GPUs are those of the first profile that publishes shareable
// devices there, so the plugin needs no flag for the cluster's driver.
func newDRAView(objs *clusterObjects) *draView {
	nodes := map[string]*dra.NodeDevices{}
	usages := map[dra.DeviceKey][]dra.Usage{}
	for _, name := range dra.Profiles() {
		d, _ := dra.Profile(name) // the profiles are known
		for node, nd := range dra.Inventory(objs.slices, d) {
			if cur := nodes[node]; cur == nil || len(cur.Devices) == 0 {
				nodes[node] = nd
			}
		}
		maps.Copy(usages, dra.Usages(objs.claims, d.Name))
	}
	// The GPUs hetsev-scheduler may allocate: those its DeviceClass
	// selects, without a NoSchedule or NoExecute taint; the others are
	// listed as unusable with the reason.
	if objs.class != nil {
		dra.SelectUsable(context.Background(), nodes, objs.class, objs.class.Name, celCache(), true, nil)
	} else {
		dra.SelectTolerated(nodes, nil)
	}
	v := &draView{
		nodes:  nodes,
		usages: usages,
		claims: map[types.NamespacedName]*resourcev1.ResourceClaim{},
		pods:   map[types.NamespacedName]*v1.Pod{},
	}
	for _, c := range objs.claims {
		v.claims[types.NamespacedName{Namespace: c.Namespace, Name: c.Name}] = c
	}
	for _, p := range objs.pods {
		v.pods[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
	}
	return v
}

func (v *draView) getClaim(ns, name string) (*resourcev1.ResourceClaim, error) {
	c, ok := v.claims[types.NamespacedName{Namespace: ns, Name: name}]
	if !ok {
		return nil, fmt.Errorf("ResourceClaim %s/%s not found", ns, name)
	}
	return c, nil
}

// consumers are the pods in a claim's status.reservedFor.
func (v *draView) consumers(claim *resourcev1.ResourceClaim) []*v1.Pod {
	return dra.ReservedPods(claim, func(ns, name string) (*v1.Pod, error) {
		return v.pods[types.NamespacedName{Namespace: ns, Name: name}], nil
	})
}

// podClaims are the ResourceClaims behind the pod's spec.resourceClaims
// entries that were listed, with their names.
func (v *draView) podClaims(p *v1.Pod) []*resourcev1.ResourceClaim {
	names, _ := dra.ClaimNamesOf(p)
	var out []*resourcev1.ResourceClaim
	for _, n := range names {
		if c, err := v.getClaim(p.Namespace, n); err == nil {
			out = append(out, c)
		}
	}
	return out
}
