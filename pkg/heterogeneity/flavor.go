package heterogeneity

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/hetsev/hetsev/pkg/catalog"
)

// Flavors is a set of instance flavors: busy shares in (0, 1], strictly
// ascending. An instance of flavor f < 1 declares busy share f
// (hetsev.io/busy-share), so the scheduler packs it onto a GPU in use
// within the busy-share cap. It runs the same batching server with the
// share f of the GPU's time: while its neighbours use theirs, requests
// queue during their turns and batches fill, so it is counted at f x T_i
// requests/s with a batch taking L_i / f (a planning assumption; the
// traffic split sends it that share of the load). Flavor 1 is a whole GPU,
// T_i requests/s at batch latency L_i.
//
// A light flavor is offered only where 3 L_i / f <= RT_max, L_i at the
// profile's batch or at a measured smaller one (ExpandFlavors). A request
// waits for the batch in progress and runs in the next, 2 L_i / f when
// the neighbours keep to their shares; they do not always (a server
// alone with its requests keeps a GPU busy about min(1, lambda L_i),
// see pkg/scaler instanceShare), so the bound leaves one more batch for
// them. On the Azure Functions replay of make evaluate (hetsev-exact,
// cost USD / excess missed requests), every column at the profile's
// batch: no bound 180.20 / 48,646 and 2 L_i / f 181.83 / 116,073, the
// misses on the http services (SSD at 450 ms, BERT-large at 600 ms);
// 3 L_i / f 198.60 / 15,348; 4 L_i / f 200.21 / 15,328; whole GPUs only
// 246.24 / 14,844. With 3 L_i / f at measured smaller batches where the
// profile's does not fit: 180.02 / 17,753.
type Flavors []float64

// DefaultFlavors is the flavor set {0.1, 0.25, 0.5, 1}: steps of about a
// factor 2 between a tenth of a GPU and a whole one.
var DefaultFlavors = Flavors{0.1, 0.25, 0.5, 1}

// Validate reports a flavor set that is empty, not strictly ascending
// (unsorted or with a duplicate), or has a value outside (0, 1]; the
// error names the value.
func (fl Flavors) Validate() error {
	if len(fl) == 0 {
		return errors.New("flavors: the set is empty")
	}
	if len(fl) > MaxFlavors {
		return fmt.Errorf("flavors: %d flavors; at most %d (each is a Deployment per GPU type)", len(fl), MaxFlavors)
	}
	var errs []error
	for i, f := range fl {
		switch {
		case math.IsNaN(f) || !(f > 0 && f <= 1):
			errs = append(errs, fmt.Errorf("flavors: %v (position %d) is not a busy share in (0, 1]", f, i))
		case i > 0 && f == fl[i-1]:
			errs = append(errs, fmt.Errorf("flavors: %v appears twice", f))
		case i > 0 && f < fl[i-1]:
			errs = append(errs, fmt.Errorf("flavors: %v follows %v: list them in ascending order", f, fl[i-1]))
		}
	}
	return errors.Join(errs...)
}

// MaxFlavors is the most flavors a set may have: each flavor is a
// Deployment per GPU type and a column of the ModelService's status, whose
// lists the API caps (the CRD's flavors pattern allows as many).
const MaxFlavors = 8

// ParseFlavors parses a comma-separated flavor set, e.g. "0.1,0.25,0.5,1"
// (a flag's value), and validates it. "" is no set (nil, nil): each GPU
// type runs whole-GPU instances only.
func ParseFlavors(s string) (Flavors, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var fl Flavors
	for _, part := range strings.Split(s, ",") {
		f, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
		if err != nil {
			return nil, fmt.Errorf("flavors: %q is not a number", strings.TrimSpace(part))
		}
		fl = append(fl, f)
	}
	if err := fl.Validate(); err != nil {
		return nil, err
	}
	return fl, nil
}

// HasLight reports whether the set offers a light flavor (f < 1): an
// empty set and {1} run whole-GPU instances only.
func (fl Flavors) HasLight() bool { return len(fl) > 0 && fl[0] < 1 }

