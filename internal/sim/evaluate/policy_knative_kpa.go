package evaluate

import (
	"math"
	"time"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/placement"
)

// PolicyKnativeKPA is Knative Serving's default autoscaler, the Knative
// Pod Autoscaler, on requests/s, per service on the single cheapest GPU
// type that meets the SLO, one instance per whole GPU.
const PolicyKnativeKPA = "knative-kpa"

// The KPA's defaults (knative/serving pkg/autoscaler/config/config.go,
// defaultConfig; the config-autoscaler ConfigMap keys in brackets).
const (
	kpaStableWindowSeconds = 60   // [stable-window]
	kpaPanicWindowPercent  = 10   // [panic-window-percentage] of the stable window
	kpaPanicThreshold      = 2.0  // [panic-threshold-percentage] 200 %
	kpaMaxScaleUpRate      = 1000 // [max-scale-up-rate]
	kpaMaxScaleDownRate    = 2    // [max-scale-down-rate]
	kpaTickSeconds         = 2    // the autoscaler's tick interval (pkg/autoscaler/scaling, tickInterval)
)

// knativeKPAPolicy is PolicyKnativeKPA.
//
// Source: knative/serving pkg/autoscaler/scaling/autoscaler.go
// (autoscaler.Scale) with the defaults of pkg/autoscaler/config/config.go,
// and the KPA documentation
// (https://knative.dev/docs/serving/autoscaling/kpa-specific/). Every tick
// (2 s):
//
//   - observed stable and panic values: the revision's requests/s averaged
//     over the last 60 s and the last 6 s (the stable window, a knob its
//     users set per revision with autoscaling.knative.dev/window, and 10 %
//     of it; 1 s buckets; fewer at the start
//     of the trace, as a window average over the buckets it has);
//   - ready = max(1, ready pods); maxScaleUp = ceil(1000 x ready),
//     maxScaleDown = floor(ready / 2);
//   - desired stable = ceil(stable / target), desired panic = ceil(panic /
//     target), each clamped to [maxScaleDown, maxScaleUp];
//   - over the panic threshold when ceil(panic / target) / ready >= 2: enter
//     panic mode (or extend it: the panic time is set to now); leave it at the
//     first tick not over the threshold more than a stable window (60 s)
//     after the last tick that was;
//   - in panic mode the desired count is max(stable, panic) and never
//     below the highest count of this panic (no scale-down in panic);
//   - min scale 1 (no scale to zero: every policy keeps an instance), max scale the
//     GPUs of its suitable types; the Deployment's replicas are set to the
//     result, its pods on the pinned type while it has room, then on the
//     next suitable type (a preferred node affinity, spill).
//
// target is SaturationThreshold x T_i requests/s per pod (Knative's target
// times its target utilization; our 0.8, hetsev's threshold, where Knative
// defaults to 0.7 of its 200 requests/s default target), on the type
// singleType pins (as k8s-hpa-best-type).
//
// Where it simplifies: the metric is requests offered to the service
// per second (what the activator and queue-proxies count; here including
// requests that found no ready pod); ready pods are the instances past
// their launch time; scale-to-zero, the activator, target burst capacity
// and the scale-down delay (0 s by default) are left out; pods beyond the
// suitable types' free GPUs are not created; scale-in removes the newest
// pods, fallback ones first.
type knativeKPAPolicy struct {
	// stableWindow and panicWindow are the two averaging windows,
	// seconds: Knobs.KPAStableWindow (default kpaStableWindowSeconds)
	// and kpaPanicWindowPercent of it, at least 1 s.
	stableWindow, panicWindow int
	gpuType                   []string   // per service, catalog name
	fallback                  [][]string // per service, fallbackTypes (spill)
	target                    []float64  // per service, requests/s per pod
	minScale                  int
	maxScale                  []int
	state                     []kpaState
}

// kpaState is one revision's panic state.
type kpaState struct {
	panicking    bool
	panicTime    float64 // trace second of the last tick over the panic threshold
	maxPanicPods int     // the highest desired count of the current panic
}

func newKnativeKPAPolicy(cfg *Config) (*knativeKPAPolicy, error) {
	p := &knativeKPAPolicy{minScale: max(1, cfg.Knobs.MinReplicas), stableWindow: kpaStableWindowSeconds}
	if w := int(cfg.Knobs.KPAStableWindow / time.Second); w > 0 {
		p.stableWindow = w
	}
	p.panicWindow = max(1, p.stableWindow*kpaPanicWindowPercent/100)
	for _, s := range cfg.Services {
		name, target, gpus, err := singleTypeTarget(cfg, s)
		if err != nil {
			return nil, err
		}
		fb := fallbackTypes(cfg, s)
		for _, t := range fb {
			gpus += gpusOf(cfg, t)
		}
		p.gpuType, p.fallback = append(p.gpuType, name), append(p.fallback, fb)
		p.target = append(p.target, target)
		p.maxScale = append(p.maxScale, max(gpus, p.minScale))
		p.state = append(p.state, kpaState{})
	}
	return p, nil
}

func (p *knativeKPAPolicy) decide(svc int, v view) []int {
	i := typeIndexOf(v, p.gpuType[svc])
	if i < 0 || len(v.offered) == 0 {
		return make([]int, len(v.types)) // no data yet: Knative keeps the scale (ErrNoData)
	}
	current, readyPods := 0, 0
	for _, t := range v.types {
		current += t.running
		readyPods += t.ready
	}
	want := p.scale(svc, v.now, v.meanRate(p.stableWindow), v.meanRate(p.panicWindow), readyPods)
	return spill(v, i, fallbackIndices(v, p.fallback[svc]), want-current)
}

// scale is autoscaler.Scale for service svc at trace second now, with
// the stable and panic window averages in requests/s and the ready pods:
// the desired pod count, within [minScale, maxScale].
func (p *knativeKPAPolicy) scale(svc int, now, stable, panic float64, readyPods int) int {
	st := &p.state[svc]
	target := p.target[svc]
	ready := math.Max(1, float64(readyPods))
	maxUp := math.Ceil(kpaMaxScaleUpRate * ready)
	maxDown := math.Floor(ready / kpaMaxScaleDownRate)
	dspc := math.Ceil(stable / target)
	dppc := math.Ceil(panic / target)
	desiredStable := int(math.Min(math.Max(dspc, maxDown), maxUp))
	desiredPanic := int(math.Min(math.Max(dppc, maxDown), maxUp))

	over := dppc/ready >= kpaPanicThreshold
	switch {
	case over:
		st.panicking, st.panicTime = true, now
	case st.panicking && st.panicTime+float64(p.stableWindow) < now:
		st.panicking, st.maxPanicPods = false, 0
	}
	desired := desiredStable
	if st.panicking {
		desired = max(desired, desiredPanic)
		st.maxPanicPods = max(st.maxPanicPods, desired)
		desired = st.maxPanicPods
	}
	return min(max(desired, p.minScale), p.maxScale[svc])
}

func (p *knativeKPAPolicy) decisionInterval() int      { return kpaTickSeconds }
func (p *knativeKPAPolicy) history() int               { return p.stableWindow }
func (p *knativeKPAPolicy) serviceType(svc int) string { return p.gpuType[svc] }
func (p *knativeKPAPolicy) wholeGPU() bool             { return true }
func (p *knativeKPAPolicy) instant() bool              { return false }
func (p *knativeKPAPolicy) placer() placement.Placer   { return placement.Placer{} }
func (p *knativeKPAPolicy) demand(_ int, _ string, base gpuinventory.Demand) gpuinventory.Demand {
	return base
}
