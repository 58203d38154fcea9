package evaluate

import (
	"testing"

	"github.com/hetsev/hetsev/internal/sim/trace"
)

// smallFleet is one T4 server with t4 GPUs and one V100-32GB server with
// v100 GPUs (40 CPUs, 62 GiB each).
func smallFleet(t4, v100 int) []NodeGroup {
	return []NodeGroup{
		{GPUType: "V100-32GB", Nodes: 1, GPUsPerNode: v100, CPUMilli: 40000, MemoryMiB: 62 * 1024},
		{GPUType: "T4", Nodes: 1, GPUsPerNode: t4, CPUMilli: 40000, MemoryMiB: 62 * 1024},
	}
}

// pinsOf is every service's pinned type in cfg, by name.
func pinsOf(t *testing.T, cfg *Config) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, s := range cfg.Services {
		name, _, _, err := singleType(cfg, s)
		if err != nil {
			t.Fatal(err)
		}
		out[s.Name] = name
	}
	return out
}

// TestPinTypesBySecondChoicePenalty works singleType's rule by hand on the
// repo's prices and profiles, in USD/h per request/s (C_i / T_i):
//
//   - resnet50: T4 0.526 / 363 = 0.00145, V100 3.9015 / 709 = 0.00550,
//     penalty of the second choice 0.00405;
//   - bert-large: T4 0.526 / 69.3 = 0.00759, V100 3.9015 / 208 = 0.01876,
//     penalty 0.01117;
//   - ssd-resnet50: T4 0.526 / 37.71 = 0.01395, V100 3.9015 / 55.41 =
//     0.07041, penalty 0.05646.
//
// Fleet: 3 T4 and 2 V100. Services in Config order r (resnet50, planned
// peak 200 requests/s), b (bert-large, 50) and s (ssd-resnet50, 40); GPUs
// at the threshold 0.8: r 200 / 290.4 -> 1 T4; b 50 / 55.44 -> 1 T4;
// s 40 / 30.17 -> 2 T4 (or 40 / 44.33 -> 1 V100). By penalty s goes first
// and takes 2 T4, then b the last T4, and r, the one that does not fit,
// goes to its second choice, a V100. (In Config order r and b would take
// 2 T4 and s would go to a V100; without room, all three to T4.)
//
// Without History every service gets its first choice, T4, room ignored.
// A fourth service t, bert-large with RT_max 90 ms (the T4's 114.5 ms
// batch misses it, the V100's 38.3 ms meets it), has one choice: penalty
// +Inf, so it goes first and its planned peak 200 takes both V100
// (200 / 166.4 -> 2); s and b then take the 3 T4 and r has room nowhere:
// its first choice, T4.
func TestPinTypesBySecondChoicePenalty(t *testing.T) {
	peak := func(rps float64) trace.Rates { return trace.Rates{rps / 2, rps, 0} }
	svcs := []Service{
		{Name: "r", Model: "resnet50", Share: 0.3, RTMaxMs: 400, History: peak(200)},
		{Name: "b", Model: "bert-large", Share: 0.3, RTMaxMs: 1200, History: peak(50)},
		{Name: "s", Model: "ssd-resnet50", Share: 0.3, RTMaxMs: 900, History: peak(40)},
	}
	cfg, err := Base("pin", "pin", constant(0, 10), smallFleet(3, 2), svcs...)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"s": "T4", "b": "T4", "r": "V100-32GB"}
	for name, typ := range pinsOf(t, &cfg) {
		if typ != want[name] {
			t.Errorf("3 T4 + 2 V100: %s pinned to %s, want %s", name, typ, want[name])
		}
	}

	noHistory := cfg
	noHistory.Services = nil
	for _, s := range svcs {
		s.History = nil
		noHistory.Services = append(noHistory.Services, s)
	}
	for name, typ := range pinsOf(t, &noHistory) {
		if typ != "T4" {
			t.Errorf("no History: %s pinned to %s, want T4 (first choice, room ignored)", name, typ)
		}
	}

	tight := cfg
	tight.Services = append(append([]Service(nil), svcs...),
		Service{Name: "t", Model: "bert-large", Share: 0.1, RTMaxMs: 90, History: peak(200)})
	want = map[string]string{"t": "V100-32GB", "s": "T4", "b": "T4", "r": "T4"}
	for name, typ := range pinsOf(t, &tight) {
		if typ != want[name] {
			t.Errorf("with a tight service: %s pinned to %s, want %s", name, typ, want[name])
		}
	}
}

