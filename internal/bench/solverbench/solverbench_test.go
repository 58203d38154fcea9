package solverbench

import (
	"bytes"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/hetsev/hetsev/pkg/heterogeneity"
	"github.com/hetsev/hetsev/pkg/heterogeneity/ilp"
)

func TestDefaultConfigSize(t *testing.T) {
	if c := DefaultConfig(); c.Instances < 10_000 || c.Repetitions < 1 {
		t.Fatalf("DefaultConfig %+v: the issue asks for at least 10,000 instances", c)
	}
}

// TestGenerate checks determinism, the balance of directions and the ranges
// of the instances.
func TestGenerate(t *testing.T) {
	cfg := Config{Instances: 2000, Seed: 9, Repetitions: 1}
	a, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Generate(cfg)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different instances")
	}
	c, _ := Generate(Config{Instances: 2000, Seed: 10, Repetitions: 1})
	if reflect.DeepEqual(a, c) {
		t.Fatal("different seeds, same instances")
	}
	if len(a) != 2000 {
		t.Fatalf("%d instances", len(a))
	}
	var outs, synth, perturbed, model int
	models := map[string]bool{}
	maxTypes := 0
	for i, in := range a {
		if in.ID != i {
			t.Fatalf("instance %d has ID %d", i, in.ID)
		}
		if err := in.Obs.Validate(); err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
		if err := in.Policy.Validate(); err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
		if w := in.Obs.ArrivalRate; w < 0 || w > 3000 {
			t.Fatalf("instance %d: W=%v", i, w)
		}
		k := len(in.Obs.Types)
		if k < 2 || k > 8 || in.Synthetic != k-2 {
			t.Fatalf("instance %d: %d types, %d synthetic", i, k, in.Synthetic)
		}
		maxTypes = max(maxTypes, k)
		for j, ty := range in.Obs.Types {
			if ty.Running < 0 || ty.Running > 20 || ty.MaxAdditional < 0 || ty.MaxAdditional > 16 {
				t.Fatalf("instance %d: %+v", i, ty)
			}
			if (j >= 2) != strings.HasPrefix(ty.GPUType, "synthetic-") {
				t.Fatalf("instance %d: type %d named %q", i, j, ty.GPUType)
			}
		}
		if in.Direction == ilp.ScaleOutOnly {
			outs++
		}
		if in.Synthetic > 0 {
			synth++
		}
		if in.PricesPerturbed {
			perturbed++
		}
		if in.Policy.SLOCheck == heterogeneity.SLOCheckModel {
			model++
		}
		models[in.Model] = true
	}
	if outs != 1000 || maxTypes != 8 || len(models) != 3 || synth < 800 || perturbed < 800 || model < 300 {
		t.Fatalf("mix: %d scale-outs, up to %d types, models %v, %d synthetic, %d perturbed, %d model SLO", outs, maxTypes, models, synth, perturbed, model)
	}
	if _, err := Generate(Config{}); err == nil {
		t.Fatal("zero config accepted")
	}
}

// TestRun runs a small bench and checks its accounting and output.
func TestRun(t *testing.T) {
	cfg := Config{Instances: 1000, Seed: 3, Repetitions: 2}
	ins, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := Run(ins, cfg)
	if r.Anomalies() != 0 {
		t.Fatalf("%d anomalies", r.Anomalies())
	}
	if got := r.ScaleOut.Instances + r.ScaleOutPartial.Instances + r.NoAction; got != 500 {
		t.Fatalf("scale-outs accounted: %d", got)
	}
	if r.ScaleIn.Instances != 500 || r.ScaleInOneStep.Instances != 500 {
		t.Fatalf("scale-ins accounted: %d, %d", r.ScaleIn.Instances, r.ScaleInOneStep.Instances)
	}
	s := r.ScaleOut
	if s.ExactFeasible != s.Instances || s.Optimal+s.HeuristicMissed > s.ExactFeasible || s.GapN != s.ExactFeasible-s.HeuristicMissed {
		t.Fatalf("scale-out stats inconsistent: %+v", s)
	}
	if f := s.OptimalFraction(); !(f > 0 && f <= 1) || s.MaxGap < s.MeanGap || s.MeanGap < 0 {
		t.Fatalf("scale-out stats: %+v", s)
	}
	// The heuristic picks the instance a one-step scale-in should remove.
	if o := r.ScaleInOneStep; o.Optimal != o.ExactFeasible {
		t.Fatalf("one-step scale-in: %d of %d optimal", o.Optimal, o.ExactFeasible)
	}
	if r.Heuristic.Samples != 2000 || r.Exact.Samples != 2000 || !(r.Exact.P99 >= r.Exact.P50) || !(r.Exact.P50 > 0) {
		t.Fatalf("timings: %+v %+v", r.Heuristic, r.Exact)
	}
	var buf bytes.Buffer
	if err := r.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"scale-out (RESULT)", "scale-in, vs one instance", "exact Decide", "anomalies 0"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}
	line := r.ResultLine()
	if !regexp.MustCompile(`^RESULT optimal_fraction=[0-9.]+ max_gap=[0-9.]+ exact_p99_us=[0-9.]+$`).MatchString(line) {
		t.Errorf("result line %q", line)
	}
}

// benchInstances is a fixed set for the benchmarks.
func benchInstances(b *testing.B) []Instance {
	b.Helper()
	ins, err := Generate(Config{Instances: 2000, Seed: 4, Repetitions: 1})
	if err != nil {
		b.Fatal(err)
	}
	return ins
}

// BenchmarkSolveExact times ilp.SolveExactResult on the ILPs of the
// bench's decisions, cycling through 2,000 instances.
func BenchmarkSolveExact(b *testing.B) {
	ins := benchInstances(b)
	problems := make([]ilp.Problem, len(ins))
	for i, in := range ins {
		p, err := heterogeneity.DecisionProblem(in.Obs, in.Policy, in.Direction)
		if err != nil {
			b.Fatal(err)
		}
		problems[i] = p
	}
	i := 0
	for b.Loop() {
		ilp.SolveExactResult(problems[i%len(problems)])
		i++
	}
}

func benchDecide(b *testing.B, solver string) {
	ins := benchInstances(b)
	i := 0
	for b.Loop() {
		in := ins[i%len(ins)]
		p := in.Policy
		p.Solver = solver
		heterogeneity.NewAutoscaler(p).Decide(in.Obs)
		i++
	}
}

// BenchmarkHeuristic times Autoscaler.Decide with the heuristic solver on the
// bench's decisions.
func BenchmarkHeuristic(b *testing.B) { benchDecide(b, heterogeneity.SolverHeuristic) }

// BenchmarkExactDecide times Autoscaler.Decide with the exact solver on the
// bench's decisions.
func BenchmarkExactDecide(b *testing.B) { benchDecide(b, heterogeneity.SolverExact) }
