package evaluate

import (
	"math"

	"github.com/hetsev/hetsev/pkg/catalog"
)

// billing is how a replay bills a GPU in use: as the cheapest share of a
// cloud instance (Config.SKUs) that holds the CPU and host memory its
// pods request (catalog.InstanceSKU.GPUShareUSDPerHour), so a policy that
// packs many pods onto a GPU pays for the vCPUs and memory they need; a
// GPU type without SKUs is billed at its catalog price whatever its pods
// ask. The catalog's price is the least any SKU bills a GPU of its type
// (catalog.LoadSKUs), so billing never undercuts the lower bound.
type billing struct {
	skus  map[string][]catalog.InstanceSKU
	cache map[billKey]billed
}

type billKey struct {
	gpuType       string
	cpuMilli, mem int64
}

// billed is a GPU's price per hour and the instance type it is billed as
// ("" for its catalog price).
type billed struct {
	usdPerHour float64
	sku        string
}

func newBilling(skus []catalog.InstanceSKU) *billing {
	b := &billing{skus: map[string][]catalog.InstanceSKU{}, cache: map[billKey]billed{}}
	for _, s := range skus {
		b.skus[s.GPUType] = append(b.skus[s.GPUType], s)
	}
	return b
}

// gpu is what a GPU of type t costs per hour whose pods request cpuMilli
// millicores and memMiB MiB of host memory: the cheapest SKU share that
// holds them, else (pods beyond any one instance) the cheapest in shares
// over instances, else with no SKU of t its catalog price.
func (b *billing) gpu(t catalog.GPUType, cpuMilli, memMiB int64) billed {
	k := billKey{t.Name, cpuMilli, memMiB}
	if v, ok := b.cache[k]; ok {
		return v
	}
	fit, over := billed{usdPerHour: math.Inf(1)}, billed{usdPerHour: math.Inf(1)}
	for _, s := range b.skus[t.Name] {
		usd, fits := s.GPUShareUSDPerHour(cpuMilli, memMiB)
		if fits && usd < fit.usdPerHour {
			fit = billed{usd, s.Name}
		}
		if !fits && usd < over.usdPerHour {
			over = billed{usd, s.Name}
		}
	}
	v := fit
	if math.IsInf(v.usdPerHour, 1) {
		v = over
	}
	if math.IsInf(v.usdPerHour, 1) {
		v = billed{usdPerHour: t.PriceUSDPerHour}
	}
	b.cache[k] = v
	return v
}
