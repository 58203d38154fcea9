// Package dra is hetsev's view of GPUs shared through Dynamic Resource
// Allocation (resource.k8s.io/v1 with consumable capacity, KEP-5075): the
// GPUs a DRA driver publishes in ResourceSlices, the GPU memory each
// allocated ResourceClaim consumes on them, and the per-GPU occupancy built
// from both through pkg/gpuinventory, so that hetsev-scheduler's DRA mode
// applies the same rules (memory, busy share, identical-model
// anti-affinity, interference) as its annotation mode.
package dra

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// Device attributes of NVIDIA's DRA driver that hetsev reads.
const (
	// AttributeIndex is the GPU's index on its node (an int), the one
	// nvidia-smi and dcgm-exporter's "gpu" label use.
	AttributeIndex resourceapi.QualifiedName = "index"
	// AttributeProductName is the GPU's product name (a string, e.g.
	// "Tesla V100-SXM2-32GB").
	AttributeProductName resourceapi.QualifiedName = "productName"
	// AttributeUUID is the GPU's UUID (a string, "GPU-..."), the UUID
	// label of dcgm-exporter's series.
	AttributeUUID resourceapi.QualifiedName = "uuid"
	// AttributeType is the kind of device NVIDIA's driver publishes (a
	// string): "gpu" for a full GPU, "mig" for a MIG device, "vfio" for a
	// GPU passed through to a VM.
	AttributeType resourceapi.QualifiedName = "type"
	// TypeGPU is NVIDIA's AttributeType of a full GPU, the only kind
	// hetsev shares.
	TypeGPU = "gpu"
	// DriverHAMi is HAMi's DRA driver (Project-HAMi/k8s-dra-driver), which
	// publishes a full GPU with AttributeType TypeHAMiGPU and charges every
	// claim 100 "cores" unless it asks for fewer.
	DriverHAMi  = v1alpha1.DRADriverHAMi
	TypeHAMiGPU = "hami-gpu"
)

// mib is one MiB in bytes.
const mib = 1024 * 1024

// Device is one shareable GPU a DRA driver publishes for a node.
type Device struct {
	// Driver, Pool and Name identify the device in an allocation result.
	Driver, Pool, Name string
	// Index is the GPU's AttributeIndex, or its position among the node's
	// devices (ordered by name) when the driver publishes none. hetsev
	// writes it as hetsev.io/gpu-index on the pod.
	Index int
	// Product is AttributeProductName; may be empty.
	Product string
	// UUID is AttributeUUID; empty when the driver publishes none.
	UUID string
	// MemoryBytes is the device's DRAMemoryCapacity, bytes.
	MemoryBytes int64
	// Charges are the device's capacities other than its memory that a
	// claim not requesting them is charged (NVIDIA's shares, HAMi's
	// cores), which bound how many claims it takes.
	Charges []Charge
	// Slice is the ResourceSlice that published the device.
	Slice *resourceapi.ResourceSlice
}

// Charge is a capacity of a device, other than its memory, that every
// claim is charged unless it requests it: the capacity's requestPolicy
// default, or all of it when it has no request policy (KEP-5075's
// consumable capacity, as the structured allocator applies it). Values are
// in thousandths (resource.Quantity.MilliValue): shares and cores are
// counts.
type Charge struct {
	Name            resourceapi.QualifiedName
	Value, PerClaim int64
}

// ClaimsLeft is how many more claims that request none of d's charged
// capacities the device takes, given what the allocated claims consumed
// (by capacity, in thousandths); -1 when no capacity is charged.
func (d Device) ClaimsLeft(consumed map[resourceapi.QualifiedName]int64) int {
	left := -1
	for _, c := range d.Charges {
		n := int(max(c.Value-consumed[c.Name], 0) / c.PerClaim)
		if left < 0 || n < left {
			left = n
		}
	}
	return left
}

// MemoryMiB is the device's memory in whole MiB (rounded down: never more
// than it has).
func (d Device) MemoryMiB() int64 { return d.MemoryBytes / mib }

// Key is the device's driver/pool/name, as allocation results name it.
func (d Device) Key() DeviceKey { return DeviceKey{Driver: d.Driver, Pool: d.Pool, Device: d.Name} }

// DeviceKey names a device as an allocation result does.
type DeviceKey struct{ Driver, Pool, Device string }

func (k DeviceKey) String() string { return k.Driver + "/" + k.Pool + "/" + k.Device }

// Unusable is a device of the driver that hetsev does not share, and why.
type Unusable struct {
	Node, Pool, Device string
	Reason             string
}

func (u Unusable) String() string {
	return fmt.Sprintf("device %s/%s on node %s: %s", u.Pool, u.Device, u.Node, u.Reason)
}

// NodeDevices are the shareable GPUs of one node, ordered by Index, and
// the devices of the driver that hetsev does not share.
type NodeDevices struct {
	Node     string
	Devices  []Device
	Unusable []Unusable
}

