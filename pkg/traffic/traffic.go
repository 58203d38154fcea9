// Package traffic splits a ModelService's requests across its GPU types in
// proportion to their serving capacity T_i N_i: it builds an Istio
// VirtualService with one weighted route per GPU-type subset and a
// DestinationRule defining the subsets, which pkg/scaler writes. Without it
// a round-robin split sends a T4 instance as many requests as a V100 one,
// which has twice its throughput, and the T4 misses the SLO while the V100
// idles.
package traffic

import (
	"math"
	"sort"
	"strings"

	networkingapi "istio.io/api/networking/v1alpha3"
)

// Share is one GPU type's part of a service.
type Share struct {
	GPUType     string
	Labels      map[string]string // selects the type's pods
	CapacityRPS float64           // T_i N_i, requests/s
}

// SubsetName is the DestinationRule subset of a GPU type, e.g. "v100-32gb".
func SubsetName(gpuType string) string {
	return strings.ToLower(strings.NewReplacer(" ", "-", "_", "-", ".", "-").Replace(gpuType))
}

// Weights returns route weights (percent, summing to 100) proportional to
// the shares' capacities, by the largest-remainder method so that rounding
// never loses a percent. ok is false when no share has capacity.
func Weights(shares []Share) (w []int32, ok bool) {
	total := 0.0
	for _, s := range shares {
		if s.CapacityRPS > 0 && !math.IsInf(s.CapacityRPS, 0) {
			total += s.CapacityRPS
		}
	}
	if total <= 0 {
		return nil, false
	}
	w = make([]int32, len(shares))
	type rem struct {
		i int
		r float64
	}
	var rems []rem
	sum := int32(0)
	for i, s := range shares {
		if !(s.CapacityRPS > 0) || math.IsInf(s.CapacityRPS, 0) {
			continue
		}
		exact := 100 * s.CapacityRPS / total
		w[i] = int32(math.Floor(exact))
		sum += w[i]
		rems = append(rems, rem{i, exact - math.Floor(exact)})
	}
	sort.SliceStable(rems, func(a, b int) bool { return rems[a].r > rems[b].r })
	for k := 0; sum < 100 && k < len(rems); k++ {
		w[rems[k].i]++
		sum++
	}
	return w, true
}

// Routes returns the specs of the VirtualService and DestinationRule that
// route host to the shares' subsets (one per GPU type, selecting its pods by
// Labels) with capacity-proportional weights (Weights), and the weights.
// ok is false when no share has capacity: nothing serves yet, and the
// routes written before should be left as they are.
func Routes(host string, shares []Share) (vs *networkingapi.VirtualService, dr *networkingapi.DestinationRule, weights []int32, ok bool) {
	weights, ok = Weights(shares)
	if !ok {
		return nil, nil, nil, false
	}
	dr = &networkingapi.DestinationRule{Host: host}
	route := &networkingapi.HTTPRoute{Name: "capacity-weighted"}
	for i, s := range shares {
		dr.Subsets = append(dr.Subsets, &networkingapi.Subset{Name: SubsetName(s.GPUType), Labels: s.Labels})
		route.Route = append(route.Route, &networkingapi.HTTPRouteDestination{
			Destination: &networkingapi.Destination{Host: host, Subset: SubsetName(s.GPUType)},
			Weight:      weights[i],
		})
	}
	vs = &networkingapi.VirtualService{Hosts: []string{host}, Http: []*networkingapi.HTTPRoute{route}}
	return vs, dr, weights, true
}
