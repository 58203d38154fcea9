package scaler

import (
	"context"
	"errors"
	"fmt"
	"k8s.io/apimachinery/pkg/types"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
	"github.com/hetsev/hetsev/pkg/placement"
)

// Reconcile implements reconcile.Reconciler for one ModelService: a
// scaling decision when one is due, else keeping its Deployments and
// traffic split up to date until then.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ms := &v1alpha1.ModelService{}
	if err := r.Client.Get(ctx, req.NamespacedName, ms); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if !ms.DeletionTimestamp.IsZero() {
		// Being deleted (a finalizer holds it): the garbage collector
		// removes its Deployments, Service and routes; recreating them
		// would race it.
		r.forget(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	st := r.stateOf(ms)
	switch wait := st.untilDecision(ms.Generation, r.now()); {
	case wait < 0:
		return reconcile.Result{}, nil // invalid spec, reported when it was seen
	case wait > 0:
		again, err := r.refresh(ctx, ms)
		if again > 0 {
			wait = min(wait, again)
		}
		return reconcile.Result{RequeueAfter: wait}, err
	}
	next, err := r.decide(ctx, ms, st)
	if err != nil {
		r.reportDegraded(ctx, req.NamespacedName, err)
		return reconcile.Result{}, err
	}
	r.reportDegraded(ctx, req.NamespacedName, nil)
	st.decided, st.generation = true, ms.Generation
	st.next = time.Time{}
	if next > 0 {
		st.next = r.now().Add(next)
	}
	return reconcile.Result{RequeueAfter: next}, nil
}

// reportDegraded sets the Degraded condition of the ModelService at key:
// True with err's message when a decision failed (a Warning event when
// that is news), False when one succeeded after it was True. It reads the
// object afresh, since the failed decision may have written status, and
// leaves a condition it cannot write to the next try (logged).
func (r *Reconciler) reportDegraded(ctx context.Context, key types.NamespacedName, err error) {
	if ctx.Err() != nil || apierrors.IsConflict(err) {
		return // shutting down, or a stale read the retry resolves at once
	}
	ms := &v1alpha1.ModelService{}
	var reader client.Reader = r.Client
	if r.APIReader != nil {
		reader = r.APIReader
	}
	if getErr := reader.Get(ctx, key, ms); getErr != nil {
		return
	}
	cur := meta.FindStatusCondition(ms.Status.Conditions, v1alpha1.ConditionDegraded)
	status := *ms.Status.DeepCopy()
	if err == nil {
		if cur == nil || cur.Status != metav1.ConditionTrue {
			return
		}
		setCondition(&status, v1alpha1.ConditionDegraded, metav1.ConditionFalse, "Reconciled", "the last decision succeeded", ms.Generation)
	} else {
		msg := fmt.Sprintf("decision failed, retrying within %v: %v", MaxRetryBackoff, err)
		if cur == nil || cur.Status != metav1.ConditionTrue {
			r.Recorder.Eventf(ms, v1.EventTypeWarning, "ReconcileError", "%s", msg)
		}
		setCondition(&status, v1alpha1.ConditionDegraded, metav1.ConditionTrue, "ReconcileError", msg, ms.Generation)
	}
	if werr := r.writeStatusIfChanged(ctx, ms, status); werr != nil {
		klog.FromContext(ctx).V(2).Info("could not write the Degraded condition", "modelservice", key, "err", werr)
	}
}

// refresh, between decisions, recreates missing Deployments, restores
// their pod templates, retires those of removed GPU types and re-weights
// the traffic split by the instances now ready; replicas are left alone.
// It returns how soon to look again when a Deployment it does not control
// is in the way (no change of that one triggers a reconcile), else 0.
func (r *Reconciler) refresh(ctx context.Context, ms *v1alpha1.ModelService) (time.Duration, error) {
	svc, err := validate(ms, r.Catalog, r.defaults())
	if err != nil {
		return 0, nil // reported by the decision of this generation
	}
	svc.pool = r.gpuPool()
	status := *ms.Status.DeepCopy()
	status.ObservedGeneration = ms.Generation
	deps, err := r.ensureDeployments(ctx, svc)
	if done, err := r.notControlled(ctx, ms, &status, err); done {
		return svc.interval, err
	}
	if err != nil {
		return 0, err
	}
	if err := r.retireRemoved(ctx, svc); err != nil {
		return 0, err
	}
	r.splitTraffic(ctx, svc, deps, &status)
	return 0, r.writeStatusIfChanged(ctx, ms, status)
}

// notControlled reports err when it is a *NotControlledError (Ready false
// naming the Deployment, and a Warning event when that is news) and says
// whether it was one.
func (r *Reconciler) notControlled(ctx context.Context, ms *v1alpha1.ModelService, status *v1alpha1.ModelServiceStatus, err error) (bool, error) {
	var nc *NotControlledError
	if !errors.As(err, &nc) {
		return false, nil
	}
	if c := meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionReady); c == nil || c.Message != nc.Error() {
		r.Recorder.Eventf(ms, v1.EventTypeWarning, "DeploymentNotControlled", "%s", nc.Error())
	}
	setCondition(status, v1alpha1.ConditionReady, metav1.ConditionFalse, "DeploymentNotControlled", nc.Error(), ms.Generation)
	return true, r.writeStatusIfChanged(ctx, ms, *status)
}

