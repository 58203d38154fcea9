package dra

import (
	"cmp"
	"flag"
	"fmt"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// Driver is the DRA driver whose GPUs hetsev shares and what its claims
// ask of it besides GPU memory. Every hetsev program that reads
// ResourceSlices or writes ResourceClaims takes one (the scheduler's
// HetsevGPUShare args, hetsev-scaler's and hetsev-metrics-adapter's
// --dra-driver flags, the chart's dra.driver values).
type Driver struct {
	// Name is the ResourceSlices' spec.driver and the domain of the
	// device attributes (e.g. "gpu.nvidia.com").
	Name string
	// GPUType is the AttributeType value of a full GPU; a device with
	// another type (a MIG device, a VFIO device) is not shared. A device
	// that publishes no AttributeType is taken for a full GPU.
	GPUType string
	// ClaimRequests are the capacities, other than GPU memory, every hetsev
	// claim requests, with their amounts: without a request, a claim is
	// charged the capacity's requestPolicy default (HAMi's 100 cores: the
	// whole GPU).
	ClaimRequests map[resourceapi.QualifiedName]resource.Quantity
}

// The driver profiles, by name.
const (
	// ProfileNVIDIA is NVIDIA's dra-driver-nvidia-gpu (gpu.nvidia.com),
	// full GPUs of type "gpu" with the memory capacity of its
	// ConsumableShares memory mode; its claims ask for memory alone.
	ProfileNVIDIA = v1alpha1.DRAProfileNVIDIA
	// ProfileHAMi is HAMi's k8s-dra-driver (hami-core-gpu.project-hami.io),
	// full GPUs of type "hami-gpu" with capacities memory and cores. Its
	// claims request 0 cores: HAMi-core turns a claim's consumed cores into
	// CUDA_DEVICE_SM_LIMIT, and a limit of 0 throttles nothing
	// (HAMi-core's rate_limiter returns at 0 or >= 100), so instances
	// time-slice the GPU as hetsev's interference model assumes, while
	// HAMi-core still caps each instance's GPU memory at its claim.
	ProfileHAMi = v1alpha1.DRAProfileHAMi
)

// DefaultProfile is the driver profile when none is configured.
const DefaultProfile = ProfileNVIDIA

// NVIDIA is ProfileNVIDIA's driver.
var NVIDIA = Driver{Name: v1alpha1.DRADriver, GPUType: TypeGPU}

// Profiles are the driver profile names, the default first.
func Profiles() []string { return []string{ProfileNVIDIA, ProfileHAMi} }

// Profile is the driver of profile name; an error names the profiles.
func Profile(name string) (Driver, error) {
	switch name {
	case ProfileNVIDIA:
		return NVIDIA, nil
	case ProfileHAMi:
		return Driver{Name: DriverHAMi, GPUType: TypeHAMiGPU,
			ClaimRequests: map[resourceapi.QualifiedName]resource.Quantity{"cores": resource.MustParse("0")}}, nil
	}
	return Driver{}, fmt.Errorf("unknown DRA driver profile %q (known: %s)", name, strings.Join(Profiles(), ", "))
}

// DriverConfig is how a program configures its Driver: a profile and
// overrides of its fields. The zero value is DefaultProfile.
type DriverConfig struct {
	// Profile is one of Profiles; "" is DefaultProfile.
	Profile string
	// Name and GPUType, when not empty, replace the profile's.
	Name, GPUType string
	// ClaimRequests, "capacity=quantity" pairs separated by commas (e.g.
	// "cores=0"), when not empty replace the profile's; "-" is none.
	ClaimRequests string
}

// Driver is the configured driver. Errors name the field: an unknown
// profile, a driver name that is not a DNS subdomain, a malformed request,
// a request of the memory capacity (hetsev sets it per instance).
func (c DriverConfig) Driver() (Driver, error) {
	d, err := Profile(cmp.Or(c.Profile, DefaultProfile))
	if err != nil {
		return Driver{}, err
	}
	if c.Name != "" {
		if errs := validation.IsDNS1123Subdomain(c.Name); len(errs) > 0 {
			return Driver{}, fmt.Errorf("DRA driver name %q: %s", c.Name, strings.Join(errs, "; "))
		}
		d.Name = c.Name
	}
	if c.GPUType != "" {
		d.GPUType = c.GPUType
	}
	if c.ClaimRequests != "" {
		r, err := ParseClaimRequests(c.ClaimRequests)
		if err != nil {
			return Driver{}, err
		}
		d.ClaimRequests = r
	}
	return d, nil
}

// ParseClaimRequests reads "capacity=quantity,..." ("-" is none). A
// capacity named twice, a quantity that does not parse or is negative, and
// the memory capacity are errors.
func ParseClaimRequests(s string) (map[resourceapi.QualifiedName]resource.Quantity, error) {
	out := map[resourceapi.QualifiedName]resource.Quantity{}
	if strings.TrimSpace(s) == "-" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("DRA claim request %q: want capacity=quantity", kv)
		}
		if name == v1alpha1.DRAMemoryCapacity {
			return nil, fmt.Errorf("DRA claim request %q: capacity %q is set per instance from its GPU memory", kv, name)
		}
		if _, dup := out[resourceapi.QualifiedName(name)]; dup {
			return nil, fmt.Errorf("DRA claim request %q: capacity %q named twice", kv, name)
		}
		q, err := resource.ParseQuantity(val)
		if err != nil {
			return nil, fmt.Errorf("DRA claim request %q: %v", kv, err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("DRA claim request %q: negative", kv)
		}
		out[resourceapi.QualifiedName(name)] = q
	}
	return out, nil
}

