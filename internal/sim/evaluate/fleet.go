package evaluate

import (
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/hetsev/hetsev/internal/sim/trace"

	"github.com/hetsev/hetsev/pkg/catalog"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

// fleetWindowSeconds is how much of the per-function replay the fleet
// replay replays: its last 2 hours (the shipped trace's busiest, with its
// highest total demand); the seconds before them become the services'
// History.
const fleetWindowSeconds = 2 * 3600

// tightEvery is the tight-SLO rule's k: a service whose FNV-1a 32-bit hash
// of its name is 0 modulo k gets a tight RT_max, where its model admits
// one (TightRTMax).
const tightEvery = 2

// AzureFunctionsFleet is `make evaluate`'s fourth replay: the
// azure-functions replay's 64 services (AzureFunctions(w)) on a fixed
// mixed fleet whose cheapest type cannot hold their load, with tight
// SLOs for some (FunctionsFleet's rules).
func AzureFunctionsFleet(w FunctionWorkload) (Config, error) {
	fn, err := AzureFunctions(w)
	if err != nil {
		return Config{}, err
	}
	return FunctionsFleet(fn)
}

// FunctionsFleet is the fleet replay of fn, a per-function replay
// (functionsConfig): the same services, models, scale and busy shares,
// where GPU types matter because the cheap one runs out and because some
// SLOs are tighter than it can meet. fn is not changed. Rules, fixed in
// advance:
//
//   - window: the last 2 h of fn (fleetWindowSeconds; all of it when
//     shorter), after a warm-up of 300 s as fn's; each service's rates
//     before the window are appended to its History (what the single-type
//     peers plan their pins from). Two hours rather than eight keep the
//     replay near a quarter of azure-functions' time; they hold the
//     shipped trace's highest total demand;
//   - cluster: FleetCluster's fixed fleet, sized on the history's demand,
//     and owned (Config.Owned): every policy is billed all of it and is
//     judged on its excess missed requests at that cost;
//   - tight SLOs: every service with TightService(name) whose model has a
//     TightRTMax gets that RT_max (its SL_min stays its trigger's): the
//     cheapest type per request misses it by its batch latency alone, the
//     fastest meets it with a batch of queueing, so those services need
//     the dearer type whatever it costs. They are part of this replay
//     rather than one of their own because they matter most where the
//     dearer type is also where the cheap type's overflow goes: a tight
//     service has no second choice, so a pin rule by second-choice
//     penalty serves it first, and its GPUs are gone for the others.
//
// On the shipped trace: 16 V100-32GB and 16 T4 servers (32 GPUs each);
// the history's total demand peaks at 30.7 V100s at the threshold; the
// replayed window's peaks at 50.9 T4s or 29.6 V100s, so the T4s hold
// under two thirds of it (and less than its mean, 33.3) and the V100s all
// of it; 9 of the 20 BERT-large services get RT_max 114 ms (T4 114.5 ms,
// V100 38.3 ms).
func FunctionsFleet(fn Config) (Config, error) {
	c := fn
	cut := max(0, len(fn.Rates)-fleetWindowSeconds)
	c.Name = ReplayFunctionsFleet
	c.Rates = fn.Rates[cut:]
	c.Services = slices.Clone(fn.Services)
	tight := 0
	for i := range c.Services {
		s := &c.Services[i]
		if s.Rates != nil {
			s.History = slices.Concat(s.History, s.Rates[:cut])
			s.Rates = s.Rates[cut:]
		}
		if rt, ok := TightRTMax(s.Model, c.Profiles, c.Catalog, c.MaxBatchDelay, c.NetworkMs); ok && TightService(s.Name) {
			s.RTMaxMs = rt
			tight++
		}
	}
	c.MeasureFrom = min(300, len(c.Rates)-1)
	cl, err := FleetCluster(&c)
	if err != nil {
		return Config{}, err
	}
	c.Cluster, c.Owned = cl, true
	c.Trace = fmt.Sprintf("%s; the last %d s (those before as history) on an owned fleet of %d %s and %d %s servers (2 GPUs each), %d services with a tight RT_max",
		fn.Trace, len(c.Rates), cl[0].Nodes, cl[0].GPUType, cl[1].Nodes, cl[1].GPUType, tight)
	return c, nil
}

// TightService says whether the service named name gets a tight RT_max:
// FNV-1a 32-bit of the name modulo tightEvery (2) is 0. It does not look
// at the service's load.
func TightService(name string) bool {
	h := fnv.New32a()
	h.Write([]byte(name))
	return h.Sum32()%tightEvery == 0
}

// TightRTMax is a tight RT_max for model, ms, and whether the model
// admits one: the batch latency of the type with the lowest price per
// request (cheapestPerRequest) rounded down to a whole ms, strictly below
// it, so that type fails HetSev's SLO check (L_i <= RT_max) by its batch
// alone; admitted when the fastest type (least batch latency L_f of the
// model's profiles on the catalog's types) still meets it with a batch of
// queueing: 2 x L_f + the batching timeout (maxBatchDelayS, seconds) +
// networkMs <= RT_max (a request that arrives while a batch runs waits for
// it, then for its own). Just below the cheap type's latency rather than
// tighter, because the replay's deadline-aware queue (modelserver
// DeadlineQueueTimeout) sheds a request that has waited longer than
// RT_max - 2 x L - network: at 114 ms a V100 running BERT-large sheds only
// the requests that arrive in the first 2 ms of a running batch, at 110 ms
// those of its first 6 ms, enough to miss SL_min at 7 to 11 requests/s
// (0.948 to 0.964 in a 30 min slice of this replay). With the repo's profiles only BERT-large
// admits one: 114 ms under the T4's 114.5 ms, against 2 x 38.3 + 5 + 1 =
// 82.6 on the V100; ResNet-50 (22 ms against 2 x 11.5 + 6 = 29) and SSD
// (106 against 150.4) do not.
func TightRTMax(model string, prof catalog.Profiles, cat catalog.Catalog, maxBatchDelayS, networkMs float64) (float64, bool) {
	cheap, ok := cheapestPerRequest(model, prof, cat)
	if !ok {
		return 0, false
	}
	fastest := math.Inf(1)
	for _, p := range prof.ForModel(model) {
		if _, ok := cat.ByName(p.GPUType); ok {
			fastest = min(fastest, p.LatencyMs)
		}
	}
	rt := math.Ceil(cheap.LatencyMs) - 1
	return rt, rt > 0 && 2*fastest+1000*maxBatchDelayS+networkMs <= rt
}

// FleetCluster is the fleet replay's fixed mixed fleet for c's services,
// sized from their demand in the history (Service.History, what an
// operator who bought the fleet had seen): servers shaped like HetSevNodes
// (2 GPUs, 40 CPUs, 62 GiB), V100-32GB and T4 in the HetSev testbed's
// ratio (internal/cluster HetSevTestbed: 4 servers of each, 1:1), n of
// each with
//
//	n = max(1, ceil(D_V100 / 2)),
//
// where D_V100 is the highest, over the history's seconds, of the sum over
// services of rate / (threshold x T_V100) (threshold: the service's, else
// 0.8): the fleet's V100s alone hold the history's peak total demand at
// the saturation threshold, so the fleet does, with the T4s as headroom.
// As long as a V100 serves more than a T4 (every profiled model: 1.5 to 3
// times), the T4s, as many as the V100s, hold less than the peak total
// demand in T4s. A service is not given a GPU of its own: the fleet is
// sized for the load, and 64 services with small loads share it. It is
// an error when a service's model has no profile on either type, or the
// services have no history.
func FleetCluster(c *Config) ([]NodeGroup, error) {
	groups := HetSevNodes(0)
	const fast = 0 // HetSevNodes' V100-32GB
	tput := make([]float64, len(c.Services))
	for i, s := range c.Services {
		p, ok := c.Profiles.Get(s.Model, groups[fast].GPUType)
		if !ok || !(p.ThroughputRPS > 0) {
			return nil, fmt.Errorf("evaluate: fleet: service %s: no %s profile for %s", s.Name, groups[fast].GPUType, s.Model)
		}
		for _, g := range groups[1:] {
			if _, ok := c.Profiles.Get(s.Model, g.GPUType); !ok {
				return nil, fmt.Errorf("evaluate: fleet: service %s: no %s profile for %s", s.Name, g.GPUType, s.Model)
			}
		}
		theta := s.SaturationThreshold
		if theta == 0 {
			theta = heterogeneity.DefaultPolicy().SaturationThreshold
		}
		tput[i] = theta * p.ThroughputRPS
	}
	seconds := 0
	for _, s := range c.Services {
		seconds = max(seconds, len(s.History))
	}
	if seconds == 0 {
		return nil, fmt.Errorf("evaluate: fleet: the services have no history to size the fleet from")
	}
	peak := 0.0
	for sec := range seconds {
		d := 0.0
		for i, s := range c.Services {
			if sec < len(s.History) {
				d += s.History[sec] / tput[i]
			}
		}
		peak = max(peak, d)
	}
	n := max(int(math.Ceil(peak/float64(groups[fast].GPUsPerNode))), 1)
	for i := range groups {
		groups[i].Nodes = n
	}
	return groups, nil
}

// FleetGPUs is one entry of a user's fleet (--fleet): Count GPUs of
// GPUType (catalog name).
type FleetGPUs struct {
	GPUType string
	Count   int
}

// ParseFleet reads --fleet's TYPE=COUNT,...: COUNT GPUs of each catalog
// GPU type TYPE, e.g. "T4=8,V100-32GB=4". It refuses an empty value or
// entry, an entry without "=" or TYPE, a COUNT that is not an integer or
// is below 1, and a TYPE given twice, naming the flag and quoting the
// entry at fault (at most 80 characters, trace.Quote); whether TYPE is in the catalog is FleetNodes' check.
func ParseFleet(s string) ([]FleetGPUs, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("--fleet %s: empty; want TYPE=COUNT,... (GPUs of each catalog type)", trace.Quote(s))
	}
	var out []FleetGPUs
	for _, e := range strings.Split(s, ",") {
		typ, count, ok := strings.Cut(strings.TrimSpace(e), "=")
		typ = strings.TrimSpace(typ)
		if !ok || typ == "" {
			return nil, fmt.Errorf("--fleet: entry %s: want TYPE=COUNT", trace.Quote(e))
		}
		n, err := strconv.Atoi(strings.TrimSpace(count))
		if err != nil {
			return nil, fmt.Errorf("--fleet: entry %s: count is not an integer", trace.Quote(e))
		}
		if n < 1 {
			return nil, fmt.Errorf("--fleet: entry %s: count %d; want at least 1 GPU (leave the type out for none)", trace.Quote(e), n)
		}
		if slices.ContainsFunc(out, func(f FleetGPUs) bool { return f.GPUType == typ }) {
			return nil, fmt.Errorf("--fleet: type %s given twice", trace.Quote(typ))
		}
		out = append(out, FleetGPUs{GPUType: typ, Count: n})
	}
	return out, nil
}

// FleetNodes is the cluster of a user's fleet: per entry, Count GPUs of
// its type in servers shaped like HetSevNodes (2 GPUs, 40 CPUs, 62 GiB),
// Count / 2 of them and one server with 1 GPU when Count is odd. A type
// not in cat is an error naming --fleet and the catalog's types.
func FleetNodes(fleet []FleetGPUs, cat catalog.Catalog) ([]NodeGroup, error) {
	shape := HetSevNodes(0)[0]
	var out []NodeGroup
	for _, f := range fleet {
		if _, ok := cat.ByName(f.GPUType); !ok {
			var names []string
			for _, g := range cat.Types {
				names = append(names, g.Name)
			}
			return nil, fmt.Errorf("--fleet: unknown GPU type %s (the catalog has %s)", trace.Quote(f.GPUType), strings.Join(names, ", "))
		}
		g := shape
		g.GPUType = f.GPUType
		if g.Nodes = f.Count / g.GPUsPerNode; g.Nodes > 0 {
			out = append(out, g)
		}
		if rest := f.Count % g.GPUsPerNode; rest > 0 {
			g.Nodes, g.GPUsPerNode = 1, rest
			out = append(out, g)
		}
	}
	return out, nil
}
