// Package traffic splits a ModelService's requests across its GPU types in
// proportion to their serving capacity T_i N_i, by writing an Istio
// VirtualService with one weighted route per GPU-type subset and a
// DestinationRule defining the subsets. Without it a round-robin split sends
// a T4 instance as many requests as a V100 one, which has twice its
// throughput, and the T4 misses the SLO while the V100 idles.
package traffic

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"
	networkingapi "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// Share is one GPU type's part of a service.
type Share struct {
	GPUType     string
	Labels      map[string]string // selects the type's pods
	CapacityRPS float64           // T_i N_i, requests/s
}

// SubsetName is the DestinationRule subset of a GPU type, e.g. "v100-32gb".
func SubsetName(gpuType string) string {
	return strings.ToLower(strings.NewReplacer(" ", "-", "_", "-", ".", "-").Replace(gpuType))
}

// Weights returns route weights (percent, summing to 100) proportional to
// the shares' capacities, by the largest-remainder method so that rounding
// never loses a percent. ok is false when no share has capacity.
func Weights(shares []Share) (w []int32, ok bool) {
	total := 0.0
	for _, s := range shares {
		if s.CapacityRPS > 0 && !math.IsInf(s.CapacityRPS, 0) {
			total += s.CapacityRPS
		}
	}
	if total <= 0 {
		return nil, false
	}
	w = make([]int32, len(shares))
	type rem struct {
		i int
		r float64
	}
	var rems []rem
	sum := int32(0)
	for i, s := range shares {
		if !(s.CapacityRPS > 0) || math.IsInf(s.CapacityRPS, 0) {
			continue
		}
		exact := 100 * s.CapacityRPS / total
		w[i] = int32(math.Floor(exact))
		sum += w[i]
		rems = append(rems, rem{i, exact - math.Floor(exact)})
	}
	sort.SliceStable(rems, func(a, b int) bool { return rems[a].r > rems[b].r })
	for k := 0; sum < 100 && k < len(rems); k++ {
		w[rems[k].i]++
		sum++
	}
	return w, true
}

// Writer writes VirtualServices and DestinationRules.
type Writer struct{ Client istioclient.Interface }

// ErrIstioMissing wraps errors that mean the Istio CRDs are not installed.
var ErrIstioMissing = errors.New("Istio networking CRDs are not installed")

// Apply makes the VirtualService and DestinationRule named name in ns route
// host to the shares' subsets with capacity-proportional weights. owner
// makes them garbage-collected with the ModelService. It returns the
// weights written.
func (w Writer) Apply(ctx context.Context, ns, name, host string, owner metav1.OwnerReference, shares []Share) ([]int32, error) {
	weights, ok := Weights(shares)
	if !ok {
		return nil, nil // nothing serves yet: leave the routes as they are
	}
	meta := metav1.ObjectMeta{Name: name, Namespace: ns, OwnerReferences: []metav1.OwnerReference{owner},
		Labels: map[string]string{"app.kubernetes.io/managed-by": v1alpha1.ScalerName}}
	dr := &networkingv1.DestinationRule{ObjectMeta: meta}
	dr.Spec.Host = host
	vs := &networkingv1.VirtualService{ObjectMeta: *meta.DeepCopy()}
	vs.Spec.Hosts = []string{host}
	route := &networkingapi.HTTPRoute{Name: "capacity-weighted"}
	for i, s := range shares {
		dr.Spec.Subsets = append(dr.Spec.Subsets, &networkingapi.Subset{Name: SubsetName(s.GPUType), Labels: s.Labels})
		route.Route = append(route.Route, &networkingapi.HTTPRouteDestination{
			Destination: &networkingapi.Destination{Host: host, Subset: SubsetName(s.GPUType)},
			Weight:      weights[i],
		})
	}
	vs.Spec.Http = []*networkingapi.HTTPRoute{route}

	drs := w.Client.NetworkingV1().DestinationRules(ns)
	if cur, err := drs.Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		if _, err := drs.Create(ctx, dr, metav1.CreateOptions{}); err != nil {
			return nil, wrapMissing(fmt.Errorf("creating DestinationRule %s/%s: %w", ns, name, err))
		}
	} else if err != nil {
		return nil, wrapMissing(fmt.Errorf("reading DestinationRule %s/%s: %w", ns, name, err))
	} else if !proto.Equal(&cur.Spec, &dr.Spec) { // write only on change
		cur.Spec.Host, cur.Spec.Subsets = dr.Spec.Host, dr.Spec.Subsets
		if _, err := drs.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			return nil, fmt.Errorf("updating DestinationRule %s/%s: %w", ns, name, err)
		}
	}
	vss := w.Client.NetworkingV1().VirtualServices(ns)
	if cur, err := vss.Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		if _, err := vss.Create(ctx, vs, metav1.CreateOptions{}); err != nil {
			return nil, wrapMissing(fmt.Errorf("creating VirtualService %s/%s: %w", ns, name, err))
		}
	} else if err != nil {
		return nil, wrapMissing(fmt.Errorf("reading VirtualService %s/%s: %w", ns, name, err))
	} else if !proto.Equal(&cur.Spec, &vs.Spec) {
		cur.Spec.Hosts, cur.Spec.Http = vs.Spec.Hosts, vs.Spec.Http
		if _, err := vss.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			return nil, fmt.Errorf("updating VirtualService %s/%s: %w", ns, name, err)
		}
	}
	return weights, nil
}

// wrapMissing marks a 404 that names no object — the API itself is not
// served — as ErrIstioMissing.
func wrapMissing(err error) error {
	var st apierrors.APIStatus
	if apierrors.IsNotFound(err) && errors.As(err, &st) {
		if d := st.Status().Details; d == nil || d.Name == "" {
			return fmt.Errorf("%w: %v", ErrIstioMissing, err)
		}
	}
	return err
}
