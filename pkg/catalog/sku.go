package catalog

import (
	"io"
	"math"

	profiles "github.com/hetsev/hetsev/data/profiles"
)

// InstanceSKU is a priced cloud instance type: GPUs of one catalog type
// with the vCPUs and memory that come with them.
type InstanceSKU struct {
	Name            string  // instance type, e.g. g4dn.xlarge
	GPUType         string  // the catalog's GPU type name
	GPUs            int     // GPUs per instance, >= 1
	VCPUs           int     // vCPUs per instance, >= 1
	MemoryGiB       float64 // memory per instance, GiB, > 0
	PriceUSDPerHour float64 // on-demand price of the whole instance, USD/h, > 0
}

// SKU CSV columns (instance_type is shared with the catalog).
const (
	colSKUGPUType = "gpu_type"
	colSKUGPUs    = "gpus"
	colSKUVCPUs   = "vcpus"
	colSKUMemory  = "memory_gib"
	colSKUPrice   = "usd_per_hour"
)

// LoadSKUs reads an instance SKU CSV with the columns instance_type,
// gpu_type (a type of cat), gpus (>= 1), vcpus (>= 1), memory_gib (> 0)
// and usd_per_hour (> 0); others (region, source) are ignored. file names
// the input in errors, which are *FieldError values naming file, line and
// column: a GPU type cat does not have, a price that is missing or not
// positive, a repeated instance type. Every SKU's price per GPU must be
// at least the catalog's price of its GPU type: the catalog's price is
// the least a GPU of that type can be billed (the lower bound of make
// evaluate charges it).
func LoadSKUs(r io.Reader, file string, cat Catalog) ([]InstanceSKU, error) {
	t, err := newCSVTable(r, file, []string{colInstanceType, colSKUGPUType, colSKUGPUs, colSKUVCPUs, colSKUMemory, colSKUPrice})
	if err != nil {
		return nil, err
	}
	var out []InstanceSKU
	line := map[string]int{}
	for {
		row, ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		var s InstanceSKU
		if s.Name, err = row.nonEmpty(colInstanceType); err != nil {
			return nil, err
		}
		if first, dup := line[s.Name]; dup {
			return nil, row.errorf(colInstanceType, "duplicate instance type %q (first on line %d)", s.Name, first)
		}
		line[s.Name] = row.lineOf(colInstanceType)
		if s.GPUType, err = row.nonEmpty(colSKUGPUType); err != nil {
			return nil, err
		}
		g, known := cat.ByName(s.GPUType)
		if !known {
			return nil, row.errorf(colSKUGPUType, "GPU type %q is not in the GPU catalog", s.GPUType)
		}
		gpus, err := row.positiveInt(colSKUGPUs)
		if err != nil {
			return nil, err
		}
		vcpus, err := row.positiveInt(colSKUVCPUs)
		if err != nil {
			return nil, err
		}
		s.GPUs, s.VCPUs = int(gpus), int(vcpus)
		if s.MemoryGiB, err = row.float(colSKUMemory, true); err != nil {
			return nil, err
		}
		if s.PriceUSDPerHour, err = row.float(colSKUPrice, true); err != nil {
			return nil, err
		}
		if per := s.PriceUSDPerHour / float64(s.GPUs); per < g.PriceUSDPerHour*(1-1e-9) {
			return nil, row.errorf(colSKUPrice, "%g USD/h per GPU, below the catalog's %g for %s: the catalog's price must be the least a GPU of its type is billed", per, g.PriceUSDPerHour, s.GPUType)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, &FieldError{File: file, Msg: "no instance types (header only)"}
	}
	return out, nil
}

// DefaultSKUs loads the instance SKUs embedded in package data
// (data/profiles/instance_skus.csv: AWS us-east-1 on-demand g4dn, g5,
// p3dn.24xlarge and p4d.24xlarge) for cat's GPU types.
func DefaultSKUs(cat Catalog) ([]InstanceSKU, error) {
	f, err := openEmbedded(profiles.InstanceSKUs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return LoadSKUs(f, profiles.InstanceSKUs, cat)
}

// GPUShareUSDPerHour is what one GPU of the SKU's type costs when the pods
// on it request cpuMilli millicores and memMiB MiB of host memory, USD/h,
// and whether they fit one instance of this SKU. An instance of one GPU is
// billed whole; one of several GPUs pools its vCPUs and memory, and a GPU
// is billed the share of the instance it takes: max(1 GPU, the pods' CPU,
// their memory) as a share of the instance, times its price (the other
// GPUs' pods use the rest). Pods that do not fit one instance are billed
// the instances they take, in the same shares (fits false). Capacities
// are the instance's as published; kubelet and system reservations are
// not taken off (for every policy alike).
func (s InstanceSKU) GPUShareUSDPerHour(cpuMilli, memMiB int64) (usd float64, fits bool) {
	cpu := float64(cpuMilli) / float64(1000*s.VCPUs)
	mem := float64(memMiB) / (1024 * s.MemoryGiB)
	share := math.Max(1/float64(s.GPUs), math.Max(cpu, mem))
	fits = share <= 1
	if fits && s.GPUs == 1 {
		share = 1
	}
	return share * s.PriceUSDPerHour, fits
}
