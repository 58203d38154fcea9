package evaluate

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

// The ablation: hetsev-exact's decision has brakes (the stabilized
// scale-in, the scale-in cool-down) and a forecast (the launch-time
// forecast of pkg/heterogeneity burst.go). Each is justified only by what
// the replay loses without it, so every replay is rerun with each rule off
// in turn, the others on, and every variant's billed cost and excess
// missed requests E are judged against the main run's targets, as the
// Pareto sweep's points are (pareto.go). Other variants change a knob
// instead: a scale-in hysteresis of 0.1 on top of the rules (a third
// brake), decisions every 15 s instead of hetsev-scaler's default 5 s, a
// forecast whose regression spans 60 s instead of 15 s, saturation thresholds derived
// from the SLO latency model, and the seasonal forecast, the instance
// flavors and make-before-break replacement each turned on, or off where
// the baseline has them.

// Variants of the ablation, in the order they are replayed and printed.
const (
	// AblationBaseline is hetsev-exact with every rule, the main run's.
	AblationBaseline = "baseline"
	// AblationHysteresis sets Knobs.ScaleInHysteresis to 0.1: a scale-in
	// must leave the saturation 0.1 below the threshold.
	AblationHysteresis = "hysteresis-0.1"
	// AblationNoStabilizedScaleIn sets Knobs.NoStabilizedScaleIn: a
	// scale-in removes what the current rate allows at once.
	AblationNoStabilizedScaleIn = "no-stabilized-scale-in"
	// AblationNoLightOverflow sets Knobs.NoLightOverflow: a scale-out
	// that whole GPUs cannot cover stays partial rather than overflowing
	// onto light instances (pkg/heterogeneity stage_plan.go).
	AblationNoLightOverflow = "no-light-overflow"
	// AblationNoForecast sets Knobs.NoForecast: scale-outs on the
	// measured arrival rate only.
	AblationNoForecast = "no-forecast"
	// AblationNoCoolDown sets Knobs.NoScaleInCoolDown: a scale-in may
	// follow a scale-out at once (the stabilization window stays).
	AblationNoCoolDown = "no-cool-down"
	// AblationInterval15s sets Knobs.ScalerInterval to 15 s:
	// hetsev-scaler decides a third as often as at its default 5 s, on
	// the same rate window (the HPA's sync period, Knobs.Interval, is
	// 15 s either way).
	AblationInterval15s = "interval-15s"
	// AblationForecastSpan60s sets Knobs.ForecastSpan to 60 s: the
	// launch-time forecast fits its slope to the rates of the last 65 s
	// (60 s and one decision interval of 5 s: fourteen decisions).
	AblationForecastSpan60s = "forecast-span-60s"
	// AblationSeasonalForecast sets Knobs.SeasonalForecast: a rule added,
	// not removed (the seasonal forecast of pkg/heterogeneity
	// seasonal.go, off by default). Run leaves it out when the baseline
	// has it (--seasonal).
	AblationSeasonalForecast = "seasonal-forecast"
	// AblationNoSeasonalForecast clears Knobs.SeasonalForecast, for a
	// baseline that has it (--seasonal); Run replays it instead of
	// AblationSeasonalForecast then.
	AblationNoSeasonalForecast = "no-seasonal-forecast"
	// AblationFlavors sets Config.Flavors to heterogeneity.DefaultFlavors
	// (instance flavors, pkg/heterogeneity flavor.go), for a baseline
	// without them; AblationNoFlavors clears them, for a baseline with
	// them (--flavors). Run replays the one that changes the baseline.
	AblationFlavors   = "flavors"
	AblationNoFlavors = "no-flavors"
	// AblationModelThresholds sets Knobs.ModelThresholds: every service's
	// saturation threshold derived from the SLO latency model at SL_min
	// (hetsev-scaler's --model-thresholds) instead of its own.
	AblationModelThresholds = "model-thresholds"
	// AblationNoModelThresholds clears Knobs.ModelThresholds, for a
	// baseline that has it (--model-thresholds): the services' own
	// thresholds.
	AblationNoModelThresholds = "no-model-thresholds"
	// AblationReplacement sets Knobs.Replacement (make-before-break
	// replacement, pkg/heterogeneity replace.go, off by default) for a
	// baseline without it; AblationNoReplacement clears it, for a
	// baseline with it (--replacement). Run replays the one that changes
	// the baseline.
	AblationReplacement   = "replacement"
	AblationNoReplacement = "no-replacement"
	// AblationConsolidation sets Knobs.Consolidation (consolidation
	// moves, pkg/heterogeneity replace.go, off by default) for a baseline
	// without it; AblationNoConsolidation clears it, for a baseline with
	// it (--consolidation). Run replays the one that changes the baseline.
	AblationConsolidation   = "consolidation"
	AblationNoConsolidation = "no-consolidation"
)

