package evaluate

import (
	"math"
	"slices"
	"testing"

	"github.com/hetsev/hetsev/pkg/heterogeneity"
	"github.com/hetsev/hetsev/pkg/placement"
)

// consolidationRun is hetsev-exact's replay, not yet run, of a ResNet-50
// and an SSD service on three T4s with instance flavors and
// consolidation, and the index of each service's column named column.
func consolidationRun(t *testing.T, column string) (*policyRun, int, int) {
	t.Helper()
	cfg, err := Base("test", "test", constant(1, 600), t4Only(3),
		Service{Name: "r", Model: "resnet50", Share: 0.5, RTMaxMs: 400},
		Service{Name: "s", Model: "ssd-resnet50", Share: 0.5, RTMaxMs: 1800})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Flavors = heterogeneity.DefaultFlavors
	cfg.Knobs.Consolidation = true
	cfg.defaultSharing()
	r, err := newPolicyRun(&cfg, PolicyExact)
	if err != nil {
		t.Fatal(err)
	}
	col := func(s *serviceRun) int {
		for i, st := range s.types {
			if st.column == column {
				return i
			}
		}
		t.Fatalf("%s has no column %s", s.Name, column)
		return -1
	}
	return r, col(r.svcs[0]), col(r.svcs[1])
}

// place puts a ready instance of s's column i on node 0's GPU gpu,
// without a server (the cluster's accounting only).
func (r *policyRun) placeAt(s *serviceRun, i, gpu int) *instance {
	st := s.types[i]
	in := &instance{svc: s.idx, typ: i, model: s.Model, memMiB: st.prof.GPUMemoryMiB, demand: st.demand,
		cpuMilli: st.prof.CPUMilli, hostMiB: st.prof.MemoryMiB}
	r.cl.add(in, 0, gpu)
	return in
}

// TestClusterMovableIsAloneAndFitsAGPUInUse: a light ResNet-50 instance
// (busy share 0.25) alone on GPU 0 is movable while GPU 1 holds a light
// SSD instance; once GPU 1 hosts ResNet-50 too, anti-affinity closes it
// and GPU 2 is empty, so it is not. With an SSD instance on GPU 2 it is
// again, while the ResNet-50 instance sharing GPU 1 never is: moving it
// would empty nothing.
func TestClusterMovableIsAloneAndFitsAGPUInUse(t *testing.T) {
	r, rc, sc := consolidationRun(t, "T4-busy0.25")
	rs, ss := r.svcs[0], r.svcs[1]
	lone := r.placeAt(rs, rc, 0)
	r.placeAt(ss, sc, 1)
	if !r.cl.movable(lone) {
		t.Fatalf("ResNet-50 alone on GPU 0, an SSD on GPU 1: not movable, want movable")
	}
	shared := r.placeAt(rs, rc, 1)
	if r.cl.movable(lone) {
		t.Errorf("GPU 1 hosting ResNet-50 too, GPU 2 empty: movable, want not")
	}
	r.placeAt(ss, sc, 2)
	if !r.cl.movable(lone) || r.cl.movable(shared) {
		t.Errorf("an SSD on GPU 2 too: alone on GPU 0 movable %v, sharing GPU 1 movable %v; want true, false", r.cl.movable(lone), r.cl.movable(shared))
	}
}

// TestStopNewestTakesTheMovedInstanceOnceTheNewestServes: a removal of a
// column takes the instance a consolidation move marked, as the
// ReplicaSet removes the pod of lowest pod-deletion-cost among ready
// ones; while the newest instance still launches it goes first, as a
// not-ready pod does.
func TestStopNewestTakesTheMovedInstanceOnceTheNewestServes(t *testing.T) {
	r, rc, _ := consolidationRun(t, "T4-busy0.25")
	s := r.svcs[0]
	for _, at := range []float64{0, 100} {
		if err := r.start(s, rc, at); err != nil {
			t.Fatal(err)
		}
	}
	old, launched := s.insts[0], s.insts[1]
	old.moved = true
	if !r.stopNewest(s, rc, launched.readyAt-1) || !slices.Contains(s.insts, old) || slices.Contains(s.insts, launched) {
		t.Fatalf("newest still launching: left %v, want the newest removed, the marked one kept", s.insts)
	}
	if err := r.start(s, rc, 200); err != nil {
		t.Fatal(err)
	}
	ready := s.insts[1]
	if !r.stopNewest(s, rc, ready.readyAt) || slices.Contains(s.insts, old) || !slices.Contains(s.insts, ready) {
		t.Fatalf("newest serving: left %v, want the marked instance removed", s.insts)
	}
}