// decide runs one decision for ms and returns when to run the next one
// (0: only on a spec change).
func (r *Reconciler) decide(ctx context.Context, ms *v1alpha1.ModelService, st *msState) (time.Duration, error) {
	start := r.now()
	defer func() { decisionSeconds.Observe(time.Since(start).Seconds()) }()
	logger := klog.FromContext(ctx).WithValues("modelservice", klog.KObj(ms))
	status := *ms.Status.DeepCopy()
	status.ObservedGeneration = ms.Generation
	svc, err := validate(ms, r.Catalog, r.defaults())
	if err != nil {
		r.Recorder.Eventf(ms, v1.EventTypeWarning, "InvalidSpec", "%v", err)
		setCondition(&status, v1alpha1.ConditionReady, metav1.ConditionFalse, "InvalidSpec", err.Error(), ms.Generation)
		return 0, r.writeStatusIfChanged(ctx, ms, status)
	}
	svc.pool = r.gpuPool()
	initReplacementSeries(ms.Namespace, ms.Name)
	as := st.autoscalerFor(svc.policy, ms.Status.ScalingState, ms.Status.RateHistory)

	// Desired Deployments exist, one per GPU type, and those of removed
	// types go.
	deps, err := r.ensureDeployments(ctx, svc)
	if done, err := r.notControlled(ctx, ms, &status, err); done {
		decisionsTotal.WithLabelValues(ms.Namespace, ms.Name, "Hold").Inc()
		return svc.interval, err
	}
	if err != nil {
		return 0, err
	}
	if err := r.retireRemoved(ctx, svc); err != nil {
		return 0, err
	}
	status.Selector = v1alpha1.LabelModelService + "=" + ms.Name

	// Arrival rate W: the sum over Deployments that have instances. While
	// a serving pod is unmeasured, W is a lower bound (scale out, never
	// in); when nothing at all is measured, W is unknown: hold.
	ar, err := r.measureArrival(ctx, deps, sloTarget{RTMaxMs: ms.Spec.SLO.ResponseTimeMs, ServiceLevel: svc.policy.ServiceLevel})
	if err != nil {
		return 0, err
	}
	w, p98 := ar.W, ar.P98Ms
	now := r.now()
	r.splitTraffic(ctx, svc, deps, &status)
	// Bound replicas that cannot start (a missing image, a claim the
	// driver does not prepare, a node whose runtime is down) are reported
	// whether or not the arrival rate is known: a service whose every
	// replica is stuck serves nothing, so it is never measured.
	stuck, err := r.notStartingAll(ctx, svc, deps, now)
	if err != nil {
		return 0, err
	}
	r.reportNotStarting(ms, &status, stuck)
	if ar.Nothing || ar.TimedOut {
		reason, msg := "MetricsUnavailable", fmt.Sprintf("no %s for %s: holding replicas", adapter.MetricRequestsPerSecond, strings.Join(ar.Withheld, ", "))
		if ar.TimedOut {
			reason, msg = "MetricsTimeout", fmt.Sprintf("%s gave no %s within %v (--metrics-timeout): holding replicas", metricsOrigin(r.Metrics), adapter.MetricRequestsPerSecond, r.metricsTimeout())
			if c := meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionMetricsUnavailable); c == nil || c.Reason != reason {
				r.Recorder.Eventf(ms, v1.EventTypeWarning, reason, "%s", msg)
			}
		}
		setCondition(&status, v1alpha1.ConditionMetricsUnavailable, metav1.ConditionTrue, reason, msg, ms.Generation)
		// Ready says the Deployments and routes match the spec, which they
		// do; its reason says that the replicas are not being scaled.
		setCondition(&status, v1alpha1.ConditionReady, metav1.ConditionTrue, "ReplicasHeld", "Deployments reconciled; replicas held: "+msg, ms.Generation)
		recordDecision(&status, v1alpha1.Decision{Time: metav1.NewTime(now), Action: "Hold", Reason: msg}, r.DecisionHistory)
		decisionsTotal.WithLabelValues(ms.Namespace, ms.Name, "Hold").Inc()
		// Nothing measured: no latency or attainment series rather than
		// the last decision's values.
		dropLatencySeries(ms.Namespace, ms.Name)
		return svc.interval, r.writeStatusIfChanged(ctx, ms, status)
	}
	partial := ""
	if ar.Partial {
		partial = fmt.Sprintf("%s; value of %s withheld by the adapter", ar.lowerBound(), strings.Join(ar.Withheld, ", "))
		setCondition(&status, v1alpha1.ConditionMetricsUnavailable, metav1.ConditionTrue, "PartialMetrics", partial+"; scale-in held", ms.Generation)
	} else {
		msg := "arrival rate read from " + metricsOrigin(r.Metrics)
		if ar.LatencyTimedOut {
			msg += fmt.Sprintf("; latency and SLO attainment not read: no answer within %v (--metrics-timeout)", r.metricsTimeout())
		}
		setCondition(&status, v1alpha1.ConditionMetricsUnavailable, metav1.ConditionFalse, "MetricsAvailable", msg, ms.Generation)
	}

	obs := heterogeneity.Observation{Now: now, ArrivalRate: w, ArrivalRateIsLowerBound: ar.Partial}
	var noRoom []string // per type with unschedulable replicas: how many, and the scheduler's message
	unsched := make([]unschedulable, len(svc.types))
	seen := make([]columnSeen, len(svc.types))
	// Per column: the pods a consolidation move may empty a GPU of (only
	// looked for with consolidation on), and those a move marked.
	movable, marked := make([][]string, len(svc.types)), make([][]string, len(svc.types))
	for i, p := range svc.types {
		cpu, mem := p.instanceRequests(&ms.Spec.Template.Spec)
		c, err := r.capacityFor(ctx, svc, p, cpu, mem)
		if err != nil {
			return 0, err
		}
		// N_i leaves out replicas the scheduler found no room for, and a
		// type with such replicas has no room for more whatever the free
		// slots say (a constraint the count does not model, or a race):
		// a scale-out goes to another type.
		u, err := r.unschedulableOf(ctx, deps[i], now)
		if err != nil {
			return 0, err
		}
		// N_i leaves out bound replicas that cannot start too, so a
		// decision sees the capacity actually coming; the type's free
		// slots stay, as its other nodes may have room.
		u.notStarting = stuck[i]
		unsched[i] = u
		// A light flavor's instance costs its share of a GPU's price only
		// beside tenants that keep the GPU billed anyway; on a type with
		// no GPU in use by another model it would bill a whole GPU alone
		// (its own instances' GPUs are closed to it by anti-affinity), so
		// the column offers no slots and a whole GPU (or another type) is
		// chosen.
		idle := p.light && c.inUse == 0 && c.slots > 0
		if idle {
			c.slots = 0
		}
		seen[i] = columnSeen{slots: c.slots, gpus: c.gpus, noRoom: u.pods+u.missing > 0, idle: idle}
		if u.pods > 0 {
			c.slots = 0
			noRoom = append(noRoom, fmt.Sprintf("%s: %d of %d replicas unschedulable (%s)", p.column(), u.pods, replicasOf(deps[i]), u.message))
		}
		if u.missing > 0 {
			c.slots = 0
			noRoom = append(noRoom, fmt.Sprintf("%s: %d of %d replicas not created (ReplicaFailure: %s)", p.column(), u.missing, replicasOf(deps[i]), u.missingMessage))
		}
		// Expected co-location for the SLO check: one neighbour as busy as
		// the service's instances at its saturation threshold, by the
		// fitted model. Throughput: T_i over the inflation the instances
		// get where they run now.
		ts := svc.typeState(i, runningOf(deps[i], u), c.slots, svc.capacityInflation(i, r.colocation(), r.gpuSharing()), c.inflation)
		// The split as stored before this reconcile: the one just written
		// may not have reached the proxies yet.
		ts.Ready = r.readyRouted(deps[i], p.column(), &ms.Status)
		marked[i] = namesIn(c.marked, ms.Namespace)
		if svc.policy.Consolidation {
			movable[i] = namesIn(c.movablePods(), ms.Namespace)
			ts.Movable = min(len(movable[i]), ts.Running)
		}
		obs.Types = append(obs.Types, ts)
	}
	r.reportNoCapacity(ms, &status, noRoom)
	solveStart := time.Now()
	// Proposed, and committed (the cool-downs started) only once the
	// replicas are written: a failed write leaves the triggers as they
	// were, so the retry decides again at once.
	act := as.Propose(obs)
	solverSeconds.WithLabelValues(svc.policy.Solver).Observe(time.Since(solveStart).Seconds())
	kind := string(act.Kind)
	if ar.Partial {
		kind, act = partialDecision(act, partial)
	}
	decisionsTotal.WithLabelValues(ms.Namespace, ms.Name, kind).Inc()

	held := as.SurplusHeld(obs)
	target, surplusRemoved := targetReplicas(deps, unsched, act, obs, svc.policy, held)
	if n := removedUnschedulable(deps, unsched, act, target); n != "" {
		why := "the running instances carry the load"
		if wanted := sumReplicas(deps) + sumDelta(act); svc.policy.MaxReplicas > 0 && wanted > svc.policy.MaxReplicas {
			why = fmt.Sprintf("max replicas %d reached", svc.policy.MaxReplicas)
		}
		act.Reason = fmt.Sprintf("%s; removed the replicas that are unschedulable or not starting (%s): %s", act.Reason, n, why)
	} else if absent := sumAbsent(unsched); absent > 0 && act.Kind == heterogeneity.ActionNone && held != "" {
		act.Reason = fmt.Sprintf("%s; kept %d replicas that are unschedulable or not starting: %s", act.Reason, absent, held)
	}
	if room := roomWords(svc, act, seen); room != "" {
		act.Reason += "; " + room
	}
	// A consolidation move marks the pod it empties a GPU of before its
	// new replica is added, so that the ReplicaSet removes that pod when
	// the move removes one.
	if err := r.markMoved(ctx, svc, act, movable, marked); err != nil {
		return 0, err
	}
	delta := map[string]int32{}
	for i, want := range target {
		x := want - replicasOf(deps[i])
		if x == 0 {
			continue
		}
		if err := r.setReplicas(ctx, deps[i], want); err != nil {
			if len(delta) > 0 {
				as.Commit(act) // part of it took effect: its cool-down holds
			}
			return 0, err
		}
		delta[svc.types[i].column()] = x
		deps[i].Spec.Replicas = ptr(want)
	}
	as.Commit(act)
	if surplusRemoved {
		as.RecordSurplusRemoval(obs.Now)
	}
	// A move that timed out keeps its old replica: its mark goes, so that
	// a later scale-in ranks it as any other.
	if err := r.unmarkTimedOut(ctx, svc, act, marked); err != nil {
		logger.Error(err, "clearing the mark of a consolidation move")
	}
	switch {
	case act.ReplacementPhase != "":
		r.reportReplacement(ms, &status, act)
		logger.Info("replacement", "phase", act.ReplacementPhase, "delta", delta, "reason", act.Reason)
	case len(delta) > 0:
		r.Recorder.Eventf(ms, v1.EventTypeNormal, kind, "%s", act.Reason)
		logger.Info("scaled", "action", kind, "delta", delta, "reason", act.Reason)
	}
	if act.Kind == heterogeneity.ActionNoFeasibleType {
		setCondition(&status, v1alpha1.ConditionNoFeasibleType, metav1.ConditionTrue, "NoFeasibleType", act.Reason, ms.Generation)
		r.Recorder.Eventf(ms, v1.EventTypeWarning, "NoFeasibleType", "%s", act.Reason)
	} else {
		setCondition(&status, v1alpha1.ConditionNoFeasibleType, metav1.ConditionFalse, "Feasible", "a GPU type meets the SLO and fits", ms.Generation)
	}
	setCondition(&status, v1alpha1.ConditionReady, metav1.ConditionTrue, "Reconciled", "Deployments reconciled", ms.Generation)

	status.Replicas = map[string]int32{}
	status.TotalReplicas = 0
	// Series of removed GPU types go with the rest.
	replicasGauge.DeletePartialMatch(prometheus.Labels{"namespace": ms.Namespace, "modelservice": ms.Name})
	costGauge.DeletePartialMatch(prometheus.Labels{"namespace": ms.Namespace, "modelservice": ms.Name})
	cost := 0.0
	for i, p := range svc.types {
		status.Replicas[p.column()] = replicasOf(deps[i])
		status.TotalReplicas += replicasOf(deps[i])
		replicasGauge.WithLabelValues(ms.Namespace, ms.Name, p.column()).Set(float64(replicasOf(deps[i])))
		costGauge.WithLabelValues(ms.Namespace, ms.Name, p.column()).Set(float64(replicasOf(deps[i])) * p.price)
		cost += float64(replicasOf(deps[i])) * p.price
	}
	status.CostUSDPerHour = strconv.FormatFloat(cost, 'f', 4, 64)
	measured := metav1.NewTime(now)
	status.MeasuredAt = &measured
	status.ArrivalRate = strconv.FormatFloat(w, 'f', 2, 64)
	status.Saturation = formatSaturation(act.Saturation)
	if ar.HasP98 {
		status.LatencyP98Ms = strconv.FormatFloat(p98, 'f', 1, 64)
	}
	if reportSLO(ms, &status, ar.SLO, svc.policy.ServiceLevel) || ar.HasP98 {
		status.LatencyMeasuredAt = &measured
	}
	status.RateHistory = rateHistory(as.History())
	d := v1alpha1.Decision{Time: metav1.NewTime(now), Action: kind, Delta: delta, Reason: act.Reason,
		Replacement: replacementStatus(act.Replacement, act.ReplacementPhase),
		Types:       typeDecisions(svc, deps, obs, act, seen), Alternative: decisionAlternative(svc, act)}
	if !isNoChange(act.Delta) {
		d.Objective = formatObjective(act.Objective)
	}
	recordDecision(&status, d, r.DecisionHistory)
	status.ScalingState = scalingState(as.State())
	if !math.IsInf(act.Saturation, 0) {
		saturationGauge.WithLabelValues(ms.Namespace, ms.Name).Set(act.Saturation)
	}
	arrivalRateGauge.WithLabelValues(ms.Namespace, ms.Name).Set(w)
	if ar.HasP98 {
		latencyP98Gauge.WithLabelValues(ms.Namespace, ms.Name).Set(p98)
	} else {
		latencyP98Gauge.DeleteLabelValues(ms.Namespace, ms.Name) // no p98 is no 0 ms
	}
	sloResponseTimeGauge.WithLabelValues(ms.Namespace, ms.Name).Set(ms.Spec.SLO.ResponseTimeMs)
	return svc.interval, r.writeStatusIfChanged(ctx, ms, status)
}

