package scaler

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hetsev/hetsev/pkg/adapter"
)

// arrival is a ModelService's arrival rate W as one decision measured it.
type arrival struct {
	// W is the sum of requests/s over the Deployments that have instances,
	// in requests/s; only a lower bound of W when Partial.
	W float64
	// P98Ms is the highest p98 latency, in ms, of the Deployments whose
	// value the adapter gave; HasP98 says whether any gave one.
	P98Ms  float64
	HasP98 bool
	// SLO is what the adapter gave about the SLO (measureSLO), over the
	// Deployments whose requests/s it gave.
	SLO sloMeasure
	// Partial: the adapter withheld the value of a Deployment with Ready
	// instances (a serving pod of it has no data), so W sums that
	// Deployment's pods that have data.
	Partial bool
	// Measured and Serving count the serving pods (adapter.Serving) with
	// data and in all, over the Deployments with instances; only when
	// Partial.
	Measured, Serving int
	// Withheld names the Deployments whose value was withheld, Unmeasured
	// their serving pods without data.
	Withheld, Unmeasured []string
	// Nothing: no pod and no Deployment of the ModelService has data while
	// some serve; W is then unknown, not even bounded.
	Nothing bool
	// TimedOut: a call to custom.metrics.k8s.io did not answer within the
	// metrics timeout; W is then unknown and the rest was not asked.
	TimedOut bool
	// LatencyTimedOut: a read of a value the decision does not need (the
	// p98 latency, the SLO attainment, the latency at the service level)
	// did not answer within the metrics timeout. The other such reads of
	// the decision were skipped, so P98Ms and SLO, which would cover only
	// some Deployments, are left empty; W is unaffected.
	LatencyTimedOut bool
}

// lowerBound describes a partial measurement for status:
// "W >= 812.50 req/s from 4 of 6 pods (unmeasured: a, b)".
func (a arrival) lowerBound() string {
	s := fmt.Sprintf("W >= %.2f req/s from %d of %d pods", a.W, a.Measured, a.Serving)
	if len(a.Unmeasured) > 0 {
		s += " (unmeasured: " + strings.Join(a.Unmeasured, ", ") + ")"
	}
	return s
}

// measureArrival reads W of the Deployments deps that have instances from
// custom.metrics.k8s.io. A Deployment without instances counts 0; one
// whose value is unavailable counts 0 while none of its instances is
// Ready and another Deployment gave a value; when none did, W is unknown
// (Nothing) and the decision holds. When the adapter withholds the value of one with Ready instances
// (it does while any serving pod has no data: a new instance has none
// until traffic reaches it and its rate window fills), its pods' values
// are read and summed instead, giving a lower bound of W with its
// coverage; the decision may then scale out but not in.
//
// Every call to the metrics API gets the metrics timeout
// (Reconciler.MetricsTimeout); once a read of W runs out, the API is
// taken as hung: no further call is made and the result is TimedOut. The
// latency and SLO reads only inform status and gauges: once one of them
// runs out, the others are skipped (LatencyTimedOut) and W is read on, so
// a hung latency or SLO endpoint costs a decision one metrics timeout and
// never its arrival rate.
//
// With a SelectedMetricsSource it also reads, for each Deployment whose
// requests/s the adapter gave, the SLO attainment at slo's RT_max and the
// latency at its SL_min (measureSLO).
func (r *Reconciler) measureArrival(ctx context.Context, deps []*appsv1.Deployment, slo sloTarget) (arrival, error) {
	a, err := r.measureArrivalOnce(ctx, deps, slo)
	if a.LatencyTimedOut {
		a.P98Ms, a.HasP98, a.SLO = 0, false, sloMeasure{}
	}
	if ctx.Err() != nil {
		return a, ctx.Err() // shutting down: what was read is incomplete
	}
	return a, err
}

