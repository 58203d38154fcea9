package catalog

import (
	"fmt"
	"io"
	"io/fs"

	"github.com/hetsev/hetsev/data/profiles"
)

// GPUType is one GPU type the cluster may offer, with its price.
//
// The default catalog (data/profiles/gpu_catalog.csv) takes prices from the
// SkyPilot AWS catalog, us-east-1 on-demand: the price of one GPU is the
// instance price divided by the instance's GPU count.
type GPUType struct {
	// Name is hetsev's short name for the type, e.g. "V100-32GB" or "T4";
	// model profiles refer to GPU types by this name.
	Name string
	// ProductLabel is the value NVIDIA GPU Feature Discovery publishes in the
	// node label nvidia.com/gpu.product, e.g. "Tesla-T4".
	ProductLabel string
	// MemoryMiB is the memory of one GPU, in MiB.
	MemoryMiB int64
	// PriceUSDPerHour is the on-demand price of one GPU, in USD/h (C_i in
	// HetSev 4.1).
	PriceUSDPerHour float64
	// InstanceType is the cloud instance type the price was taken from, e.g.
	// "g4dn.xlarge".
	InstanceType string
	// Source says where the price came from.
	Source string
}

// Catalog is the set of GPU types, in file order.
type Catalog struct {
	Types []GPUType
}

// ByName returns the GPU type with the given Name.
func (c Catalog) ByName(name string) (GPUType, bool) {
	for _, t := range c.Types {
		if t.Name == name {
			return t, true
		}
	}
	return GPUType{}, false
}

// ByProductLabel returns the GPU type whose ProductLabel (the value of the
// node label nvidia.com/gpu.product) equals label.
func (c Catalog) ByProductLabel(label string) (GPUType, bool) {
	for _, t := range c.Types {
		if t.ProductLabel == label {
			return t, true
		}
	}
	return GPUType{}, false
}

// Catalog CSV columns. Other columns (instance_gpus, instance_usd_per_hour,
// region) are allowed and ignored.
const (
	colGPUType      = "gpu_type"
	colProductLabel = "product_label"
	colGPUMemoryMiB = "gpu_memory_mib"
	colUSDPerHour   = "usd_per_hour"
	colInstanceType = "instance_type"
	colSource       = "source"
)

// LoadCatalog reads a GPU catalog CSV with the columns gpu_type,
// product_label, gpu_memory_mib (MiB, > 0), usd_per_hour (USD/h, > 0),
// instance_type and source. file names the input in errors, which are
// *FieldError values naming file, line and column. Duplicate gpu_type or
// product_label values and an empty catalog are errors.
func LoadCatalog(r io.Reader, file string) (Catalog, error) {
	t, err := newCSVTable(r, file, []string{colGPUType, colProductLabel, colGPUMemoryMiB, colUSDPerHour, colInstanceType, colSource})
	if err != nil {
		return Catalog{}, err
	}
	var c Catalog
	nameLine := map[string]int{}
	labelLine := map[string]int{}
	for {
		row, ok, err := t.next()
		if err != nil {
			return Catalog{}, err
		}
		if !ok {
			break
		}
		g, err := parseGPUType(row)
		if err != nil {
			return Catalog{}, err
		}
		if first, dup := nameLine[g.Name]; dup {
			return Catalog{}, row.errorf(colGPUType, "duplicate GPU type %q (first on line %d)", g.Name, first)
		}
		if first, dup := labelLine[g.ProductLabel]; dup {
			return Catalog{}, row.errorf(colProductLabel, "duplicate product label %q (first on line %d)", g.ProductLabel, first)
		}
		nameLine[g.Name] = row.lineOf(colGPUType)
		labelLine[g.ProductLabel] = row.lineOf(colProductLabel)
		c.Types = append(c.Types, g)
	}
	if len(c.Types) == 0 {
		return Catalog{}, &FieldError{File: file, Msg: "no GPU types (header only)"}
	}
	return c, nil
}

func parseGPUType(row csvRow) (GPUType, error) {
	var g GPUType
	var err error
	if g.Name, err = row.nonEmpty(colGPUType); err != nil {
		return g, err
	}
	if g.ProductLabel, err = row.nonEmpty(colProductLabel); err != nil {
		return g, err
	}
	if g.MemoryMiB, err = row.positiveInt(colGPUMemoryMiB); err != nil {
		return g, err
	}
	if g.PriceUSDPerHour, err = row.float(colUSDPerHour, true); err != nil {
		return g, err
	}
	if g.InstanceType, err = row.str(colInstanceType); err != nil {
		return g, err
	}
	if g.Source, err = row.str(colSource); err != nil {
		return g, err
	}
	return g, nil
}

// DefaultCatalog loads the catalog embedded in package data
// (data/profiles/gpu_catalog.csv), AWS us-east-1 on-demand: V100-32GB at
// 3.9015 USD/h (p3dn.24xlarge / 8), T4 at 0.526 USD/h (g4dn.xlarge), A100
// at 4.096575 USD/h (p4d.24xlarge / 8) and A10G at 1.006 USD/h (g5.xlarge;
// no model profile).
func DefaultCatalog() (Catalog, error) {
	f, err := openEmbedded(profiles.GPUCatalog)
	if err != nil {
		return Catalog{}, err
	}
	defer f.Close()
	return LoadCatalog(f, profiles.GPUCatalog)
}

func openEmbedded(name string) (fs.File, error) {
	f, err := profiles.Open(name)
	if err != nil {
		return nil, fmt.Errorf("heterogeneity: opening embedded %s: %w", name, err)
	}
	return f, nil
}