// String is the set as ParseFlavors reads it, e.g. "0.1,0.25,0.5,1".
func (fl Flavors) String() string {
	parts := make([]string, len(fl))
	for i, f := range fl {
		parts[i] = strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strings.Join(parts, ",")
}

// FlavorColumn is one column of the ILP for a GPU type: instances of one
// flavor.
type FlavorColumn struct {
	// Flavor is the busy share each instance of the column declares, in
	// (0, 1]; the type's top flavor (1, or the upper bound) for its own
	// column.
	Flavor float64
	// Light is false for the type's own column (the top flavor, named by
	// the GPU type alone) and true for a lighter flavor.
	Light bool
	// BatchSize is the batch size the column's servers are capped at,
	// below the profile's; 0 where they batch as the profile does.
	BatchSize int
	// Type is the column's coefficients: GPUType named by ColumnName,
	// ThroughputRPS f x T_i, LatencyMs L_i / f, PriceUSDPerHour f x C_i
	// (T_i and L_i those of BatchSize where it is set), and the type's
	// other fields; Running and MaxAdditional are 0, for the caller to
	// fill per column.
	Type TypeState
}

// ColumnName names the column of flavor f of gpuType: gpuType itself for
// its top flavor (light false), else gpuType + "-busy" + f, e.g.
// "T4-busy0.25". A caller derives its object names from it.
func ColumnName(gpuType string, f float64, light bool) string {
	if !light {
		return gpuType
	}
	return gpuType + lightSuffix + strconv.FormatFloat(f, 'f', -1, 64)
}

// lightSuffix separates a light column's GPU type from its flavor in
// ColumnName.
const lightSuffix = "-busy"

// lightColumnType is the GPU type of column name, the inverse of
// ColumnName: name without its "-busy" + flavor suffix, or name itself
// when it has none.
func lightColumnType(name string) string {
	if i := strings.LastIndex(name, lightSuffix); i > 0 {
		if _, err := strconv.ParseFloat(name[i+len(lightSuffix):], 64); err == nil {
			return name[:i]
		}
	}
	return name
}

// ExpandFlavors splits GPU type t into one ILP column per flavor, lightest
// first, the type's own column last:
//
//   - the top flavor is 1 (a whole GPU), or upper when upper is in (0, 1)
//     (a service's busy-share bound, spec.scaling.busyShare; 0 means none);
//     its column is named t.GPUType, and where 3 L_i / top > rtMaxMs it
//     runs at the largest batch of small that fits, as a light column
//     does (below), else at the profile's batch. The same 3 L, not 2 L,
//     for a whole GPU: near saturation a request may wait behind more
//     than the batch in progress (on the fleet replay a BERT-large
//     service at RT_max 114 ms, 3 x 38.3 ms on a V100, answered 95.3 %
//     in time at batch 8 and all of it at batch 1, 8 ms);
//   - each flavor f of fl below the top is a light column named
//     ColumnName(t.GPUType, f, true), unless rtMaxMs > 0 and 3 L_i / f >
//     rtMaxMs (RT_max, ms; see Flavors); there the column runs at the
//     largest batch size b of small (measured points below the profile's
//     batch size) with 3 L(b) / f <= rtMaxMs, at f x T(b) requests/s, and
//     is dropped only when none fits. Servers alone with a few requests
//     run batches smaller than the profile's anyway; capping them at b
//     lets a quiet service with a tight RT_max share a GPU (BERT-large on
//     a T4: 14.4 ms per batch of 1 at 69 requests/s, 114.5 ms per batch
//     of 8 at 69.3);
//   - a column of flavor f serves f x T_i requests/s with batch latency
//     L_i / f (the top column: T_i and L_i when it is 1) and costs f x C_i
//     USD/h.
//
// Running and MaxAdditional are left 0. It returns an error for an invalid
// flavor set, an upper bound outside [0, 1], or a type whose T_i, L_i or
// C_i the rule cannot use.
func ExpandFlavors(t TypeState, fl Flavors, upper, rtMaxMs float64, small []catalog.BatchPoint) ([]FlavorColumn, error) {
	if err := fl.Validate(); err != nil {
		return nil, err
	}
	if math.IsNaN(upper) || upper < 0 || upper > 1 {
		return nil, fmt.Errorf("flavors: upper bound %v of %s is not a busy share in (0, 1] (0: none)", upper, t.GPUType)
	}
	var errs []error
	validateTypes([]TypeState{t}, func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("flavors: "+format, args...))
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	top := 1.0
	if upper > 0 {
		top = upper
	}
	column := func(f float64, light bool) FlavorColumn {
		c := t
		c.GPUType = ColumnName(t.GPUType, f, light)
		c.Running, c.MaxAdditional = 0, 0
		c.ThroughputRPS = f * t.ThroughputRPS
		c.LatencyMs = t.LatencyMs / f
		c.PriceUSDPerHour = f * t.PriceUSDPerHour
		c.Light = light
		return FlavorColumn{Flavor: f, Light: light, Type: c}
	}
	own := column(top, false)
	if rtMaxMs > 0 && 3*t.LatencyMs/top > rtMaxMs {
		if c, ok := smallBatchColumn(own, small, rtMaxMs); ok {
			own = c
		}
	}
	var out []FlavorColumn
	for _, f := range fl {
		if f >= top {
			break
		}
		if rtMaxMs > 0 && 3*t.LatencyMs/f > rtMaxMs {
			if c, ok := smallBatchColumn(column(f, true), small, rtMaxMs); ok {
				out = append(out, c)
			}
			continue
		}
		out = append(out, column(f, true))
	}
	return append(out, own), nil
}

// smallBatchColumn is column c (of flavor f) run at the largest batch
// size of small whose batches fit RT_max (3 L(b) / f <= rtMaxMs), with
// that point's T and L; false when none fits or a point is unusable.
func smallBatchColumn(c FlavorColumn, small []catalog.BatchPoint, rtMaxMs float64) (FlavorColumn, bool) {
	best := -1
	for k, pt := range small {
		if pt.BatchSize < 1 || !(pt.ThroughputRPS > 0) || !(pt.LatencyMs > 0) || math.IsInf(pt.ThroughputRPS+pt.LatencyMs, 0) {
			continue
		}
		if 3*pt.LatencyMs/c.Flavor <= rtMaxMs && (best < 0 || pt.BatchSize > small[best].BatchSize) {
			best = k
		}
	}
	if best < 0 {
		return c, false
	}
	pt := small[best]
	c.BatchSize = pt.BatchSize
	c.Type.ThroughputRPS = c.Flavor * pt.ThroughputRPS
	c.Type.LatencyMs = pt.LatencyMs / c.Flavor
	c.Type.BatchSize = pt.BatchSize
	return c, true
}
