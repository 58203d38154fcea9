// Package solverbench compares the two solvers of pkg/heterogeneity, the
// greedy heuristic of HetSev section 4.1 and the exact branch and bound of
// the same section's ILP (ilp.SolveExact), on a fixed, seeded set of
// one-shot scaling decisions, for `make bench-scaler` (cmd/bench-scaler).
//
// Instances (Generate) mix, per decision:
//
//   - a model of the repo's data (catalog.DefaultProfiles: resnet50,
//     ssd-resnet50, bert-large, each profiled on V100-32GB and T4) with RT_max
//     from HetSev section 6 (400 ms for ResNet-50, 900 ms for SSD-ResNet50;
//     bert-large gets the Transformer's 1200 ms, HetSev's closest model);
//   - prices from catalog.DefaultCatalog (AWS on-demand, USD/h), in
//     half of the instances perturbed per type by a log-uniform factor in
//     [0.5, 2];
//   - 2 to 8 GPU types: the two measured ones plus SYNTHETIC types, named
//     "synthetic-<k>-from-<base>", each derived from a measured type by
//     scaling its throughput T by a log-uniform factor f in [0.25, 4], its
//     batch latency by 1/sqrt(f) and its price by f times a log-uniform
//     factor in [0.5, 2]. They are not measurements; they exist to test the
//     solvers on up to 8 types;
//   - running instances N_i in 0..20 (drawn up to a per-instance cap of 2, 5
//     or 20 so that both scale-outs and scale-ins occur), free room
//     MaxAdditional_i in 0..16, arrival rate W uniform in [0, 3000]
//     requests/s;
//   - policies: saturation threshold 0.7, 0.8 or 0.9, lambda 0, 0.01 or 0.05
//     per second, MinReplicas 1-3, in 30 % of the instances a MaxReplicas cap,
//     scale-in hysteresis 0 or 0.1, and in 25 % the latency-model SLO check
//     (SL_min 98 %, co-location inflation 1 or 1.18).
//
// Each instance is decided once as Autoscaler.Decide would in a fresh
// autoscaler with no scale-out period and no cool-down: a scale-out when the
// saturation is above the threshold (or replicas are short), else a scale-in.
// Draws are kept until half the instances are scale-outs and half scale-ins.
// Run compares the actions and times the solvers; see Report for what is
// compared and Report.ResultLine for the headline numbers.
package solverbench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/hetsev/hetsev/pkg/catalog"

	"github.com/hetsev/hetsev/pkg/heterogeneity"
	"github.com/hetsev/hetsev/pkg/heterogeneity/ilp"
)

// Config sets the size and seed of a bench run.
type Config struct {
	// Instances is the number of decision instances (>= 1), half of them
	// scale-outs and half scale-ins.
	Instances int
	// Seed seeds the generator; the same seed gives the same instances.
	Seed uint64
	// Repetitions is how many times each solver is timed on each instance
	// (>= 1).
	Repetitions int
}

// DefaultConfig is the configuration of `make bench-scaler`: 20,000
// instances (10,000 scale-out and 10,000 scale-in decisions), seed 4, 5
// timed repetitions per instance and solver.
func DefaultConfig() Config {
	return Config{Instances: 20_000, Seed: 4, Repetitions: 5}
}

// Instance is one decision to make.
type Instance struct {
	// ID numbers the instance from 0 in generation order.
	ID int
	// Model is the profiled model, e.g. "resnet50".
	Model string
	// Synthetic counts the synthetic GPU types among Obs.Types.
	Synthetic int
	// PricesPerturbed is true when catalog prices were scaled.
	PricesPerturbed bool
	// Direction is the decision the triggers call for: ScaleOutOnly or
	// ScaleInOnly.
	Direction ilp.Direction
	// Policy is the policy of the decision; Run sets Solver.
	Policy heterogeneity.Policy
	// Obs is the observation; Obs.Types has 2 to 8 types.
	Obs heterogeneity.Observation
}

// rtMaxMs is the response-time SLO per model, ms (HetSev section 6;
// bert-large takes the Transformer's).
var rtMaxMs = map[string]float64{"resnet50": 400, "ssd-resnet50": 900, "bert-large": 1200}

// measuredTypes are the GPU types of the catalog the instances start from:
// HetSev's testbed's two, each profiled for every model. Other catalog
// types are left out so that the instances (and the bench's numbers) stay
// those of the seed whatever else the catalog holds.
var measuredTypes = []string{"V100-32GB", "T4"}

