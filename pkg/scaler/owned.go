package scaler

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// FieldManager is the field manager of everything hetsev-scaler creates or
// applies (server-side apply) for a ModelService's traffic.
const FieldManager = v1alpha1.ScalerName

// ownedLabels are the labels of the Service, VirtualService and
// DestinationRule of ModelService ms: the manager's cache holds only
// objects with hetsev.io/modelservice (RoutingCacheSelector).
func ownedLabels(ms *v1alpha1.ModelService) map[string]string {
	return map[string]string{v1alpha1.LabelModelService: ms.Name, "app.kubernetes.io/managed-by": v1alpha1.ScalerName}
}

// desiredOwned is the object of cur's kind named like ms, in its namespace,
// with ownedLabels, ms as its controller and spec (marshalled to JSON), as
// server-side apply sends it: only the fields the scaler sets.
func (r *Reconciler) desiredOwned(ms *v1alpha1.ModelService, cur client.Object, spec any) (*unstructured.Unstructured, error) {
	gvk, err := apiutil.GVKForObject(cur, r.Client.Scheme())
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("%s spec: %w", gvk.Kind, err)
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s spec: %w", gvk.Kind, err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": s}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(ms.Namespace)
	u.SetName(ms.Name)
	u.SetLabels(ownedLabels(ms))
	u.SetOwnerReferences([]metav1.OwnerReference{ownerRef(ms)})
	return u, nil
}

// ensureOwned keeps the object of cur's kind named like ms (its Service,
// VirtualService or DestinationRule) as want (desiredOwned):
//   - missing: created with ms as its controller, by FieldManager; Create
//     fails when one appeared meanwhile, so a foreign object is never
//     written over;
//   - controlled by ms: server-side applied by FieldManager with forced
//     ownership when it differs from want in a field want sets, so an edit
//     of those fields is reverted (fields others add are left to them);
//   - anything else (no controller, or another one): left alone, a
//     *NotControlledError.
//
// It reads through the cache, which holds only labelled objects, and
// around it when Create finds one the cache did not show.
func (r *Reconciler) ensureOwned(ctx context.Context, ms *v1alpha1.ModelService, cur client.Object, want *unstructured.Unstructured) error {
	key := client.ObjectKeyFromObject(want)
	kind := want.GetKind()
	err := r.Client.Get(ctx, key, cur)
	if apierrors.IsNotFound(err) {
		err = r.Client.Create(ctx, want.DeepCopy(), client.FieldOwner(FieldManager))
		if err == nil {
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s %s: %w", kind, key, err)
		}
		// Unlabelled (not cached) or not cached yet.
		err = r.apiReader().Get(ctx, key, cur)
	}
	if err != nil {
		return fmt.Errorf("reading %s %s: %w", kind, key, err)
	}
	if err := controlledBy(cur, ms); err != nil {
		return err
	}
	if inLine, err := holds(cur, want); err != nil || inLine {
		return err
	}
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(want.DeepCopy()), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s: %w", kind, key, err)
	}
	return nil
}

// holds says whether cur has every label and spec field that want sets,
// with want's value; fields only cur has (defaults, those of other field
// managers) do not count. The controller reference is checked before
// (controlledBy).
func holds(cur client.Object, want *unstructured.Unstructured) (bool, error) {
	b, err := json.Marshal(cur)
	if err != nil {
		return false, err
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		return false, err
	}
	for _, path := range [][]string{{"metadata", "labels"}, {"spec"}} {
		h, _, _ := unstructured.NestedFieldNoCopy(c, path...)
		w, _, _ := unstructured.NestedFieldNoCopy(want.Object, path...)
		if !contains(h, w) {
			return false, nil
		}
	}
	return true, nil
}

// contains: maps hold want's keys with contained values, lists are as long
// as want's with contained elements, scalars are equal.
func contains(have, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		for k, v := range w {
			if !contains(h[k], v) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !contains(h[i], w[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(have, want)
}
