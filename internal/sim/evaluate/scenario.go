package evaluate

import (
	"fmt"

	"github.com/hetsev/hetsev/pkg/catalog"

	"github.com/hetsev/hetsev/internal/sim/trace"
	"github.com/hetsev/hetsev/pkg/interference"
)

// Preparation is how a raw trace becomes the replayed rates (HetSev 6,
// as `make demo` prepares its window).
type Preparation struct {
	// FillGaps holds the last rate over runs of zero seconds: in the
	// Twitter trace they are gaps in the data (data/README.md), not idle
	// time. Leave it off for traces of one timestamp per request, whose
	// empty seconds are real.
	FillGaps bool
	// SmoothWindow and SmoothStep average the rate over the preceding
	// window seconds, recomputed every step seconds (HetSev 6: 120 and
	// 15); 0 keeps the raw rates.
	SmoothWindow, SmoothStep int
	// PeakRPS scales the rates so that the peak is this many requests/s;
	// 0 keeps the trace's own scale.
	PeakRPS float64
}

// Prepare applies p to raw and describes what it did.
func (p Preparation) Prepare(raw trace.Rates) (trace.Rates, string) {
	r := raw
	desc := fmt.Sprintf("%d s", len(raw))
	if p.FillGaps {
		r = r.FillGaps()
		desc += ", zero runs held at the last rate (data gaps)"
	}
	if p.SmoothWindow > 1 && p.SmoothStep > 0 {
		r = r.Smooth(p.SmoothWindow, p.SmoothStep)
		desc += fmt.Sprintf(", %d s averages in %d s steps", p.SmoothWindow, p.SmoothStep)
	}
	if p.PeakRPS > 0 {
		var f float64
		r, f = r.ScaleToPeak(p.PeakRPS)
		desc += fmt.Sprintf(", scaled x%.3g to a peak of %.0f requests/s", f, p.PeakRPS)
	}
	return r, desc + fmt.Sprintf(" (mean %.1f requests/s)", r.Mean())
}

// HetSevNodes is the cluster of the replays: n servers of each GPU type
// shaped like the demo's HetSev testbed (internal/cluster HetSevTestbed: 2
// GPUs, 40 CPUs and 62 GiB per server). The demo has n = 4; the
// evaluation sizes n so that no policy runs out of GPUs, so that costs
// compare policies rather than a full cluster.
func HetSevNodes(n int) []NodeGroup {
	return []NodeGroup{
		{GPUType: "V100-32GB", Nodes: n, GPUsPerNode: 2, CPUMilli: 40000, MemoryMiB: 62 * 1024},
		{GPUType: "T4", Nodes: n, GPUsPerNode: 2, CPUMilli: 40000, MemoryMiB: 62 * 1024},
	}
}

// Base returns a Config with the repo's catalog, instance SKUs and profiles, the default
// co-location model (fitted, time-slicing), the demo's knobs and server settings, and cluster.
func Base(name, desc string, rates trace.Rates, cluster []NodeGroup, services ...Service) (Config, error) {
	cat, err := catalog.DefaultCatalog()
	if err != nil {
		return Config{}, err
	}
	prof, err := catalog.DefaultProfiles()
	if err != nil {
		return Config{}, err
	}
	skus, err := catalog.DefaultSKUs(cat)
	if err != nil {
		return Config{}, err
	}
	return Config{
		Name: name, Trace: desc, Rates: rates, Services: services, Cluster: cluster,
		Catalog: cat, Profiles: prof, SKUs: skus, Knobs: DemoKnobs(), Colocation: interference.FittedColocation(),
		MaxBatchDelay: 0.005, NetworkMs: 1, Seed: 1,
	}, nil
}

// DemoServices are `make demo`'s services: ResNet-50 and SSD sharing the
// trace 60/40 with HetSev 6's RT_max of 400 ms and 900 ms, SSD with the
// demo's saturation threshold 0.7.
func DemoServices() []Service {
	return []Service{
		{Name: "resnet50", Model: "resnet50", Share: 0.6, RTMaxMs: 400},
		{Name: "ssd", Model: "ssd-resnet50", Share: 0.4, RTMaxMs: 900, SaturationThreshold: 0.7},
	}
}

// Twitter is `make evaluate`'s first replay: the repo's 7 days of the
// Twitter trace, prepared as the demo prepares its window (gaps filled,
// 120 s averages in 15 s steps, peak scaled to peakRPS), for the demo's
// services on HetSevNodes(nodesPerType).
func Twitter(peakRPS float64, nodesPerType int) (Config, error) {
	raw, err := trace.Twitter()
	if err != nil {
		return Config{}, err
	}
	rates, desc := Preparation{FillGaps: true, SmoothWindow: 120, SmoothStep: 15, PeakRPS: peakRPS}.Prepare(raw)
	c, err := Base(ReplayTwitter, "twitter_rps_days01-07: "+desc, rates, HetSevNodes(nodesPerType), DemoServices()...)
	c.MeasureFrom = 300 // the demo's warm-up
	return c, err
}

// AzureCode is `make evaluate`'s second replay: the Azure LLM inference
// code trace (one timestamp per request) for one BERT-large service with
// RT_max 1200 ms (HetSev 6's Transformer, the closest of its models),
// smoothed like the Twitter trace and scaled to peakRPS.
func AzureCode(peakRPS float64, nodesPerType int) (Config, error) {
	raw, err := trace.AzureCode()
	if err != nil {
		return Config{}, err
	}
	rates, desc := Preparation{SmoothWindow: 120, SmoothStep: 15, PeakRPS: peakRPS}.Prepare(raw)
	c, err := Base(ReplayAzureCode, "AzureLLMInferenceTrace_code: "+desc, rates, HetSevNodes(nodesPerType),
		Service{Name: "bert-large", Model: "bert-large", Share: 1, RTMaxMs: 1200})
	c.MeasureFrom = 120 // the first smoothing window
	return c, err
}

// AzureFunctions is `make evaluate`'s third replay, the multi-tenant one:
// the repo's 8 hours of 500 Azure Functions (per-minute invocations,
// data/traces/azure2019_invitro_500func_8h.csv), the busiest w.Services of
// them (64 by default) as one inference service each, with models, SLOs,
// the scale of the load and the cluster chosen by FunctionWorkload's
// rules.
func AzureFunctions(w FunctionWorkload) (Config, error) {
	fs, err := trace.AzureFunctions()
	if err != nil {
		return Config{}, err
	}
	base, err := Base(ReplayAzureFunctions, "", nil, nil)
	if err != nil {
		return Config{}, err
	}
	return functionsConfig(ReplayAzureFunctions, fs, w, base)
}
