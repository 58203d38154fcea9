package scaler

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// DefaultStatusRefresh is --status-refresh's default: how often the
// measured fields of a ModelService's status (measuredAt, arrivalRate,
// saturation, the latency fields, rateHistory) are rewritten while nothing
// else in it changes. They change at every decision (every 5 s by
// default), and each write is an etcd write and a watch event to every
// client of ModelServices; 30 s keeps kubectl and dashboards current
// while cutting those writes six-fold. A new leader then restores a rate
// history at most this old.
const DefaultStatusRefresh = 30 * time.Second

// writeStatusIfChanged writes st as ms's status unless ms already has it,
// or only its measured fields (withoutMeasured) differ and those were
// written less than the status refresh ago. The write is a merge patch of
// the status subresource computed against the object read afresh from the
// API server (APIReader; the cache may not yet hold the previous write, and
// a patch computed against a stale copy would leave the server with a mix
// of the two), with its resourceVersion as a precondition. It leaves ms
// with the status written.
func (r *Reconciler) writeStatusIfChanged(ctx context.Context, ms *v1alpha1.ModelService, st v1alpha1.ModelServiceStatus) error {
	sortConditions(&st)
	if equality.Semantic.DeepEqual(ms.Status, st) {
		return nil
	}
	if equality.Semantic.DeepEqual(withoutMeasured(ms.Status), withoutMeasured(st)) && ms.Status.MeasuredAt != nil &&
		r.now().Sub(ms.Status.MeasuredAt.Time) < r.statusRefresh() {
		return nil
	}
	base := ms
	if r.APIReader != nil {
		fresh := &v1alpha1.ModelService{}
		err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(ms), fresh)
		if apierrors.IsNotFound(err) {
			return nil // deleted meanwhile
		}
		if err != nil {
			return fmt.Errorf("reading modelservice %s/%s before writing its status: %w", ms.Namespace, ms.Name, err)
		}
		base = fresh
	}
	orig := base.DeepCopy()
	ms.Status = st
	ms.ResourceVersion = orig.ResourceVersion
	err := r.Client.Status().Patch(ctx, ms, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsNotFound(err) {
		return nil // deleted meanwhile
	}
	if err != nil {
		return fmt.Errorf("writing the status of modelservice %s/%s: %w", ms.Namespace, ms.Name, err)
	}
	statusWritesTotal.WithLabelValues(ms.Namespace, ms.Name).Inc()
	return nil
}

// withoutMeasured is st without the fields every decision measures anew:
// what makes a status write due at once when it changes.
func withoutMeasured(st v1alpha1.ModelServiceStatus) v1alpha1.ModelServiceStatus {
	st.MeasuredAt, st.LatencyMeasuredAt, st.RateHistory = nil, nil, nil
	st.ArrivalRate, st.Saturation, st.LatencyP98Ms, st.Attainment, st.LatencyAtServiceLevelMs = "", "", "", "", ""
	return st
}

func (r *Reconciler) statusRefresh() time.Duration {
	if r.StatusRefresh <= 0 {
		return DefaultStatusRefresh
	}
	return r.StatusRefresh
}

func sortConditions(st *v1alpha1.ModelServiceStatus) {
	sort.Slice(st.Conditions, func(i, j int) bool { return st.Conditions[i].Type < st.Conditions[j].Type })
}

func setCondition(st *v1alpha1.ModelServiceStatus, typ string, s metav1.ConditionStatus, reason, msg string, gen int64) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen})
}

func formatSaturation(s float64) string {
	if math.IsInf(s, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(s, 'f', 3, 64)
}
