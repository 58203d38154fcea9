package scaler

import (
	"context"
	"math"
	"sort"
	"strconv"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// writeStatus updates ms's status subresource to st.
func (r *Reconciler) writeStatus(ctx context.Context, ms *v1alpha1.ModelService, st v1alpha1.ModelServiceStatus) error {
	sortConditions(&st)
	ms.Status = st
	err := r.Client.Status().Update(ctx, ms)
	if apierrors.IsConflict(err) {
		// A newer object is in the cache; the next interval retries.
		return nil
	}
	return err
}

// writeStatusIfChanged writes st unless ms already has it.
func (r *Reconciler) writeStatusIfChanged(ctx context.Context, ms *v1alpha1.ModelService, st v1alpha1.ModelServiceStatus) error {
	sortConditions(&st)
	if equality.Semantic.DeepEqual(ms.Status, st) {
		return nil
	}
	return r.writeStatus(ctx, ms, st)
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
