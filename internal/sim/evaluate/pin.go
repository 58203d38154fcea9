package evaluate

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

// plannedPeakRPS is the peak an operator plans service s's capacity
// for, requests/s: the highest rate of its History, the rates before the
// replayed window (0 when it has none), never the replayed rates.
func plannedPeakRPS(s Service) float64 { return s.History.Peak() }

// servicePin is the GPU type a single-type peer runs one service on.
type servicePin struct {
	gpuType       string  // catalog name
	throughputRPS float64 // T_i of the service's model on it, requests/s
	// fallback are the service's other suitable types, best first: where
	// a preferred node affinity for gpuType lets the scheduler put its
	// pods when gpuType is full.
	fallback []string
}

// pinSet is pinTypes' outcome for one Config: the pin of each service by
// name, or the error that no pin could be made.
type pinSet struct {
	byName map[string]servicePin
	err    error
}

// serviceOffers are the offers of the cluster's GPU types (Config.gpuTypes
// order) that have a profile of s's model and a catalog price.
func serviceOffers(cfg *Config, s Service) []typeOffer {
	var offers []typeOffer
	for _, name := range cfg.gpuTypes() {
		g, ok := cfg.Catalog.ByName(name)
		prof, okp := cfg.Profiles.Get(s.Model, name)
		if !ok || !okp {
			continue
		}
		offers = append(offers, typeOffer{gpuType: name, priceUSDPerHour: g.PriceUSDPerHour, throughputRPS: prof.ThroughputRPS, latencyMs: prof.LatencyMs})
	}
	return offers
}

// pinTypes pins every service of cfg to one GPU type by singleType's rule:
// in decreasing order of the penalty of the second choice (USD/h per
// request/s), each to its first suitable type with room for
// max(1, ceil(plannedPeakRPS / (threshold x T_i))) GPUs of those the
// cluster has, else to its first choice. The threshold is the service's
// SaturationThreshold, else heterogeneity.DefaultPolicy's (0.8). A service
// whose model has no profile on the cluster's types is an error.
func pinTypes(cfg *Config) *pinSet {
	room := map[string]int{}
	for _, g := range cfg.Cluster {
		room[g.GPUType] += g.Nodes * g.GPUsPerNode
	}
	type entry struct {
		svc     int
		offers  []typeOffer
		order   []int
		penalty float64 // USD/h per request/s; +Inf with one choice
	}
	entries := make([]entry, len(cfg.Services))
	for i, s := range cfg.Services {
		offers := serviceOffers(cfg, s)
		order := suitableOrder(offers, s.RTMaxMs)
		if len(order) == 0 {
			return &pinSet{err: fmt.Errorf("service %s: no GPU type of the cluster has a profile for %s", s.Name, s.Model)}
		}
		penalty := math.Inf(1)
		if len(order) > 1 {
			penalty = offers[order[1]].perRequest() - offers[order[0]].perRequest()
		}
		entries[i] = entry{svc: i, offers: offers, order: order, penalty: penalty}
	}
	slices.SortStableFunc(entries, func(a, b entry) int { return cmp.Compare(b.penalty, a.penalty) })
	ps := &pinSet{byName: map[string]servicePin{}}
	for _, e := range entries {
		s := cfg.Services[e.svc]
		first := e.offers[e.order[0]]
		pin := servicePin{gpuType: first.gpuType, throughputRPS: first.throughputRPS}
		if peak := plannedPeakRPS(s); peak > 0 {
			theta := s.SaturationThreshold
			if theta == 0 {
				theta = heterogeneity.DefaultPolicy().SaturationThreshold
			}
			for _, k := range e.order {
				o := e.offers[k]
				if !(o.throughputRPS > 0) {
					continue
				}
				need := max(1, int(math.Ceil(peak/(theta*o.throughputRPS))))
				if need <= room[o.gpuType] {
					room[o.gpuType] -= need
					pin = servicePin{gpuType: o.gpuType, throughputRPS: o.throughputRPS}
					break
				}
			}
		}
		for _, k := range e.order {
			if t := e.offers[k].gpuType; t != pin.gpuType {
				pin.fallback = append(pin.fallback, t)
			}
		}
		ps.byName[s.Name] = pin
	}
	return ps
}