// Inventory reads the GPUs that driver publishes per node from slices:
// the slices of driver with spec.nodeName set, the newest generation of
// each pool only (older ones are being replaced). A device is shareable
// when it allows multiple allocations, has a positive DRAMemoryCapacity,
// is a full GPU (AttributeType, when published, is driver.GPUType), publishes
// every capacity driver.ClaimRequests names, draws
// on no shared counters and needs no binding conditions (the capacities it charges every claim are counted:
// Device.Charges);
// any other device of the driver is listed in NodeDevices.Unusable with
// the reason. Slices of other drivers, and
// slices not bound to one node (nodeSelector, allNodes), are ignored.
func Inventory(all []*resourceapi.ResourceSlice, driver Driver) map[string]*NodeDevices {
	driver = driver.WithDefault()
	newest := map[string]int64{} // pool -> generation
	for _, s := range all {
		if s == nil || s.Spec.Driver != driver.Name || s.Spec.NodeName == nil {
			continue
		}
		if g, ok := newest[s.Spec.Pool.Name]; !ok || s.Spec.Pool.Generation > g {
			newest[s.Spec.Pool.Name] = s.Spec.Pool.Generation
		}
	}
	nodes := map[string]*NodeDevices{}
	for _, s := range all {
		if s == nil || s.Spec.Driver != driver.Name || s.Spec.NodeName == nil || s.Spec.Pool.Generation != newest[s.Spec.Pool.Name] {
			continue
		}
		node := *s.Spec.NodeName
		nd := nodes[node]
		if nd == nil {
			nd = &NodeDevices{Node: node}
			nodes[node] = nd
		}
		for i := range s.Spec.Devices {
			dev := &s.Spec.Devices[i]
			d, reason := deviceOf(s, dev, driver)
			if reason != "" {
				nd.Unusable = append(nd.Unusable, Unusable{Node: node, Pool: s.Spec.Pool.Name, Device: dev.Name, Reason: reason})
				continue
			}
			nd.Devices = append(nd.Devices, d)
		}
	}
	for _, nd := range nodes {
		slices.SortFunc(nd.Devices, func(a, b Device) int {
			return cmp.Or(cmp.Compare(a.Pool, b.Pool), compareNames(a.Name, b.Name))
		})
		// Devices without an index attribute take their position.
		for i := range nd.Devices {
			if nd.Devices[i].Index < 0 {
				nd.Devices[i].Index = i
			}
		}
		slices.SortStableFunc(nd.Devices, func(a, b Device) int { return cmp.Compare(a.Index, b.Index) })
	}
	return nodes
}

// compareNames orders device names with their trailing numbers as
// numbers ("gpu-2" before "gpu-10"): drivers name a node's GPUs by their
// NVML index, so a node with more than ten GPUs keeps that order.
func compareNames(a, b string) int {
	pa, na := splitNumber(a)
	pb, nb := splitNumber(b)
	if pa != pb || na < 0 || nb < 0 {
		return cmp.Compare(a, b)
	}
	return cmp.Compare(na, nb)
}

// splitNumber is name's prefix and trailing decimal number (-1 when it
// has none, or one too long to be an index).
func splitNumber(name string) (string, int) {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	if i == len(name) || len(name)-i > 6 {
		return name, -1
	}
	n, _ := strconv.Atoi(name[i:])
	return name[:i], n
}

