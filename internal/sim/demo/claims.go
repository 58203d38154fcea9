package demo

import (
	"context"
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/dra"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// ClaimAudit is the demo's checks in GPU mode dra, read from the API
// objects as they are (ResourceSlices, ResourceClaims, pods), not through
// pkg/dra's accounting, which it checks. Counts are summed over audits: a
// device over-committed in three audits counts 3.
type ClaimAudit struct {
	Audits int `json:"audits"`
	// ClaimsChecked counts allocated claims seen, PodsChecked running pods
	// with a hetsev claim (spec.resourceClaims entry "gpu").
	ClaimsChecked int `json:"claims_checked"`
	PodsChecked   int `json:"pods_checked"`
	// DeviceOvercommits counts devices whose claims' consumedCapacity
	// "memory" adds up to more than the device's memory capacity (a claim
	// that consumed none holds the whole device).
	DeviceOvercommits int `json:"device_overcommits"`
	// IdenticalModelColocations counts devices holding the claims of two
	// pods of one model identity (gpuinventory.Demand.Identity: the same
	// hetsev.io/model in the same namespace, or cluster-wide with
	// hetsev.io/model-scope=cluster), the scheduler's anti-affinity rule.
	IdenticalModelColocations int `json:"identical_model_colocations"`
	// RunningWithoutAllocation counts running hetsev pods whose claim is
	// missing, unallocated or not reserved for them.
	RunningWithoutAllocation int `json:"running_without_allocation"`
	// GPUIndexMismatches counts running hetsev pods whose hetsev.io/gpu-index
	// (what the demo's servers and the metrics adapter's DCGM join read)
	// is not the index attribute of the device their claim holds.
	GPUIndexMismatches int `json:"gpu_index_mismatches"`
}

// Check audits namespace's hetsev pods and every claim and slice once.
func (a *ClaimAudit) Check(ctx context.Context, c kubernetes.Interface, namespace string) error {
	slices, err := c.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing ResourceSlices: %w", err)
	}
	claims, err := c.ResourceV1().ResourceClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing ResourceClaims: %w", err)
	}
	pods, err := c.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	a.Audits++
	type device struct {
		capacity int64
		index    string
		node     string
	}
	devices := map[string]device{} // by driver/pool/device
	for _, s := range slices.Items {
		for _, d := range s.Spec.Devices {
			dev := device{}
			if s.Spec.NodeName != nil {
				dev.node = *s.Spec.NodeName
			}
			if q, ok := d.Capacity[v1alpha1.DRAMemoryCapacity]; ok {
				dev.capacity = q.Value.Value()
			}
			devices[s.Spec.Driver+"/"+s.Spec.Pool.Name+"/"+d.Name] = dev
		}
	}
	// The GPU index of a device is the one hetsev-scheduler reads
	// (dra.Inventory: the index attribute, else its position).
	for _, nd := range dra.Inventory(pointers(slices.Items), dra.NVIDIA) {
		for _, d := range nd.Devices {
			k := d.Key().String()
			if dev, ok := devices[k]; ok {
				dev.index = strconv.Itoa(d.Index)
				devices[k] = dev
			}
		}
	}
	podsByUID := map[string]*v1.Pod{}
	for i := range pods.Items {
		podsByUID[string(pods.Items[i].UID)] = &pods.Items[i]
	}
	claimsByName := map[string]*resourcev1.ResourceClaim{}
	type use struct {
		bytes         int64
		claims, whole int
	}
	used := map[string]*use{}
	models := map[string]map[string]int{}
	for i := range claims.Items {
		cl := &claims.Items[i]
		claimsByName[cl.Namespace+"/"+cl.Name] = cl
		if cl.Status.Allocation == nil {
			continue
		}
		a.ClaimsChecked++
		for _, r := range cl.Status.Allocation.Devices.Results {
			k := r.Driver + "/" + r.Pool + "/" + r.Device
			u := used[k]
			if u == nil {
				u = &use{}
				used[k] = u
			}
			u.claims++
			if q, ok := r.ConsumedCapacity[v1alpha1.DRAMemoryCapacity]; ok {
				u.bytes += q.Value()
			} else {
				u.whole++ // consumed no capacity: the device is held whole
			}
			for _, ref := range cl.Status.ReservedFor {
				p := podsByUID[string(ref.UID)]
				if p == nil {
					continue
				}
				if id := gpuinventory.ModelOf(p).Identity(); id != "" {
					if models[k] == nil {
						models[k] = map[string]int{}
					}
					models[k][id]++
				}
			}
		}
	}
	for k, u := range used {
		if u.bytes > devices[k].capacity || (u.whole > 0 && u.claims > 1) {
			a.DeviceOvercommits++
		}
	}
	for _, m := range models {
		for _, n := range m {
			if n > 1 {
				a.IdenticalModelColocations++
			}
		}
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase != v1.PodRunning || p.DeletionTimestamp != nil || !dra.HasHetsevClaim(p) {
			continue
		}
		a.PodsChecked++
		name, _ := dra.ClaimNameOf(p, v1alpha1.PodClaimName)
		cl := claimsByName[p.Namespace+"/"+name]
		if cl == nil || cl.Status.Allocation == nil || !dra.ReservedFor(cl, p.UID) || len(cl.Status.Allocation.Devices.Results) == 0 {
			a.RunningWithoutAllocation++
			continue
		}
		r := cl.Status.Allocation.Devices.Results[0]
		d, ok := devices[r.Driver+"/"+r.Pool+"/"+r.Device]
		if !ok || d.node != p.Spec.NodeName || p.Annotations[v1alpha1.AnnotationGPUIndex] != d.index {
			a.GPUIndexMismatches++
		}
	}
	return nil
}

// pointers are pointers to the items of objs.
func pointers[T any](objs []T) []*T {
	out := make([]*T, len(objs))
	for i := range objs {
		out[i] = &objs[i]
	}
	return out
}