// reportNoCapacity sets the NoCapacity condition: True naming the GPU
// types with unschedulable replicas (noRoom), with a Warning event when
// that is news; else False.
func (r *Reconciler) reportNoCapacity(ms *v1alpha1.ModelService, status *v1alpha1.ModelServiceStatus, noRoom []string) {
	if len(noRoom) == 0 {
		setCondition(status, v1alpha1.ConditionNoCapacity, metav1.ConditionFalse, "Scheduled", "no replica is unschedulable", ms.Generation)
		return
	}
	r.warnCondition(ms, status, v1alpha1.ConditionNoCapacity, v1.PodReasonUnschedulable, strings.Join(noRoom, "; "))
}

// warnCondition sets condition typ True with reason and msg, with a
// Warning event (reason typ) when that is news: the condition was not
// True with the same message.
func (r *Reconciler) warnCondition(ms *v1alpha1.ModelService, status *v1alpha1.ModelServiceStatus, typ, reason, msg string) {
	if c := meta.FindStatusCondition(status.Conditions, typ); c == nil || c.Status != metav1.ConditionTrue || c.Message != msg {
		r.Recorder.Eventf(ms, v1.EventTypeWarning, typ, "%s", msg)
	}
	setCondition(status, typ, metav1.ConditionTrue, reason, msg, ms.Generation)
}

