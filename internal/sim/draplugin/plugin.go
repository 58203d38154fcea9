// Package draplugin is the claim-preparing half of a simulated NVIDIA DRA
// kubelet plugin for the real nodes of `make e2e`: it implements
// k8s.io/dynamic-resource-allocation/kubeletplugin's DRAPlugin for one
// node's GPUs (the ResourceSlice of internal/sim/dradriver.Slice), so
// kubeletplugin.Start can serve it to the kubelet. Preparing a claim
// writes a CDI spec that gives the claim's containers
// NVIDIA_VISIBLE_DEVICES with the indices of the GPUs allocated to it,
// the index hetsev-scheduler chose; unpreparing removes it. Like NVIDIA's
// driver, it refuses to prepare a claim on a GPU that a prepared claim
// holds under another configuration of the driver (a GpuConfig with
// another sharing strategy, say). There are no GPUs: a container only
// learns which one it was given.
package draplugin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	"github.com/hetsev/hetsev/pkg/dra"
)

// Plugin prepares claims on one node's GPUs.
type Plugin struct {
	driver, node, cdiDir string
	// index is the GPU index of each of the node's devices, read as
	// hetsev-scheduler reads it (dra.Inventory).
	index map[dra.DeviceKey]int

	mu sync.Mutex
	// prepared are the claims prepared on each device with their
	// configuration of this driver ("" for none); guarded by mu.
	prepared map[dra.DeviceKey]map[types.UID]string
}

var _ kubeletplugin.DRAPlugin = (*Plugin)(nil)

// New is the plugin for the node and GPUs of slice (its driver, node name
// and devices, indices as dra.Inventory reads them), writing CDI specs
// into cdiDir (one of containerd's cdi_spec_dirs). Errors: a nil slice, a
// slice without spec.nodeName or driver, an empty cdiDir.
func New(slice *resourceapi.ResourceSlice, cdiDir string) (*Plugin, error) {
	if slice == nil {
		return nil, errors.New("draplugin: no ResourceSlice")
	}
	if slice.Spec.NodeName == nil || *slice.Spec.NodeName == "" {
		return nil, fmt.Errorf("draplugin: ResourceSlice %s has no spec.nodeName", slice.Name)
	}
	if slice.Spec.Driver == "" {
		return nil, fmt.Errorf("draplugin: ResourceSlice %s has no spec.driver", slice.Name)
	}
	if cdiDir == "" {
		return nil, errors.New("draplugin: no CDI spec dir")
	}
	p := &Plugin{driver: slice.Spec.Driver, node: *slice.Spec.NodeName, cdiDir: cdiDir, index: map[dra.DeviceKey]int{}, prepared: map[dra.DeviceKey]map[types.UID]string{}}
	for _, nd := range dra.Inventory([]*resourceapi.ResourceSlice{slice}, dra.DriverNamed(p.driver)) {
		for _, d := range nd.Devices {
			p.index[d.Key()] = d.Index
		}
	}
	return p, nil
}

// PrepareResourceClaims writes each claim's CDI spec and returns its
// devices, each with the claim's CDI device ID. A claim without an
// allocation, with no device of this driver, or with a device that is
// not one of this node's GPUs gets an error in its result (the pod stays
// ContainerCreating with it) and no spec.
func (p *Plugin) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, c := range claims {
		if c == nil {
			continue
		}
		out[c.UID] = p.prepare(c)
	}
	return out, nil
}

func (p *Plugin) prepare(c *resourceapi.ResourceClaim) kubeletplugin.PrepareResult {
	fail := func(format string, args ...any) kubeletplugin.PrepareResult {
		return kubeletplugin.PrepareResult{Err: fmt.Errorf("claim %s/%s: "+format, append([]any{c.Namespace, c.Name}, args...)...)}
	}
	if c.Status.Allocation == nil {
		return fail("not allocated")
	}
	id := CDIDeviceID(p.driver, string(c.UID))
	var devices []kubeletplugin.Device
	var indices []int
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver != p.driver {
			continue
		}
		key := dra.DeviceKey{Driver: r.Driver, Pool: r.Pool, Device: r.Device}
		idx, ok := p.index[key]
		if !ok {
			return fail("device %s is not a GPU of node %s", key, p.node)
		}
		if !slices.Contains(indices, idx) {
			indices = append(indices, idx)
		}
		devices = append(devices, kubeletplugin.Device{
			Requests: []string{r.Request}, PoolName: r.Pool, DeviceName: r.Device,
			CDIDeviceIDs: []string{id}, ShareID: r.ShareID,
		})
	}
	if len(devices) == 0 {
		return fail("no device of driver %s allocated", p.driver)
	}
	if err := p.hold(c); err != nil {
		return fail("%v", err)
	}
	slices.Sort(indices)
	env := make([]string, len(indices))
	for i, idx := range indices {
		env[i] = strconv.Itoa(idx)
	}
	if _, err := writeSpec(p.cdiDir, p.driver, string(c.UID), strings.Join(env, ",")); err != nil {
		return fail("%v", err)
	}
	return kubeletplugin.PrepareResult{Devices: devices}
}

// UnprepareResourceClaims removes each claim's CDI spec; a claim that was
// never prepared is no error.
func (p *Plugin) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := make(map[types.UID]error, len(claims))
	for _, c := range claims {
		out[c.UID] = removeSpec(p.cdiDir, p.driver, string(c.UID))
		p.release(c.UID)
	}
	return out, nil
}

// hold records c as prepared on its devices, or says why not: another
// prepared claim holds one of them under a different configuration of
// this driver, which NVIDIA's driver refuses to mix on a GPU.
func (p *Plugin) hold(c *resourceapi.ResourceClaim) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var keys []dra.DeviceKey
	configs := map[dra.DeviceKey]string{}
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver != p.driver {
			continue
		}
		key := dra.DeviceKey{Driver: r.Driver, Pool: r.Pool, Device: r.Device}
		cfg := p.configOf(c, r.Request)
		for other, otherCfg := range p.prepared[key] {
			if other != c.UID && otherCfg != cfg {
				return fmt.Errorf("device %s is prepared for claim %s under another configuration of driver %s (%q, this claim %q)", key, other, p.driver, otherCfg, cfg)
			}
		}
		keys = append(keys, key)
		configs[key] = cfg
	}
	for _, k := range keys {
		if p.prepared[k] == nil {
			p.prepared[k] = map[types.UID]string{}
		}
		p.prepared[k][c.UID] = configs[k]
	}
	return nil
}

// configOf is the claim's opaque configuration of this driver for
// request, its parameters as written ("" for none).
func (p *Plugin) configOf(c *resourceapi.ResourceClaim, request string) string {
	var parts []string
	for _, cfg := range c.Status.Allocation.Devices.Config {
		if cfg.Opaque == nil || cfg.Opaque.Driver != p.driver {
			continue
		}
		if len(cfg.Requests) > 0 && !slices.Contains(cfg.Requests, request) {
			continue
		}
		parts = append(parts, string(cfg.Opaque.Parameters.Raw))
	}
	return strings.Join(parts, "\n")
}

// release forgets claim uid's devices.
func (p *Plugin) release(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, held := range p.prepared {
		delete(held, uid)
		if len(held) == 0 {
			delete(p.prepared, k)
		}
	}
}

// HandleError logs errors the helper meets in the background (publishing
// ResourceSlices, watching claims); the helper retries on its own.
func (p *Plugin) HandleError(ctx context.Context, err error, msg string) {
	klog.FromContext(ctx).Error(err, msg, "driver", p.driver, "node", p.node)
}