// String is the driver as logs show it.
func (d Driver) String() string {
	var reqs []string
	for n, q := range d.ClaimRequests {
		reqs = append(reqs, string(n)+"="+q.String())
	}
	slices.Sort(reqs)
	return fmt.Sprintf("%s (type %q, claim requests [%s])", d.Name, d.GPUType, strings.Join(reqs, ","))
}

// gpuType is d.GPUType, TypeGPU when unset.
func (d Driver) gpuType() string { return cmp.Or(d.GPUType, TypeGPU) }

// consumedOf is what a claim requesting q of a capacity with policy
// consumes, by KEP-5075's rule as the structured allocator applies it: q
// below a range's minimum is the minimum; above it, q rounded up to the
// next step from the minimum; with discrete valid values, the first not
// below q; without a policy, q itself.
func consumedOf(q resource.Quantity, policy *resourceapi.CapacityRequestPolicy) resource.Quantity {
	switch {
	case policy == nil:
		return q
	case policy.ValidRange != nil && policy.ValidRange.Min != nil:
		lo := *policy.ValidRange.Min
		if q.Cmp(lo) < 0 {
			return lo
		}
		if policy.ValidRange.Step == nil || policy.ValidRange.Step.Value() <= 0 {
			return q
		}
		step := policy.ValidRange.Step.Value()
		n := (q.Value() - lo.Value() + step - 1) / step
		return *resource.NewQuantity(lo.Value()+n*step, resource.BinarySI)
	case len(policy.ValidValues) > 0:
		for _, v := range policy.ValidValues {
			if q.Cmp(v) <= 0 {
				return v
			}
		}
	}
	return q
}

// WithDefault is d, or NVIDIA when d is the zero Driver (no name), so that
// a zero Driver in a program's configuration means DefaultProfile.
func (d Driver) WithDefault() Driver {
	if d.Name == "" {
		return NVIDIA
	}
	return d
}

// AddGoFlags registers the --dra-driver flags on fs, with c's values as
// defaults: hetsev-scaler's and hetsev-metrics-adapter's, as
// hetsev-scheduler's HetsevGPUShare args draDriver, draDriverName,
// draGPUType and draClaimRequests. (kubectl hetsev reads every profile's
// slices and takes no flag.)
func (c *DriverConfig) AddGoFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Profile, "dra-driver", c.Profile, "GPU mode dra: the DRA driver whose GPUs hetsev shares, a profile: "+ProfileNVIDIA+" (NVIDIA's dra-driver-nvidia-gpu, "+v1alpha1.DRADriver+", full GPUs of type "+TypeGPU+") or "+ProfileHAMi+" (HAMi's k8s-dra-driver, "+DriverHAMi+", full GPUs of type "+TypeHAMiGPU+"; claims request cores=0: no compute cap); empty: "+DefaultProfile)
	fs.StringVar(&c.Name, "dra-driver-name", c.Name, "GPU mode dra: replaces the profile's driver name (the ResourceSlices' spec.driver)")
	fs.StringVar(&c.GPUType, "dra-gpu-type", c.GPUType, "GPU mode dra: replaces the profile's value of the type attribute of a full GPU; devices of other types (MIG, VFIO) are not shared")
	fs.StringVar(&c.ClaimRequests, "dra-claim-requests", c.ClaimRequests, "GPU mode dra: replaces the profile's capacities, other than memory, that every hetsev claim requests, as capacity=quantity pairs separated by commas (e.g. cores=0); - for none")
}

// DeviceClassSelector is the CEL selector of hetsev's DeviceClass for
// driver d: d's devices that allow multiple allocations (consumable
// capacity) and are full GPUs (attribute type d.GPUType, where published).
// manifests/dra/deviceclass.yaml holds NVIDIA's and the chart renders it
// from its dra values; tests keep both equal to this.
func (d Driver) DeviceClassSelector() string {
	d = d.WithDefault()
	attr := fmt.Sprintf("device.attributes[%q]", d.Name)
	return fmt.Sprintf(`device.driver == %q && device.allowMultipleAllocations == true && (!has(%s.%s) || %s.%s == %q)`,
		d.Name, attr, AttributeType, attr, AttributeType, d.gpuType())
}

// Equal reports whether d and o are the same driver with the same claim
// requests.
func (d Driver) Equal(o Driver) bool {
	d, o = d.WithDefault(), o.WithDefault()
	if d.Name != o.Name || d.gpuType() != o.gpuType() || len(d.ClaimRequests) != len(o.ClaimRequests) {
		return false
	}
	for n, q := range d.ClaimRequests {
		if p, ok := o.ClaimRequests[n]; !ok || p.Cmp(q) != 0 {
			return false
		}
	}
	return true
}

// DriverNamed is the profile's driver whose Name is name, or a Driver of
// that name with the defaults (full GPUs of type TypeGPU, no claim
// requests) when no profile has it.
func DriverNamed(name string) Driver {
	for _, p := range Profiles() {
		if d, _ := Profile(p); d.Name == name {
			return d
		}
	}
	return Driver{Name: name}
}
