package heterogeneity

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hetsev/hetsev/pkg/catalog"
)

func TestParseFlavors(t *testing.T) {
	fl, err := ParseFlavors(" 0.1, 0.25,0.5 ,1")
	if err != nil {
		t.Fatalf("ParseFlavors: %v", err)
	}
	if got := fl.String(); got != DefaultFlavors.String() {
		t.Errorf("ParseFlavors = %s, want %s", got, DefaultFlavors)
	}
	if fl, err := ParseFlavors(""); err != nil || fl != nil {
		t.Errorf(`ParseFlavors("") = %v, %v; want nil, nil (whole GPUs only)`, fl, err)
	}
	for _, tc := range []struct{ in, want string }{
		{"0.5,0.25", "0.25 follows 0.5"},
		{"0.25,0.25,1", "0.25 appears twice"},
		{"0,0.5", "0 (position 0) is not a busy share in (0, 1]"},
		{"0.5,1.5", "1.5 (position 1) is not a busy share"},
		{"-0.1", "-0.1 (position 0) is not a busy share"},
		{"NaN", "NaN (position 0) is not a busy share"},
		{"0.1,,1", `"" is not a number`},
		{"0.1,x", `"x" is not a number`},
	} {
		_, err := ParseFlavors(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseFlavors(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
	if err := (Flavors{}).Validate(); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("Flavors{}.Validate() = %v, want the set is empty", err)
	}
}

func TestExpandFlavors(t *testing.T) {
	// ResNet-50 on a T4: T = 363 requests/s, L = 22.41 ms; f T is 36.3,
	// 90.75 and 181.5 requests/s for 0.1, 0.25 and 0.5, each batch taking
	// L / f: 224.1, 89.64 and 44.82 ms.
	cols, err := ExpandFlavors(resnetT4(3, 2), DefaultFlavors, 0, 0, nil)
	if err != nil {
		t.Fatalf("ExpandFlavors: %v", err)
	}
	want := []struct {
		name   string
		flavor float64
		light  bool
		rps    float64
		price  float64
	}{
		{"T4-busy0.1", 0.1, true, 0.1 * resnetT4RPS, 0.1 * priceT4USDh},
		{"T4-busy0.25", 0.25, true, 0.25 * resnetT4RPS, 0.25 * priceT4USDh},
		{"T4-busy0.5", 0.5, true, 0.5 * resnetT4RPS, 0.5 * priceT4USDh},
		{"T4", 1, false, resnetT4RPS, priceT4USDh},
	}
	if len(cols) != len(want) {
		t.Fatalf("ExpandFlavors gave %d columns %+v, want %d", len(cols), cols, len(want))
	}
	for i, w := range want {
		c := cols[i]
		if c.Type.GPUType != w.name || c.Flavor != w.flavor || c.Light != w.light || !near(c.Type.ThroughputRPS, w.rps) || !near(c.Type.PriceUSDPerHour, w.price) {
			t.Errorf("column %d = %s flavor %v light %v %v requests/s %v USD/h, want %s %v %v %v %v",
				i, c.Type.GPUType, c.Flavor, c.Light, c.Type.ThroughputRPS, c.Type.PriceUSDPerHour, w.name, w.flavor, w.light, w.rps, w.price)
		}
		if c.Type.Running != 0 || c.Type.MaxAdditional != 0 || !near(c.Type.LatencyMs, resnetT4Ms/w.flavor) || c.Type.LaunchSeconds != resnetLaunchS {
			t.Errorf("column %d: Running %d MaxAdditional %d LatencyMs %v LaunchSeconds %v, want 0, 0, L / %v and the type's",
				i, c.Type.Running, c.Type.MaxAdditional, c.Type.LatencyMs, c.Type.LaunchSeconds, w.flavor)
		}
	}
}

// A light flavor f is offered only while 3 L_i / f <= RT_max: BERT-large
// on a T4 (L 114.5 ms) gets none at RT_max 600 ms (3 L / 0.5 = 687 ms),
// 0.5 at 1,200 ms, and 0.25 and 0.5 at 2,400 ms (0.1: 3,435 ms).
func TestExpandFlavorsWithinRTMax(t *testing.T) {
	for _, tc := range []struct {
		rtMaxMs float64
		want    string
	}{
		{600, "T4"},
		{1200, "T4-busy0.5 T4"},
		{2400, "T4-busy0.25 T4-busy0.5 T4"},
		{0, "T4-busy0.1 T4-busy0.25 T4-busy0.5 T4"},
	} {
		cols, err := ExpandFlavors(bertT4(0, 0), DefaultFlavors, 0, tc.rtMaxMs, nil)
		if err != nil {
			t.Fatalf("ExpandFlavors: %v", err)
		}
		var names []string
		for _, c := range cols {
			names = append(names, c.Type.GPUType)
		}
		if got := strings.Join(names, " "); got != tc.want {
			t.Errorf("RT_max %v ms: columns %s, want %s", tc.rtMaxMs, got, tc.want)
		}
	}
	// The set {1}: the type's own column alone.
	ty := TypeState{GPUType: "T4", ThroughputRPS: 10, LatencyMs: 30, PriceUSDPerHour: 1}
	cols, err := ExpandFlavors(ty, Flavors{1}, 0, 0, nil)
	if err != nil || len(cols) != 1 || cols[0].Type.GPUType != "T4" || cols[0].Type.ThroughputRPS != 10 || cols[0].Type.PriceUSDPerHour != 1 {
		t.Errorf("ExpandFlavors({1}) = %+v, %v; want the T4 column alone", cols, err)
	}
}

// Where the profile's batch is too long for RT_max, a light column runs
// at the largest measured smaller batch that fits: BERT-large on a T4 at
// RT_max 600 ms gets every light flavor at batch 1 (3 x 14.4 / 0.1 =
// 432 ms), counted at f x 69 requests/s with batches of 14.4 / f ms.
func TestExpandFlavorsSmallBatches(t *testing.T) {
	small := []catalog.BatchPoint{{BatchSize: 1, ThroughputRPS: 69, LatencyMs: 14.4}}
	cols, err := ExpandFlavors(bertT4(0, 0), DefaultFlavors, 0, 600, small)
	if err != nil {
		t.Fatalf("ExpandFlavors: %v", err)
	}
	want := map[string]float64{"T4-busy0.1": 0.1, "T4-busy0.25": 0.25, "T4-busy0.5": 0.5}
	for _, c := range cols {
		f, light := want[c.Type.GPUType]
		if !light {
			if c.Light || c.BatchSize != 0 {
				t.Errorf("own column %+v: want not light, batch 0 (the profile's)", c)
			}
			continue
		}
		delete(want, c.Type.GPUType)
		if c.BatchSize != 1 || c.Type.BatchSize != 1 || math.Abs(c.Type.ThroughputRPS-f*69) > 1e-9 || math.Abs(c.Type.LatencyMs-14.4/f) > 1e-9 {
			t.Errorf("%s: batch %d (type %d), %.4g requests/s, %.4g ms; want batch 1, %.4g requests/s, %.4g ms",
				c.Type.GPUType, c.BatchSize, c.Type.BatchSize, c.Type.ThroughputRPS, c.Type.LatencyMs, f*69, 14.4/f)
		}
	}
	if len(want) > 0 {
		t.Errorf("columns %v missing at RT_max 600 ms with a measured batch of 1", want)
	}
	// At RT_max 100 ms the GPU's own column does not fit at batch 8
	// either (3 x 114.5 ms): it runs at batch 1 too, beside the 0.5
	// flavor (86.4 ms); 0.25 (172.8 ms) is left out.
	cols, err = ExpandFlavors(bertT4(0, 0), DefaultFlavors, 0, 100, small)
	var got []string
	for _, c := range cols {
		got = append(got, fmt.Sprintf("%s:%d@%.4g", c.Type.GPUType, c.BatchSize, c.Type.ThroughputRPS))
	}
	if want := "T4-busy0.5:1@34.5 T4:1@69"; err != nil || strings.Join(got, " ") != want {
		t.Errorf("RT_max 100 ms: %s, %v; want %s", strings.Join(got, " "), err, want)
	}
	// A point that does not fit either leaves the flavor out.
	cols, err = ExpandFlavors(bertT4(0, 0), DefaultFlavors, 0, 80, small)
	if err != nil || len(cols) != 1 || cols[0].Light || cols[0].BatchSize != 1 {
		t.Errorf("RT_max 80 ms (3 x 14.4 / 0.5 = 86.4): %+v, %v; want the T4 column alone, at batch 1", cols, err)
	}
}

// A busy-share bound caps the flavors and is the type's own column.
func TestExpandFlavorsUpperBound(t *testing.T) {
	cols, err := ExpandFlavors(resnetT4(0, 0), DefaultFlavors, 0.3, 0, nil)
	if err != nil {
		t.Fatalf("ExpandFlavors: %v", err)
	}
	if len(cols) != 3 {
		t.Fatalf("ExpandFlavors(upper 0.3) gave %d columns %+v, want 0.1, 0.25 and 0.3", len(cols), cols)
	}
	own := cols[2]
	if own.Type.GPUType != "T4" || own.Light || own.Flavor != 0.3 || !near(own.Type.ThroughputRPS, 0.3*resnetT4RPS) || !near(own.Type.PriceUSDPerHour, 0.3*priceT4USDh) {
		t.Errorf("own column = %+v, want T4 of flavor 0.3, 0.3 T requests/s, 0.3 C USD/h", own)
	}
	if cols[0].Flavor != 0.1 || cols[1].Flavor != 0.25 || cols[1].Type.GPUType != "T4-busy0.25" {
		t.Errorf("light columns = %+v, %+v; want 0.1 and 0.25", cols[0], cols[1])
	}
	// A bound in the set is not offered twice.
	cols, err = ExpandFlavors(resnetT4(0, 0), DefaultFlavors, 0.25, 0, nil)
	if err != nil || len(cols) != 2 || cols[1].Flavor != 0.25 || cols[1].Light {
		t.Errorf("ExpandFlavors(upper 0.25) = %+v, %v; want 0.1 light and 0.25 own", cols, err)
	}
}

func TestExpandFlavorsErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ty    TypeState
		fl    Flavors
		upper float64
		want  string
	}{
		{"empty set", resnetT4(0, 0), Flavors{}, 0, "empty"},
		{"unsorted", resnetT4(0, 0), Flavors{0.5, 0.1}, 0, "0.1 follows 0.5"},
		{"bound above 1", resnetT4(0, 0), DefaultFlavors, 1.2, "upper bound 1.2"},
		{"negative bound", resnetT4(0, 0), DefaultFlavors, -0.5, "upper bound -0.5"},
		{"no throughput", TypeState{GPUType: "T4", LatencyMs: 10}, DefaultFlavors, 0, "ThroughputRPS"},
		{"infinite latency", TypeState{GPUType: "T4", ThroughputRPS: 1, LatencyMs: math.Inf(1)}, DefaultFlavors, 0, "LatencyMs"},
	} {
		_, err := ExpandFlavors(tc.ty, tc.fl, tc.upper, 0, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: ExpandFlavors = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// flavorColumns are ResNet-50's columns on a T4 with the default flavors
// (0.1, 0.25, 0.5: 36.3, 90.75 and 181.5 requests/s, batches of L / f
// within the policy's RT_max 400 ms; the whole T4 363), none running, room
// for 10 of each.
func flavorColumns(t *testing.T) []TypeState {
	t.Helper()
	cols, err := ExpandFlavors(resnetT4(0, 0), DefaultFlavors, 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []TypeState
	for _, c := range cols {
		c.Type.MaxAdditional = 10
		out = append(out, c.Type)
	}
	return out
}

// A quiet service starts on light instances; one planned past the largest
// light instance (W 160 requests/s / 0.8 = 200 > 181.5) starts on a whole
// GPU, with the reason saying why.
func TestLightFlavorsOnlyWhileQuiet(t *testing.T) {
	for _, c := range []struct {
		w     float64
		light bool
	}{{2, true}, {160, false}} {
		a := NewAutoscaler(exactPolicy())
		act := a.Decide(Observation{Now: time.Unix(0, 0), ArrivalRate: c.w, Types: flavorColumns(t)})
		if act.Kind != ActionScaleOut {
			t.Fatalf("W %v: %v (%s), want a scale-out", c.w, act.Kind, act.Reason)
		}
		light, whole := 0, 0
		for i, d := range act.Delta {
			if flavorColumns(t)[i].Light {
				light += d
			} else {
				whole += d
			}
		}
		if (light > 0) != c.light || (whole > 0) == c.light {
			t.Errorf("W %v requests/s: +%d light, +%d whole (%s); want light %v", c.w, light, whole, act.Reason, c.light)
		}
		if !c.light && !strings.Contains(act.Reason, "light flavors not offered") {
			t.Errorf("W %v: reason %q does not say why no light flavor was offered", c.w, act.Reason)
		}
	}
}

// A quiet service that outgrows its light instance adds the next larger
// flavor, not a second instance of the same one: with one T4-busy0.1
// running (36.3 requests/s) and W 30 requests/s planned at 37.5, a second
// 0.1 would be the cheapest cover, but it needs a GPU of its own; the
// decision adds one T4-busy0.25.
func TestLightFlavorOneInstanceEach(t *testing.T) {
	cols := flavorColumns(t)
	light01, light025 := -1, -1
	for i, c := range cols {
		switch c.GPUType {
		case ColumnName("T4", 0.1, true):
			light01 = i
		case ColumnName("T4", 0.25, true):
			light025 = i
		}
	}
	if light01 < 0 || light025 < 0 {
		t.Fatalf("columns %v lack T4-busy0.1 or T4-busy0.25", cols)
	}
	cols[light01].Running = 1
	a := NewAutoscaler(exactPolicy())
	act := a.Decide(Observation{Now: time.Unix(0, 0), ArrivalRate: 30, Types: cols})
	if act.Kind != ActionScaleOut {
		t.Fatalf("%v (%s), want a scale-out", act.Kind, act.Reason)
	}
	if act.Delta[light01] != 0 || act.Delta[light025] != 1 {
		t.Errorf("delta %v (%s): want +1 %s and no second %s", act.Delta, act.Reason, cols[light025].GPUType, cols[light01].GPUType)
	}
}

// TestFlavorsAtMostEight: a ninth flavor is refused with the limit named.
func TestFlavorsAtMostEight(t *testing.T) {
	if _, err := ParseFlavors("0.1,0.2,0.3,0.4,0.5,0.6,0.7,1"); err != nil {
		t.Errorf("8 flavors: %v", err)
	}
	if _, err := ParseFlavors("0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,1"); err == nil || !strings.Contains(err.Error(), "at most 8") {
		t.Errorf("9 flavors: %v, want an error naming at most 8", err)
	}
}

// A burst that whole GPUs cannot cover overflows onto light instances:
// W 600 requests/s planned at 750 with room for one whole T4 (363
// requests/s) and for three instances of each light flavor, one of them
// on that empty GPU. The whole T4 is added and the rest (387 requests/s)
// goes to light instances, at most two per flavor; with the rule off
// (Policy.DisableLightOverflow) the scale-out stays partial at the whole
// T4. A deficit the whole GPUs cover takes no light instance, and with no
// whole GPU free the lights cover all of it.
func TestLightOverflowCoversWhatWholeGPUsCannot(t *testing.T) {
	for _, c := range []struct {
		name      string
		w         float64
		whole     int // the whole column's MaxAdditional
		off       bool
		wantWhole int
		wantLight bool
	}{
		{"overflow", 600, 1, false, 1, true},
		// 108 requests/s left: three T4-busy0.1 (108.9) would be the
		// cheapest, but one of their slots is the GPU the whole T4 took.
		{"slots the whole instance took", 376.8, 1, false, 1, true},
		{"rule off", 600, 1, true, 1, false},
		{"whole GPUs cover it", 200, 1, false, 1, false},
		{"no whole GPU free", 600, 0, false, 0, true},
	} {
		for _, solver := range []string{SolverExact, SolverHeuristic} {
			t.Run(c.name+"/"+solver, func(t *testing.T) {
				cols := flavorColumns(t)
				for i := range cols {
					if cols[i].Light {
						cols[i].MaxAdditional = 3
					} else {
						cols[i].MaxAdditional = c.whole
					}
				}
				p := testPolicy(func(p *Policy) { p.Solver = solver })
				p.DisableLightOverflow = c.off
				act := NewAutoscaler(p).Decide(Observation{Now: time.Unix(0, 0), ArrivalRate: c.w, Types: cols})
				if act.Kind != ActionScaleOut {
					t.Fatalf("%v (%s), want a scale-out", act.Kind, act.Reason)
				}
				whole, lightRPS := 0, 0.0
				for i, d := range act.Delta {
					if !cols[i].Light {
						whole += d
						continue
					}
					lightRPS += float64(d) * cols[i].ThroughputRPS
					if most := 3 - c.whole; d > most {
						t.Errorf("+%d %s: more than the %d slots the whole instances left (%s)", d, cols[i].GPUType, most, act.Reason)
					}
				}
				if whole != c.wantWhole || (lightRPS > 0) != c.wantLight {
					t.Fatalf("+%d whole, %.4g requests/s light (%s); want +%d whole, light %v", whole, lightRPS, act.Reason, c.wantWhole, c.wantLight)
				}
				need := c.w / p.SaturationThreshold
				if c.wantLight && Capacity(cols, act.Delta) < need {
					t.Errorf("capacity %.4g after %v < %.4g planned (%s)", Capacity(cols, act.Delta), act.Delta, need, act.Reason)
				}
				if c.wantLight && !strings.Contains(act.Reason, "light overflow") {
					t.Errorf("reason %q does not name the light overflow", act.Reason)
				}
			})
		}
	}
}