// deviceOf reads one published device; reason says why hetsev does not
// share it ("" when it does). Index is -1 when the device has no index
// attribute.
func deviceOf(s *resourceapi.ResourceSlice, dev *resourceapi.Device, driver Driver) (Device, string) {
	if a, ok := dev.Attributes[AttributeType]; ok && a.StringValue != nil && *a.StringValue != driver.gpuType() {
		// A MIG device is a slice of a GPU with its own memory and
		// compute, a VFIO device one passed to a VM: hetsev's accounting
		// and co-location model are of whole GPUs.
		return Device{}, fmt.Sprintf("type %q, not a full GPU (%q)", *a.StringValue, driver.gpuType())
	}
	if dev.AllowMultipleAllocations == nil || !*dev.AllowMultipleAllocations {
		return Device{}, "allowMultipleAllocations is not true: the device cannot be shared"
	}
	for name := range driver.ClaimRequests {
		if _, ok := dev.Capacity[name]; !ok {
			// The allocator would find no device for hetsev's claims.
			return Device{}, fmt.Sprintf("no capacity %q, which hetsev's claims request (DRA driver %s)", name, driver)
		}
	}
	var charges []Charge
	for name, c := range dev.Capacity {
		if name == v1alpha1.DRAMemoryCapacity {
			continue
		}
		// A claim that does not request a capacity consumes its policy's
		// default, or all of it without a policy: NVIDIA's integer
		// shares mode charges each claim one of N shares, HAMi each claim
		// 100 cores. A claim that requests it consumes the request
		// rounded up to the policy's step. Counted, so that hetsev admits
		// on a device exactly the claims the allocator then allocates.
		per := c.Value.MilliValue()
		if c.RequestPolicy != nil && c.RequestPolicy.Default != nil {
			per = c.RequestPolicy.Default.MilliValue()
		}
		if q, ok := driver.ClaimRequests[name]; ok {
			got := consumedOf(q, c.RequestPolicy)
			per = got.MilliValue()
		}
		if per <= 0 {
			continue
		}
		charges = append(charges, Charge{Name: name, Value: c.Value.MilliValue(), PerClaim: per})
	}
	slices.SortFunc(charges, func(a, b Charge) int { return cmp.Compare(a.Name, b.Name) })
	if len(dev.ConsumesCounters) > 0 {
		// Partitionable devices (NVIDIA's DynamicMIG) draw on counters a
		// separate slice publishes; hetsev's allocation offers the
		// allocator the device's own slice alone, so it could never
		// allocate one.
		return Device{}, "consumes counters of a shared counter set (partitionable devices, such as NVIDIA's DynamicMIG), which hetsev does not allocate"
	}
	if len(dev.BindingConditions) > 0 {
		// Upstream's scheduler waits in PreBind until the driver reports
		// these conditions; hetsev-scheduler binds at once, so a pod would
		// start before its device is ready.
		return Device{}, fmt.Sprintf("binding conditions %v, which hetsev-scheduler does not wait for", dev.BindingConditions)
	}
	c, ok := dev.Capacity[v1alpha1.DRAMemoryCapacity]
	if !ok {
		return Device{}, fmt.Sprintf("no capacity %q: its GPU memory cannot be accounted", v1alpha1.DRAMemoryCapacity)
	}
	if c.Value.Sign() <= 0 {
		return Device{}, fmt.Sprintf("capacity %q is %s, not positive", v1alpha1.DRAMemoryCapacity, c.Value.String())
	}
	d := Device{Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name, Name: dev.Name, Index: -1, MemoryBytes: c.Value.Value(), Charges: charges, Slice: s}
	if a, ok := dev.Attributes[AttributeIndex]; ok && a.IntValue != nil && *a.IntValue >= 0 && *a.IntValue < 1<<20 {
		d.Index = int(*a.IntValue)
	}
	if a, ok := dev.Attributes[AttributeProductName]; ok && a.StringValue != nil {
		d.Product = *a.StringValue
	}
	if a, ok := dev.Attributes[AttributeUUID]; ok && a.StringValue != nil {
		d.UUID = *a.StringValue
	}
	return d, ""
}

// ByIndex is the node's device with GPU index idx.
func (n *NodeDevices) ByIndex(idx int) (Device, bool) {
	for _, d := range n.Devices {
		if d.Index == idx {
			return d, true
		}
	}
	return Device{}, false
}

// MaxMemoryBytes is the largest device memory over all nodes, bytes; 0
// when there is no shareable device.
func MaxMemoryBytes(nodes map[string]*NodeDevices) int64 {
	var m int64
	for _, nd := range nodes {
		for _, d := range nd.Devices {
			m = max(m, d.MemoryBytes)
		}
	}
	return m
}

// SelectByClass keeps the devices that class's CEL selectors select (as
// the allocator would) and moves the others to Unusable with the reason,
// on every node. A selector that fails to compile or evaluate selects
// nothing; its error is the reason.
func SelectByClass(ctx context.Context, nodes map[string]*NodeDevices, class *resourceapi.DeviceClass, cache *cel.Cache) {
	for _, nd := range nodes {
		kept := nd.Devices[:0]
		for _, d := range nd.Devices {
			if reason := rejectedBy(ctx, class, cache, d); reason != "" {
				nd.Unusable = append(nd.Unusable, Unusable{Node: nd.Node, Pool: d.Pool, Device: d.Name, Reason: reason})
				continue
			}
			kept = append(kept, d)
		}
		nd.Devices = kept
	}
}

// rejectedBy is why class does not select d, "" when it does.
func rejectedBy(ctx context.Context, class *resourceapi.DeviceClass, cache *cel.Cache, d Device) string {
	dev := d.published()
	if dev == nil {
		return "not in its ResourceSlice"
	}
	in := cel.Device{Driver: d.Driver, AllowMultipleAllocations: dev.AllowMultipleAllocations, Attributes: dev.Attributes, Capacity: dev.Capacity}
	for _, s := range class.Spec.Selectors {
		if s.CEL == nil {
			continue
		}
		expr := cache.GetOrCompile(s.CEL.Expression)
		if expr.Error != nil {
			return fmt.Sprintf("DeviceClass %s selector %q: %v", class.Name, s.CEL.Expression, expr.Error)
		}
		ok, _, err := expr.DeviceMatches(ctx, in)
		if err != nil {
			return fmt.Sprintf("DeviceClass %s selector %q: %v", class.Name, s.CEL.Expression, err)
		}
		if !ok {
			return fmt.Sprintf("not selected by DeviceClass %s (%s)", class.Name, s.CEL.Expression)
		}
	}
	return ""
}