// AblationVariants are the ablation's variants.
var AblationVariants = []string{AblationBaseline, AblationHysteresis, AblationNoStabilizedScaleIn, AblationNoLightOverflow, AblationNoForecast, AblationNoCoolDown, AblationInterval15s, AblationForecastSpan60s, AblationSeasonalForecast, AblationModelThresholds, AblationReplacement, AblationConsolidation}

// ablationVariants are AblationVariants for a baseline with or without
// the seasonal forecast, model-derived thresholds, replacement,
// consolidation and instance flavors: each is turned on where the
// baseline lacks it and off where it has it.
func ablationVariants(seasonal, modelThresholds, replacement, consolidation, flavors bool) []string {
	out := slices.Clone(AblationVariants)
	if seasonal {
		out[slices.Index(out, AblationSeasonalForecast)] = AblationNoSeasonalForecast
	}
	if modelThresholds {
		out[slices.Index(out, AblationModelThresholds)] = AblationNoModelThresholds
	}
	if replacement {
		out[slices.Index(out, AblationReplacement)] = AblationNoReplacement
	}
	if consolidation {
		out[slices.Index(out, AblationConsolidation)] = AblationNoConsolidation
	}
	if flavors {
		return append(out, AblationNoFlavors)
	}
	return append(out, AblationFlavors)
}

// AblationPoint is hetsev-exact's outcome on one replay with one rule off
// (or none: AblationBaseline).
type AblationPoint struct {
	Variant string  `json:"variant"`
	CostUSD float64 `json:"cost_usd"`
	// ExcessMissed is E against the main run's targets (headline.go);
	// Qualifies says it is 0.
	ExcessMissed float64 `json:"excess_missed"`
	Qualifies    bool    `json:"qualifies"`
	// SLOAttainment is the share of all services' requests within their
	// RT_max, in [0, 1].
	SLOAttainment  float64 `json:"slo_attainment"`
	ScalingActions int     `json:"scaling_actions"`
	// AboveCeiling lists the services whose SLO attainment exceeds their
	// reactive ceiling (ceiling.go aboveCeiling).
	AboveCeiling []string `json:"above_ceiling,omitempty"`
}

// ablatedKnobs is k with the rule of variant off; an unknown variant is
// an error naming it.
func ablatedKnobs(k Knobs, variant string) (Knobs, error) {
	switch variant {
	case AblationBaseline:
	case AblationHysteresis:
		k.ScaleInHysteresis = 0.1
	case AblationNoStabilizedScaleIn:
		k.NoStabilizedScaleIn = true
	case AblationNoLightOverflow:
		k.NoLightOverflow = true
	case AblationNoForecast:
		k.NoForecast = true
	case AblationNoCoolDown:
		k.NoScaleInCoolDown = true
	case AblationInterval15s:
		k.ScalerInterval = 15 * time.Second
	case AblationForecastSpan60s:
		k.ForecastSpan = 60 * time.Second
	case AblationSeasonalForecast:
		k.SeasonalForecast = true
	case AblationNoSeasonalForecast:
		k.SeasonalForecast = false
	case AblationModelThresholds:
		k.ModelThresholds = true
	case AblationNoModelThresholds:
		k.ModelThresholds = false
	case AblationReplacement:
		k.Replacement = true
	case AblationNoReplacement:
		k.Replacement = false
	case AblationConsolidation:
		k.Consolidation = true
	case AblationNoConsolidation:
		k.Consolidation = false
	case AblationFlavors, AblationNoFlavors: // Config.Flavors: ablatedConfig
	default:
		return k, fmt.Errorf("ablation: unknown variant %q (want one of %v)", variant, AblationVariants)
	}
	return k, nil
}