func (r *Reconciler) measureArrivalOnce(ctx context.Context, deps []*appsv1.Deployment, slo sloTarget) (arrival, error) {
	logger := klog.FromContext(ctx)
	var (
		a              arrival
		full, withheld []*appsv1.Deployment
		// unready gave no value and have no Ready instance.
		unready []*appsv1.Deployment
	)
	for _, d := range deps {
		if replicasOf(d) == 0 && d.Status.Replicas == 0 {
			continue
		}
		var v float64
		err := r.metricsCall(ctx, &a, func(ctx context.Context) (err error) {
			v, err = r.Metrics.DeploymentMetric(ctx, d.Namespace, d.Name, adapter.MetricRequestsPerSecond)
			return err
		})
		if a.TimedOut {
			return a, nil
		}
		if err != nil {
			if d.Status.ReadyReplicas > 0 {
				withheld = append(withheld, d)
				logger.V(2).Info("metric unavailable, reading its pods", "deployment", d.Name, "err", err)
			} else {
				unready = append(unready, d)
			}
			continue
		}
		full = append(full, d)
		a.W += v
		var l float64
		err = r.optionalCall(ctx, &a, func(ctx context.Context) (err error) {
			l, err = r.Metrics.DeploymentMetric(ctx, d.Namespace, d.Name, adapter.MetricLatencyP98)
			return err
		})
		if err == nil && (!a.HasP98 || l > a.P98Ms) {
			a.P98Ms, a.HasP98 = l, true
		}
		r.measureSLO(ctx, &a, d, v, slo)
	}
	if len(withheld) == 0 {
		if len(full) == 0 && len(unready) > 0 {
			// No Deployment gave a value and no instance is Ready (every
			// replica restarting while the metrics API errors): W is
			// unknown, not 0, and a 0 would scale in the replicas that
			// are coming back.
			a.Nothing = true
			for _, d := range unready {
				a.Withheld = append(a.Withheld, d.Name)
			}
		}
		return a, nil
	}
	a.Partial = true
	for _, d := range full {
		pods, _, err := r.servingPods(ctx, d)
		if err != nil {
			return a, err
		}
		a.Measured += len(pods)
		a.Serving += len(pods)
	}
	values := 0
	for _, d := range withheld {
		a.Withheld = append(a.Withheld, d.Name)
		pods, sel, err := r.servingPods(ctx, d)
		if err != nil {
			return a, err
		}
		var byPod map[string]float64
		err = r.metricsCall(ctx, &a, func(ctx context.Context) (err error) {
			byPod, err = r.Metrics.PodMetrics(ctx, d.Namespace, sel, adapter.MetricRequestsPerSecond)
			return err
		})
		if a.TimedOut {
			return a, nil
		}
		if err != nil {
			logger.V(2).Info("pod metrics unavailable", "deployment", d.Name, "err", err)
		}
		for _, v := range byPod { // every pod with data, serving or not, as the adapter sums
			a.W += v
		}
		values += len(byPod)
		for _, p := range pods {
			if _, ok := byPod[p]; ok {
				a.Measured++
			} else {
				a.Unmeasured = append(a.Unmeasured, p)
			}
		}
		a.Serving += len(pods)
	}
	sort.Strings(a.Unmeasured)
	a.Nothing = len(full) == 0 && values == 0
	return a, nil
}

// metricsCall makes one call for W to the metrics API with a deadline of
// the metrics timeout (timedCall), and sets a.TimedOut when the deadline
// ended it.
func (r *Reconciler) metricsCall(ctx context.Context, a *arrival, call func(context.Context) error) error {
	timedOut, err := r.timedCall(ctx, call)
	if timedOut {
		a.TimedOut = true
	}
	return err
}

// errLatencySkipped is the error of a latency or SLO read skipped after
// another one timed out.
var errLatencySkipped = errors.New("skipped: an earlier latency or SLO read of this decision timed out")

// optionalCall makes one call for a value the decision does not need (a
// latency or the SLO attainment) with a deadline of the metrics timeout,
// unless one such call of the decision has timed out already
// (a.LatencyTimedOut, set when the deadline ended it): then it makes no
// call and returns errLatencySkipped.
func (r *Reconciler) optionalCall(ctx context.Context, a *arrival, call func(context.Context) error) error {
	if a.LatencyTimedOut {
		return errLatencySkipped
	}
	timedOut, err := r.timedCall(ctx, call)
	if timedOut {
		a.LatencyTimedOut = true
		klog.FromContext(ctx).Info("latency or SLO metric gave no answer within the metrics timeout; skipping the others of this decision", "timeout", r.metricsTimeout(), "err", err)
	}
	return err
}

// timedCall makes one call to the metrics API with a deadline of the
// metrics timeout and says whether that deadline (not ctx) ended it.
func (r *Reconciler) timedCall(ctx context.Context, call func(context.Context) error) (bool, error) {
	cctx, cancel := context.WithTimeout(ctx, r.metricsTimeout())
	defer cancel()
	err := call(cctx)
	return err != nil && ctx.Err() == nil && cctx.Err() != nil, err
}

// servingPods lists the names of d's serving pods (adapter.Serving) from
// the cache, and d's selector.
func (r *Reconciler) servingPods(ctx context.Context, d *appsv1.Deployment) ([]string, labels.Selector, error) {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, nil, fmt.Errorf("selector of deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	var pods v1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(d.Namespace), client.MatchingLabelsSelector{Selector: sel}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, fmt.Errorf("pods of deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	var names []string
	for i := range pods.Items {
		if adapter.Serving(&pods.Items[i]) {
			names = append(names, pods.Items[i].Name)
		}
	}
	return names, sel, nil
}