// benchNow is the observation time of every instance (no timing state is
// carried between decisions).
var benchNow = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// Generate returns cfg.Instances decision instances drawn from cfg.Seed (see
// the package documentation). It fails when the embedded profiles or
// catalog cannot be loaded or cfg is out of range.
func Generate(cfg Config) ([]Instance, error) {
	if cfg.Instances < 1 || cfg.Repetitions < 1 {
		return nil, fmt.Errorf("solverbench: Instances and Repetitions must be >= 1, got %d and %d", cfg.Instances, cfg.Repetitions)
	}
	profiles, err := catalog.DefaultProfiles()
	if err != nil {
		return nil, err
	}
	catalog, err := catalog.DefaultCatalog()
	if err != nil {
		return nil, err
	}
	models := profiles.Models()
	base := map[string][]heterogeneity.TypeState{}
	for _, m := range models {
		for _, name := range measuredTypes {
			g, okg := catalog.ByName(name)
			p, ok := profiles.Get(m, name)
			if !ok || !okg {
				continue
			}
			t, err := heterogeneity.NewTypeState(p, g, 0, 0)
			if err != nil {
				return nil, err
			}
			base[m] = append(base[m], t)
		}
		if _, ok := rtMaxMs[m]; !ok || len(base[m]) == 0 {
			return nil, fmt.Errorf("solverbench: no RT_max or no profiled GPU type for model %q", m)
		}
	}

	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6865747365))
	logU := func(lo, hi float64) float64 {
		return math.Exp(math.Log(lo) + rng.Float64()*(math.Log(hi)-math.Log(lo)))
	}
	out := make([]Instance, 0, cfg.Instances)
	// Half the instances are scale-outs, half scale-ins: draws of the
	// direction that is already full are discarded.
	wantOut := (cfg.Instances + 1) / 2
	wantIn := cfg.Instances - wantOut
	for len(out) < cfg.Instances {
		model := models[rng.IntN(len(models))]
		inst := Instance{ID: len(out), Model: model}
		types := append([]heterogeneity.TypeState(nil), base[model]...)
		if rng.IntN(2) == 0 {
			inst.PricesPerturbed = true
			for i := range types {
				types[i].PriceUSDPerHour *= logU(0.5, 2)
			}
		}
		k := len(types)
		if rng.IntN(10) >= 4 {
			k = 3 + rng.IntN(6) // 3..8
		}
		for j := len(types); j < k; j++ {
			from := types[rng.IntN(len(base[model]))]
			f := logU(0.25, 4)
			s := from
			s.GPUType = fmt.Sprintf("synthetic-%d-from-%s", j, from.GPUType)
			s.ThroughputRPS *= f
			s.LatencyMs /= math.Sqrt(f)
			s.PriceUSDPerHour *= f * logU(0.5, 2)
			types = append(types, s)
			inst.Synthetic++
		}
		maxN := []int{2, 5, 20}[rng.IntN(3)]
		for i := range types {
			types[i].Running = rng.IntN(maxN + 1)
			types[i].MaxAdditional = rng.IntN(17)
		}

		pol := heterogeneity.DefaultPolicy()
		pol.SaturationThreshold = []float64{0.7, 0.8, 0.9}[rng.IntN(3)]
		pol.Lambda = []float64{0, 0.01, 0.05}[rng.IntN(3)]
		pol.ScaleOutPeriod = 0
		pol.MinReplicas = 1 + rng.IntN(3)
		if rng.IntN(10) < 3 {
			pol.MaxReplicas = pol.MinReplicas + rng.IntN(31)
		}
		pol.ScaleInHysteresis = []float64{0, 0.1}[rng.IntN(2)]
		pol.RTMaxMs = rtMaxMs[model]
		if rng.IntN(4) == 0 {
			pol.SLOCheck = heterogeneity.SLOCheckModel
			infl := []float64{1, 1.18}[rng.IntN(2)]
			for i := range types {
				types[i].LatencyInflation = infl
			}
		}
		inst.Policy = pol
		inst.Obs = heterogeneity.Observation{Now: benchNow, ArrivalRate: rng.Float64() * 3000, Types: types}
		if err := inst.Obs.Validate(); err != nil {
			return nil, fmt.Errorf("solverbench: instance %d: %w", inst.ID, err)
		}
		inst.Direction = direction(inst.Obs, pol)
		if inst.Direction == ilp.ScaleOutOnly {
			if wantOut == 0 {
				continue
			}
			wantOut--
		} else {
			if wantIn == 0 {
				continue
			}
			wantIn--
		}
		out = append(out, inst)
	}
	return out, nil
}

// direction repeats the triggers of Autoscaler.Decide for a fresh autoscaler
// with no scale-out period: scale out when fewer than MinReplicas run, when
// requests arrive and nothing runs, or when the saturation is above the
// threshold; scale in otherwise.
func direction(obs heterogeneity.Observation, p heterogeneity.Policy) ilp.Direction {
	total := 0
	for _, t := range obs.Types {
		total += t.Running
	}
	c := heterogeneity.Capacity(obs.Types, nil)
	if total < p.MinReplicas || (obs.ArrivalRate > 0 && c <= 0) || heterogeneity.Saturation(obs.ArrivalRate, obs.Types) > p.SaturationThreshold {
		return ilp.ScaleOutOnly
	}
	return ilp.ScaleInOnly
}