// ablation replays cfg with hetsev-exact once per variant and returns its
// points, judged against main's targets, in the order of variants. The
// baseline reuses the main run's hetsev-exact when main has it; the other
// variants are replayed side by side (eachReplay).
func ablation(cfg Config, main RunResult, variants []string) ([]AblationPoint, error) {
	knobs := make([]Knobs, len(variants))
	for i, v := range variants {
		k, err := ablatedKnobs(cfg.Knobs, v)
		if err != nil {
			return nil, err
		}
		knobs[i] = k
	}
	out := make([]AblationPoint, len(variants))
	err := eachReplay(len(variants), func(i int) error {
		v := variants[i]
		var r RunResult
		if _, ok := main.Policy(PolicyExact); ok && v == AblationBaseline {
			r = main
			r.Policies = slices.Clone(main.Policies)
		} else {
			c := cfg
			c.Knobs = knobs[i]
			switch v {
			case AblationFlavors:
				c.Flavors = slices.Clone(heterogeneity.DefaultFlavors)
			case AblationNoFlavors:
				c.Flavors = nil
			}
			c.Policies = []string{PolicyExact}
			var err error
			if r, err = Evaluate(c); err != nil {
				return fmt.Errorf("ablation %s: %w", v, err)
			}
		}
		r.score(main.Targets)
		p, ok := r.Policy(PolicyExact)
		if !ok {
			return fmt.Errorf("ablation %s: no %s result", v, PolicyExact)
		}
		out[i] = AblationPoint{Variant: v, CostUSD: p.CostUSD, ExcessMissed: p.ExcessMissed, Qualifies: p.Qualifies,
			SLOAttainment: p.SLOAttainment, ScalingActions: p.ScalingActions, AboveCeiling: aboveCeiling(r, p)}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PrintAblation writes r's ablation as a table, one row per variant, and
// a RESULT line per variant:
//
//	RESULT ablation replay=NAME variant=VARIANT cost_usd=C excess_missed=E
func PrintAblation(w io.Writer, r RunResult) {
	if len(r.Ablation) == 0 {
		return
	}
	added := ""
	if slices.ContainsFunc(r.Ablation, func(p AblationPoint) bool {
		return p.Variant == AblationSeasonalForecast || p.Variant == AblationFlavors || p.Variant == AblationReplacement || p.Variant == AblationConsolidation
	}) {
		added = ", or added"
	}
	fmt.Fprintf(w, "Ablation of %s on %s (each rule off or knob changed in turn%s; E against the main run's targets, * qualifies):\n", PolicyExact, r.Name, added)
	fmt.Fprintf(w, "%-24s %10s %12s %9s %8s %11s\n", "variant", "cost USD", "excess E", "SLO att.", "actions", "above ceil.")
	for _, p := range r.Ablation {
		mark := ""
		if p.Qualifies {
			mark = "*"
		}
		fmt.Fprintf(w, "%-24s %10.2f %12s %8.2f%% %8d %11d\n", p.Variant, p.CostUSD, fmt.Sprintf("%.0f%s", p.ExcessMissed, mark), 100*p.SLOAttainment, p.ScalingActions, len(p.AboveCeiling))
	}
	for _, p := range r.Ablation {
		if len(p.AboveCeiling) > 0 {
			fmt.Fprintf(w, "%s above reactive ceiling: %s\n", p.Variant, strings.Join(p.AboveCeiling, ", "))
		}
	}
	for _, p := range r.Ablation {
		fmt.Fprintf(w, "RESULT ablation replay=%s variant=%s cost_usd=%.4f excess_missed=%.1f\n", r.Name, p.Variant, p.CostUSD, p.ExcessMissed)
	}
}