// TestSingleTypePodsSpillWhenTypeFull replays the single-type peers on a
// fleet of 2 T4 and 2 V100 for 20 min. ssd plans for 50 requests/s (2 T4
// at 0.8 x 37.71 = 30.17 each) and r for 100 (1 T4): ssd, the larger
// penalty, takes both T4 and r goes to a V100. ssd then gets 100
// requests/s, 4 pods' worth: its type is full at 2 pods, and its
// Deployment's preferred node affinity lets the rest run on the free
// V100 (its next suitable type), so it meets its SLO with never more than
// 2 pods on T4s; r meets its SLO on its V100.
func TestSingleTypePodsSpillWhenTypeFull(t *testing.T) {
	const secs = 1200
	plan := func(rps float64) trace.Rates { return constant(rps, 600) }
	svcs := []Service{
		{Name: "r", Model: "resnet50", Rates: constant(100, secs), RTMaxMs: 400, History: plan(100)},
		{Name: "ssd", Model: "ssd-resnet50", Rates: constant(100, secs), RTMaxMs: 900, History: plan(50)},
	}
	cfg, err := Base("spill", "spill", constant(200, secs), smallFleet(2, 2), svcs...)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MeasureFrom = 120
	cfg.Policies = []string{PolicyHPABestType, PolicyKnativeKPA}
	res, err := Evaluate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hours := float64(secs-cfg.MeasureFrom) / 3600
	for _, p := range res.Policies {
		r, ssd := p.Services[0], p.Services[1]
		t.Logf("%s: r %v attainment %.3f; ssd %v attainment %.3f", p.Policy, r.InstanceHours, r.SLOAttainment, ssd.InstanceHours, ssd.SLOAttainment)
		if r.InstanceHours["T4"] > 0 || r.InstanceHours["V100-32GB"] == 0 || !r.MeetsSLO {
			t.Errorf("%s: r instance-hours %v, attainment %.3f; want V100 only, SLO met", p.Policy, r.InstanceHours, r.SLOAttainment)
		}
		if ssd.InstanceHours["V100-32GB"] == 0 || ssd.InstanceHours["T4"] > 2*hours+1e-9 {
			t.Errorf("%s: ssd instance-hours %v; want at most 2 pods on T4 (%.3f h) and the rest on the free V100", p.Policy, ssd.InstanceHours, 2*hours)
		}
		if !ssd.MeetsSLO {
			t.Errorf("%s: ssd attainment %.3f with its type full and a V100 free; want its SLO met", p.Policy, ssd.SLOAttainment)
		}
	}
}

// TestSpill: a rise fills the pinned type's slots, then the fallbacks in
// order; a fall removes fallback instances first, last fallback first.
func TestSpill(t *testing.T) {
	v := view{types: []typeView{{running: 2, slots: 1}, {running: 1, slots: 5}, {running: 1, slots: 5}}}
	if got := spill(v, 0, []int{2, 1}, 4); got[0] != 1 || got[2] != 3 || got[1] != 0 {
		t.Errorf("rise of 4: %v, want [1 0 3]", got)
	}
	if got := spill(v, 0, []int{2, 1}, 20); got[0] != 1 || got[2] != 5 || got[1] != 5 {
		t.Errorf("rise beyond every slot: %v, want [1 5 5]", got)
	}
	if got := spill(v, 0, []int{2, 1}, -3); got[1] != -1 || got[2] != -1 || got[0] != -1 {
		t.Errorf("fall of 3: %v, want [-1 -1 -1]", got)
	}
	if got := spill(v, 0, []int{2, 1}, -1); got[1] != -1 || got[0] != 0 || got[2] != 0 {
		t.Errorf("fall of 1: %v, want the last fallback's [0 -1 0]", got)
	}
}