// notStartingAll is notStartingOf for each GPU type's Deployment (deps,
// in svc.types' order) at now.
func (r *Reconciler) notStartingAll(ctx context.Context, svc *service, deps []*appsv1.Deployment, now time.Time) ([]notStarting, error) {
	out := make([]notStarting, len(svc.types))
	for i, p := range svc.types {
		ns, err := r.notStartingOf(ctx, deps[i], now, p.spec.LaunchSeconds)
		if err != nil {
			return nil, err
		}
		ns.column = p.column()
		ns.replicas = replicasOf(deps[i])
		out[i] = ns
	}
	return out, nil
}

// reportNotStarting sets the NotStarting condition: True, with the first
// not-starting pod's waiting reason (or NotReadyAfterLaunch), naming the
// GPU types with bound replicas that cannot start, and a Warning event
// when that is news; else False.
func (r *Reconciler) reportNotStarting(ms *v1alpha1.ModelService, status *v1alpha1.ModelServiceStatus, stuck []notStarting) {
	var parts []string
	reason := ""
	for _, ns := range stuck {
		if ns.pods == 0 {
			continue
		}
		if reason == "" {
			reason = ns.reason
		}
		parts = append(parts, fmt.Sprintf("%s: %d of %d replicas not starting (%s)", ns.column, ns.pods, ns.replicas, ns.detail))
	}
	if len(parts) == 0 {
		setCondition(status, v1alpha1.ConditionNotStarting, metav1.ConditionFalse, "Starting", "every bound replica is Ready or within its launch time", ms.Generation)
		return
	}
	r.warnCondition(ms, status, v1alpha1.ConditionNotStarting, reason, strings.Join(parts, "; "))
}

