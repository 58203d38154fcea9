package scaler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
	"github.com/hetsev/hetsev/pkg/interference"
)

// sync runs one decision for the ModelService key and returns when to run
// the next one.
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	start := c.now()
	defer func() { decisionSeconds.Observe(time.Since(start).Seconds()) }()
	logger := klog.FromContext(ctx).WithValues("modelservice", key)
	obj, exists, err := c.msInformer.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return 0, err
	}
	u := obj.(*unstructured.Unstructured).DeepCopy()
	ms, err := fromUnstructured(u)
	if err != nil {
		return 0, err
	}
	status := *ms.Status.DeepCopy()
	svc, err := validate(ms, c.catalog, c.defaults)
	if err != nil {
		c.recorder.Eventf(u, v1.EventTypeWarning, "InvalidSpec", "%v", err)
		setCondition(&status, v1alpha1.ConditionReady, metav1.ConditionFalse, "InvalidSpec", err.Error(), ms.Generation)
		return 0, c.writeStatus(ctx, u, status)
	}
	as := c.autoscalerFor(key, svc.policy)

	// Desired Deployments exist, one per GPU type.
	deps := make([]*appsv1.Deployment, len(svc.types))
	for i, p := range svc.types {
		d, err := c.ensureDeployment(ctx, svc, p)
		if err != nil {
			return 0, err
		}
		deps[i] = d
	}

	// Arrival rate W: the sum over Deployments that have instances. A
	// Deployment with instances but no metric means W is unknown: hold.
	w, p98, missing := 0.0, 0.0, []string{}
	for _, d := range deps {
		if replicasOf(d) == 0 && d.Status.Replicas == 0 {
			continue
		}
		v, err := c.metrics.DeploymentMetric(d.Namespace, d.Name, MetricRequestsPerSecond)
		if err != nil {
			if d.Status.ReadyReplicas > 0 {
				missing = append(missing, d.Name)
				logger.V(2).Info("metric unavailable", "deployment", d.Name, "err", err)
			}
			continue
		}
		w += v
		if l, err := c.metrics.DeploymentMetric(d.Namespace, d.Name, MetricLatencyP98); err == nil && l > p98 {
			p98 = l
		}
	}
	now := c.now()
	c.splitTraffic(ctx, svc, deps, &status)
	if len(missing) > 0 {
		msg := fmt.Sprintf("no %s for %s: holding replicas", MetricRequestsPerSecond, strings.Join(missing, ", "))
		setCondition(&status, v1alpha1.ConditionMetricsUnavailable, metav1.ConditionTrue, "MetricsUnavailable", msg, ms.Generation)
		status.LastDecision = &v1alpha1.Decision{Time: metav1.NewTime(now), Action: "Hold", Reason: msg}
		decisionsTotal.WithLabelValues(ms.Namespace, ms.Name, "Hold").Inc()
		return svc.interval, c.writeStatus(ctx, u, status)
	}
	setCondition(&status, v1alpha1.ConditionMetricsUnavailable, metav1.ConditionFalse, "MetricsAvailable", "arrival rate read from custom.metrics.k8s.io", ms.Generation)

	obs := heterogeneity.Observation{Now: now, ArrivalRate: w}
	for i, p := range svc.types {
		cpu, mem := resource.Quantity{}, resource.Quantity{}
		if p.spec.CPU != "" {
			cpu = resource.MustParse(p.spec.CPU)
		}
		if p.spec.Memory != "" {
			mem = resource.MustParse(p.spec.Memory)
		}
		slots, err := c.freeSlotsFor(ms, p, cpu, mem)
		if err != nil {
			return 0, err
		}
		// Worst expected co-location: one busy different model on the GPU
		// (HetSev 3.2: +18 % for 90 % of pairs; an estimate).
		obs.Types = append(obs.Types, svc.typeState(i, int(replicasOf(deps[i])), slots, 1+interference.Default().DifferentPair))
	}
	solveStart := time.Now()
	act := as.Decide(obs)
	solverSeconds.WithLabelValues(svc.policy.Solver).Observe(time.Since(solveStart).Seconds())
	decisionsTotal.WithLabelValues(ms.Namespace, ms.Name, string(act.Kind)).Inc()

	delta := map[string]int32{}
	for i, x := range act.Delta {
		if x == 0 {
			continue
		}
		delta[svc.types[i].gpuType.Name] = int32(x)
		if err := c.setReplicas(ctx, deps[i], replicasOf(deps[i])+int32(x)); err != nil {
			return 0, err
		}
		deps[i].Spec.Replicas = ptr(replicasOf(deps[i]) + int32(x))
	}
	if len(delta) > 0 {
		c.recorder.Eventf(u, v1.EventTypeNormal, string(act.Kind), "%s", act.Reason)
		logger.Info("scaled", "action", act.Kind, "delta", delta, "reason", act.Reason)
	}
	if act.Kind == heterogeneity.ActionNoFeasibleType {
		setCondition(&status, v1alpha1.ConditionNoFeasibleType, metav1.ConditionTrue, "NoFeasibleType", act.Reason, ms.Generation)
		c.recorder.Eventf(u, v1.EventTypeWarning, "NoFeasibleType", "%s", act.Reason)
	} else {
		setCondition(&status, v1alpha1.ConditionNoFeasibleType, metav1.ConditionFalse, "Feasible", "a GPU type meets the SLO and fits", ms.Generation)
	}
	setCondition(&status, v1alpha1.ConditionReady, metav1.ConditionTrue, "Reconciled", "Deployments reconciled", ms.Generation)

	status.Replicas = map[string]int32{}
	for i, p := range svc.types {
		status.Replicas[p.gpuType.Name] = replicasOf(deps[i])
		replicasGauge.WithLabelValues(ms.Namespace, ms.Name, p.gpuType.Name).Set(float64(replicasOf(deps[i])))
	}
	status.ArrivalRate = strconv.FormatFloat(w, 'f', 2, 64)
	status.Saturation = formatSaturation(act.Saturation)
	status.LatencyP98Ms = strconv.FormatFloat(p98, 'f', 1, 64)
	status.LastDecision = &v1alpha1.Decision{Time: metav1.NewTime(now), Action: string(act.Kind), Delta: delta, Reason: act.Reason}
	status.ObservedGeneration = ms.Generation
	if !math.IsInf(act.Saturation, 0) {
		saturationGauge.WithLabelValues(ms.Namespace, ms.Name).Set(act.Saturation)
	}
	arrivalRateGauge.WithLabelValues(ms.Namespace, ms.Name).Set(w)
	return svc.interval, c.writeStatus(ctx, u, status)
}

