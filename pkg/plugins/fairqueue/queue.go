package fairqueue

import (
	"math"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// minWait is the floor of a class's median wait in its weight. Without it a
// burst of pods that have all waited ~0 s would weigh nothing; with it,
// classes whose pods have waited less than a second are weighed by queue
// length alone.
const minWait = time.Second

// queue is the fair-queueing state behind Less (HetSev 4.2, Algorithm 1
// steps 1-2, after weighted fair queuing). Pending pods are grouped into k
// classes by k-means over their shapes. Time is counted in rounds of beta
// pods. Class c's weight is w_c = L_c * max(median wait_c, 1 s) (L_c its
// pending pods, the median wait over them since their first attempt, taken
// at the start of the round), and its quota is
//
//	q_c = max(1, beta * w_c / Σ w)   pods per round.
//
// When a pod is first compared (its enqueue, or its return after a failed
// attempt) it gets a tag, fixed until it is popped:
//
//	tag = max(V, F_c) + 1 / q_c   (rounds)
//
// where F_c is the last tag given to the class and V (virtual time) the
// largest tag popped. Pods leave in tag order, so each round serves every
// waiting class its quota: a long queue, or one that has waited long, gets
// more of the round, every class gets at least one pod per round (none
// starves), and a new class starts at V rather than behind the backlog.
// Fixed tags keep the scheduler's heap consistent while weights change.
// Every beta pops the classes and their median waits are recomputed, as
// Algorithm 1 takes beta pods per round with that round's weights.
type queue struct {
	k, beta int
	now     func() time.Time

	mu      sync.Mutex
	pending map[types.UID]entry
	// left holds the tags of pods that left the queue without an attempt
	// (forget), so that Less answers as before for a pod the scheduler's
	// heap still holds until its own handler drops it; they count in no
	// class and are dropped every round.
	left     map[types.UID]float64
	shapes   map[Shape]*shapeState
	classes  []classState
	virtual  float64 // V
	inRound  int     // pops in this round
	rounds   int
	onRounds func(round int, classes []ClassStats) // logging hook, may be nil
}

type entry struct {
	attempts int
	tag      float64
	shape    Shape
	state    *shapeState // the shape's, kept while the entry is pending
	since    time.Time   // first attempt
}

type shapeState struct {
	pending int
	class   int
	lastTag float64
}

type classState struct {
	medianWait time.Duration
	pending    int
	finish     float64 // F_c
}

// weight is w_c = L_c * max(median wait, minWait) in pod-seconds.
func (c classState) weight() float64 {
	return float64(c.pending) * max(c.medianWait, minWait).Seconds()
}

// ClassStats describe a class at the start of a round, for logs.
type ClassStats struct {
	Shapes     []Shape
	Pending    int
	MedianWait time.Duration
}

func newQueue(k, beta int, now func() time.Time) *queue {
	return &queue{k: k, beta: beta, now: now, pending: map[types.UID]entry{}, left: map[types.UID]float64{}, shapes: map[Shape]*shapeState{}}
}

// tagged returns the pod's tag for this attempt if it has one.
func (q *queue) tagged(uid types.UID, attempts int) (float64, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if e, ok := q.pending[uid]; ok && e.attempts == attempts {
		return e.tag, true
	}
	return 0, false
}

// tag returns the pod's tag for this attempt, assigning it on first sight.
// since is the pod's first attempt (its wait is measured from there).
//
// waiting, when not nil, says whether the pod still waits for the
// scheduler (it exists, unbound, in the informer's cache). It is asked under
// the queue's lock, so a pod is never tagged after forget removed it: the
// cache drops a pod before its handlers (and so forget) run. A pod that
// no longer waits is tagged as when it left (forget), or last (+Inf) when
// that is no longer known, and counts in no class.
func (q *queue) tag(uid types.UID, attempts int, shape Shape, since time.Time, waiting func() bool) float64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	if e, ok := q.pending[uid]; ok {
		if e.attempts == attempts {
			return e.tag
		}
		q.removeLocked(uid, e) // an earlier attempt was popped unseen
	}
	if waiting != nil && !waiting() {
		if t, ok := q.left[uid]; ok {
			return t
		}
		return math.Inf(1)
	}
	s, ok := q.shapes[shape]
	if !ok {
		// A new shape joins the clustering at once (counted as one pod),
		// so it is not folded into another class until the next round.
		s = &shapeState{pending: 1}
		q.shapes[shape] = s
		q.reclusterLocked()
		s.pending--
		q.classes[s.class].pending--
	}
	c := &q.classes[s.class]
	c.pending++ // the weight counts this pod
	var total float64
	for i := range q.classes {
		total += q.classes[i].weight()
	}
	quota := max(1, float64(q.beta)*c.weight()/total)
	tag := max(q.virtual, c.finish) + 1/quota
	c.pending--
	c.finish, c.pending = tag, c.pending+1
	s.pending++
	s.lastTag = tag
	q.pending[uid] = entry{attempts: attempts, tag: tag, shape: shape, state: s, since: since}
	return tag
}

// popped records that the pod left the queue for a scheduling attempt: the
// virtual time advances to its tag, and every beta pops start a round.
func (q *queue) popped(uid types.UID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	e, ok := q.pending[uid]
	if !ok {
		return
	}
	q.virtual = max(q.virtual, e.tag)
	q.removeLocked(uid, e)
	q.inRound++
	if q.inRound >= q.beta {
		q.inRound = 0
		q.reclusterLocked()
	}
}

// forget drops a pod that left the queue without an attempt (deleted, or
// bound by someone else).
func (q *queue) forget(uid types.UID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if e, ok := q.pending[uid]; ok {
		q.removeLocked(uid, e)
		q.left[uid] = e.tag
	}
}

func (q *queue) removeLocked(uid types.UID, e entry) {
	delete(q.pending, uid)
	e.state.pending--
	if e.state.class < len(q.classes) {
		q.classes[e.state.class].pending--
	}
}

// reclusterLocked starts a round: k-means over the pending shapes, then each
// class's pending count, median wait and finish tag. Shapes with no pending
// pod are dropped; their last tags are below V or are carried by their
// class's F_c until the next round.
func (q *queue) reclusterLocked() {
	q.rounds++
	clear(q.left)
	var points []weighted
	for sh, s := range q.shapes {
		if s.pending <= 0 {
			delete(q.shapes, sh)
			continue
		}
		points = append(points, weighted{Shape: sh, Count: s.pending})
	}
	class, n := cluster(points, q.k)
	q.classes = make([]classState, n)
	for i, p := range points {
		s := q.shapes[p.Shape]
		s.class = class[i]
		c := &q.classes[s.class]
		c.pending += s.pending
		c.finish = max(c.finish, s.lastTag)
	}
	now := q.now()
	waits := make([][]time.Duration, n)
	for _, e := range q.pending {
		waits[e.state.class] = append(waits[e.state.class], now.Sub(e.since))
	}
	for c := range q.classes {
		q.classes[c].medianWait = median(waits[c])
	}
	if q.onRounds != nil {
		stats := make([]ClassStats, n)
		for i, p := range points {
			st := &stats[class[i]]
			st.Shapes = append(st.Shapes, p.Shape)
		}
		for c := range stats {
			stats[c].Pending, stats[c].MedianWait = q.classes[c].pending, q.classes[c].medianWait
		}
		q.onRounds(q.rounds, stats)
	}
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}