// partialDecision is the action taken on a decision whose arrival rate
// was only a lower bound (lowerBound describes it), and its kind for
// status and the decision counter: a scale-out (or NoFeasibleType) stands,
// with the lower bound added to its reason; anything else is a Hold, and
// an action that would remove instances (which the autoscaler does not
// return for a lower bound) becomes one with no change.
func partialDecision(act heterogeneity.Action, lowerBound string) (string, heterogeneity.Action) {
	removes := false
	for _, x := range act.Delta {
		removes = removes || x < 0
	}
	if act.Kind == heterogeneity.ActionReplace || act.ReplacementPhase != "" {
		// A replacement removes no capacity: on a lower bound it removes
		// no old instance, only new ones never ready after its timeout.
		act.Reason = fmt.Sprintf("%s; %s", act.Reason, lowerBound)
		return string(act.Kind), act
	}
	if !removes && (act.Kind == heterogeneity.ActionScaleOut || act.Kind == heterogeneity.ActionNoFeasibleType) {
		act.Reason = fmt.Sprintf("%s; %s", act.Reason, lowerBound)
		return string(act.Kind), act
	}
	act.Reason = fmt.Sprintf("%s; scale-in held (%s)", lowerBound, act.Reason)
	act.Kind, act.Delta, act.Objective, act.Alternative = heterogeneity.ActionNone, make([]int, len(act.Delta)), 0, nil
	return "Hold", act
}

