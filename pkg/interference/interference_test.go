package interference

import (
	"math"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestDefault(t *testing.T) {
	m := Default()
	if m.IdenticalPair != 0.40 || m.DifferentPair != 0.18 || len(m.Pairs) != 0 {
		t.Fatalf("Default() = %+v", m)
	}
	if err := m.Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
}

func TestPairKeyOrderIndependent(t *testing.T) {
	if PairKey("resnet50", "bert") != PairKey("bert", "resnet50") {
		t.Fatal("PairKey is order dependent")
	}
	if got := PairKey("resnet50", "bert"); got != "bert|resnet50" {
		t.Fatalf("PairKey = %q", got)
	}
	if PairKey("a", "a") != "a|a" {
		t.Fatal("identical PairKey")
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		m     Model
		field string
	}{
		{Model{IdenticalPair: -0.1, DifferentPair: 0.1}, "IdenticalPair"},
		{Model{IdenticalPair: math.NaN(), DifferentPair: 0.1}, "IdenticalPair"},
		{Model{IdenticalPair: 0.1, DifferentPair: -1}, "DifferentPair"},
		{Model{IdenticalPair: 0.1, DifferentPair: math.NaN()}, "DifferentPair"},
		{Model{IdenticalPair: 0.1, DifferentPair: math.Inf(1)}, "DifferentPair"},
		{Model{Pairs: map[string]float64{PairKey("x", "y"): math.NaN()}}, `Pairs["x|y"]`},
		{Model{Pairs: map[string]float64{PairKey("x", "y"): -0.5}}, `Pairs["x|y"]`},
	}
	for _, c := range cases {
		err := c.m.Validate()
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("Validate(%+v) = %v, want error naming %s", c.m, err, c.field)
		}
	}
	ok := Model{IdenticalPair: 0, DifferentPair: 0, Pairs: map[string]float64{"a|b": 0}}
	if err := ok.Validate(); err != nil {
		t.Errorf("zero model: %v", err)
	}
}

func TestPairInflation(t *testing.T) {
	m := Default()
	m.Pairs = map[string]float64{PairKey("resnet50", "ssd"): 0.05, PairKey("bert", "bert"): 0.9}
	cases := []struct {
		a, b string
		want float64
	}{
		{"resnet50", "resnet50", 0.40},
		{"resnet50", "inception", 0.18},
		{"resnet50", "ssd", 0.05},
		{"ssd", "resnet50", 0.05},
		{"bert", "bert", 0.9},
	}
	for _, c := range cases {
		if got := m.PairInflation(c.a, c.b); !near(got, c.want) {
			t.Errorf("PairInflation(%s,%s) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestFactorHandWorked(t *testing.T) {
	m := Default()
	// Alone: no inflation.
	if f := m.Factor("resnet50", nil); f != 1 {
		t.Fatalf("solo factor = %v", f)
	}
	// One fully busy different neighbour: 1 + 0.18*1 = 1.18.
	if f := m.Factor("resnet50", []Neighbour{{"inception", 1}}); !near(f, 1.18) {
		t.Fatalf("different busy = %v", f)
	}
	// One identical neighbour at 50 %: 1 + 0.40*0.5 = 1.20.
	if f := m.Factor("resnet50", []Neighbour{{"resnet50", 0.5}}); !near(f, 1.20) {
		t.Fatalf("identical half = %v", f)
	}
	// Identical at 25 % + different at 100 % + different idle:
	// 1 + 0.40*0.25 + 0.18*1 + 0.18*0 = 1.28.
	f := m.Factor("resnet50", []Neighbour{{"resnet50", 0.25}, {"ssd", 1}, {"bert", 0}})
	if !near(f, 1.28) {
		t.Fatalf("mixed = %v", f)
	}
	// Utilisation clamped: 1.7 -> 1, -0.3 -> 0, NaN -> 0: 1 + 0.18 = 1.18.
	f = m.Factor("resnet50", []Neighbour{{"ssd", 1.7}, {"bert", -0.3}, {"x", math.NaN()}})
	if !near(f, 1.18) {
		t.Fatalf("clamped = %v", f)
	}
	// Override: resnet50|ssd = 0.05 at 60 %: 1 + 0.03 = 1.03.
	m.Pairs = map[string]float64{PairKey("ssd", "resnet50"): 0.05}
	if f := m.Factor("resnet50", []Neighbour{{"ssd", 0.6}}); !near(f, 1.03) {
		t.Fatalf("override = %v", f)
	}
}

func TestFactorNeverBelowOne(t *testing.T) {
	m := Model{IdenticalPair: -2, DifferentPair: math.NaN()}
	if f := m.Factor("a", []Neighbour{{"a", 1}, {"b", 1}}); f != 1 {
		t.Fatalf("invalid model factor = %v, want 1", f)
	}
}