// TestHetsevPolicyStartsAMove: with Knobs.Consolidation the evaluator's
// hetsev policy passes typeView.movable to the scaler's decision and
// reports the move it starts, so that the replay marks the instance it
// replaces; without a movable instance it starts none.
func TestHetsevPolicyStartsAMove(t *testing.T) {
	r, rc, _ := consolidationRun(t, "T4-busy0.25")
	p, ok := r.pol.(*hetsevPolicy)
	if !ok || !p.moves() {
		t.Fatalf("policy %T moves %v, want hetsev's, moving", r.pol, ok && p.moves())
	}
	s := r.svcs[0]
	v := view{now: 0, arrival: 1, types: make([]typeView, len(s.types))}
	for i, st := range s.types {
		v.types[i] = typeView{prof: st.prof, gpu: st.gpu, column: st.column, slots: 4, inflation: 1}
	}
	v.types[rc].running, v.types[rc].ready, v.types[rc].movable = 1, 1, 1
	got := p.decide(0, v)
	if col, phase, ok := p.moveStep(0); !ok || col != rc || phase != heterogeneity.ReplacementStarted || got[rc] != 1 {
		t.Fatalf("one movable instance: delta %v, move step %v %q on column %d; want +1 on column %d (%s), started", got, ok, phase, col, rc, s.types[rc].column)
	}
	v.types[rc].movable = 0
	q, err := newHetsevPolicy(r.cfg, heterogeneity.SolverExact, placement.DefaultInterferenceWeight)
	if err != nil {
		t.Fatal(err)
	}
	if got := q.decide(0, v); !slices.Equal(got, make([]int, len(got))) {
		t.Errorf("nothing movable: delta %v, want none", got)
	}
	if _, _, ok := q.moveStep(0); ok {
		t.Errorf("nothing movable: a move started")
	}
}

// TestReplayMoveTimeoutKeepsAndUnmarksTheOldInstance runs a move through
// policyRun.decide with hetsev-exact's autoscaler: the lone ResNet-50
// instance is marked when the move starts; its new instance never
// serves, so after the replacement timeout (5 min) the decision removes
// the new one, and the old one stays with its mark cleared, as
// hetsev-scaler takes pod-deletion-cost off.
func TestReplayMoveTimeoutKeepsAndUnmarksTheOldInstance(t *testing.T) {
	r, rc, sc := consolidationRun(t, "T4-busy0.25")
	rs, ss := r.svcs[0], r.svcs[1]
	old := r.placeAt(rs, rc, 0) // ready from second 0; no server: it never has to serve
	rs.insts = append(rs.insts, old)
	r.placeAt(ss, sc, 1)
	if !r.cl.movable(old) {
		t.Fatalf("set-up: the ResNet-50 instance on GPU %d/%d is not movable", old.node, old.gpu)
	}
	r.decide(rs, 0)
	if len(rs.insts) != 2 || !old.moved {
		t.Fatalf("move start: %d instances, old marked %v; want 2, marked", len(rs.insts), old.moved)
	}
	added := rs.insts[1]
	added.readyAt = math.Inf(1) // never serves
	for now := 5; now <= 400 && len(rs.insts) == 2; now += 5 {
		r.decide(rs, now)
		if len(rs.insts) == 2 && !old.moved {
			t.Fatalf("second %d: the old instance lost its mark while the move runs", now)
		}
	}
	if len(rs.insts) != 1 || rs.insts[0] != old {
		t.Fatalf("after the timeout: %d instances (old kept %v), want the old one alone", len(rs.insts), slices.Contains(rs.insts, old))
	}
	if old.moved {
		t.Errorf("after the timeout the old instance is still marked")
	}
}