// capacityFor counts the instances of svc that fit on free GPUs of p's
// type and their instances' mean co-location inflation (capacityOf;
// cached nodes and pods, read only, so not copied). In GPU mode dra the
// GPUs are the ResourceSlices' devices less the allocated ResourceClaims
// (draCluster).
func (r *Reconciler) capacityFor(ctx context.Context, svc *service, p gpuProfile, cpu, mem resource.Quantity) (typeCapacity, error) {
	var nodes v1.NodeList
	if err := r.Client.List(ctx, &nodes, client.MatchingLabels{gpuinventory.LabelGPUProduct: p.gpuType.ProductLabel}, client.UnsafeDisableDeepCopy); err != nil {
		return typeCapacity{}, err
	}
	var pods v1.PodList
	if err := r.Client.List(ctx, &pods, client.UnsafeDisableDeepCopy); err != nil {
		return typeCapacity{}, err
	}
	var dc *draCluster
	if r.defaults().GPUMode == v1alpha1.GPUModeDRA {
		var err error
		if dc, err = r.draClusterFor(ctx, pointers(pods.Items), p.gpuType.ProductLabel); err != nil {
			return typeCapacity{}, err
		}
	}
	pl := placement.Placer{Colocation: r.colocation(), Mode: r.gpuSharing()}
	return capacityOf(pointers(nodes.Items), pointers(pods.Items), types.NamespacedName{Namespace: svc.obj.Namespace, Name: svc.obj.Name}, p.gpuType.ProductLabel, svc.demand(p), r.admission(), pl, svc.tolerations(), svc.pool, cpu, mem, dc), nil
}

func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