func formatSaturation(s float64) string {
	if math.IsInf(s, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(s, 'f', 3, 64)
}

func ptr[T any](v T) *T { return &v }

func replicasOf(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

func (c *Controller) autoscalerFor(key string, p heterogeneity.Policy) *heterogeneity.Autoscaler {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.autoscaler[key]
	if !ok {
		a = heterogeneity.NewAutoscaler(p)
		c.autoscaler[key] = a
	}
	a.Policy = p // spec edits apply to the next decision
	return a
}

// ensureDeployment creates the GPU type's Deployment with zero replicas when
// missing (the decision then scales it) and keeps its pod template in line
// with the spec without touching replicas: a hash of the desired template,
// kept in an annotation, tells when the spec changed.
func (c *Controller) ensureDeployment(ctx context.Context, svc *service, p gpuProfile) (*appsv1.Deployment, error) {
	name := DeploymentName(svc.obj.Name, p.gpuType.Name)
	want := desiredDeployment(svc, p, 0)
	hash, err := templateHash(want)
	if err != nil {
		return nil, err
	}
	want.Annotations = map[string]string{v1alpha1.AnnotationTemplateHash: hash}
	cur, err := c.deployments.Deployments(svc.obj.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		created, err := c.kube.AppsV1().Deployments(want.Namespace).Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return c.kube.AppsV1().Deployments(want.Namespace).Get(ctx, name, metav1.GetOptions{})
		}
		if err != nil {
			return nil, fmt.Errorf("creating deployment %s: %w", name, err)
		}
		return created, nil
	}
	if err != nil {
		return nil, err
	}
	if cur.Annotations[v1alpha1.AnnotationTemplateHash] == hash {
		return cur.DeepCopy(), nil
	}
	upd := cur.DeepCopy()
	upd.Spec.Template = want.Spec.Template
	if upd.Annotations == nil {
		upd.Annotations = map[string]string{}
	}
	upd.Annotations[v1alpha1.AnnotationTemplateHash] = hash
	out, err := c.kube.AppsV1().Deployments(upd.Namespace).Update(ctx, upd, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("updating the template of deployment %s: %w", name, err)
	}
	return out, nil
}

func templateHash(d *appsv1.Deployment) (string, error) {
	b, err := json.Marshal(d.Spec.Template)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8]), nil
}

func (c *Controller) setReplicas(ctx context.Context, d *appsv1.Deployment, n int32) error {
	patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, n))
	_, err := c.kube.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, "application/merge-patch+json", patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("scaling deployment %s to %d: %w", d.Name, n, err)
	}
	return nil
}

func (c *Controller) freeSlotsFor(ms *v1alpha1.ModelService, p gpuProfile, cpu, mem resource.Quantity) (int, error) {
	nodes, err := c.nodes.List(labels.SelectorFromSet(labels.Set{gpuinventory.LabelGPUProduct: p.gpuType.ProductLabel}))
	if err != nil {
		return 0, err
	}
	pods, err := c.pods.List(labels.Everything())
	if err != nil {
		return 0, err
	}
	return freeSlots(nodes, pods, p.gpuType.ProductLabel, gpuinventory.Demand{Model: ms.Spec.Model, MemoryMiB: p.gpuMemMiB}, cpu, mem), nil
}

// writeStatus updates the status subresource.
func (c *Controller) writeStatus(ctx context.Context, u *unstructured.Unstructured, st v1alpha1.ModelServiceStatus) error {
	sort.Slice(st.Conditions, func(i, j int) bool { return st.Conditions[i].Type < st.Conditions[j].Type })
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		return err
	}
	u.Object["status"] = m
	_, err = c.dyn.Resource(v1alpha1.Resource).Namespace(u.GetNamespace()).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		// A newer object is in the informer; the next interval retries.
		return nil
	}
	return err
}

func setCondition(st *v1alpha1.ModelServiceStatus, typ string, s metav1.ConditionStatus, reason, msg string, gen int64) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen})
}
