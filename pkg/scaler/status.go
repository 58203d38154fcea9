package scaler

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// writeStatusIfChanged writes st as ms's status unless ms already has it,
// with a merge patch of the status subresource: the scaler is its only
// writer, so no resourceVersion is needed, and a concurrent change of the
// spec cannot make the write fail. It leaves ms with the status written.
func (r *Reconciler) writeStatusIfChanged(ctx context.Context, ms *v1alpha1.ModelService, st v1alpha1.ModelServiceStatus) error {
	sortConditions(&st)
	if equality.Semantic.DeepEqual(ms.Status, st) {
		return nil
	}
	orig := ms.DeepCopy()
	ms.Status = st
	err := r.Client.Status().Patch(ctx, ms, client.MergeFrom(orig))
	if apierrors.IsNotFound(err) {
		return nil // deleted meanwhile
	}
	if err != nil {
		return fmt.Errorf("writing the status of modelservice %s/%s: %w", ms.Namespace, ms.Name, err)
	}
	statusWritesTotal.WithLabelValues(ms.Namespace, ms.Name).Inc()
	return nil
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
