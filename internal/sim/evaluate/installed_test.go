package evaluate

import (
	"flag"
	"testing"

	"github.com/hetsev/hetsev/pkg/scaler"
)

// TestHetsevReplaysAsInstalled: without flags the hetsev policies replay
// with the rules hetsev-scaler ships on (scaler.DefaultDefaults) and no
// flags row is added; =false and --flavors=1 turn each off, and only the
// non-default flags (--replacement, --consolidation) add the flags row.
func TestHetsevReplaysAsInstalled(t *testing.T) {
	parse := func(args ...string) Options {
		o := DefaultOptions()
		fs := flag.NewFlagSet("evaluate", flag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return o
	}
	base, err := Twitter(1000, 4)
	if err != nil {
		t.Fatal(err)
	}
	o := parse()
	c := o.withShipped(base, scaler.DefaultDefaults.Flavors)
	if c.Knobs.SeasonalForecast != scaler.DefaultDefaults.SeasonalForecast || c.Knobs.ModelThresholds != scaler.DefaultDefaults.ModelThresholds ||
		o.Flavors != scaler.DefaultDefaults.Flavors.String() || !c.Flavors.HasLight() {
		t.Errorf("no flags: seasonal %v, model thresholds %v, flavors %q; want hetsev-scaler's defaults %+v",
			c.Knobs.SeasonalForecast, c.Knobs.ModelThresholds, o.Flavors, scaler.DefaultDefaults)
	}
	if o.withFlags(c) != nil {
		t.Error("no flags: a flags row is added")
	}
	off := parse("--seasonal=false", "--model-thresholds=false", "--flavors=1")
	if off.Seasonal || off.ModelThresholds || off.Flavors != "1" {
		t.Errorf("=false: %+v, want every shipped rule off", off)
	}
	if f := parse("--replacement").withFlags(c); f == nil || !f.Knobs.Replacement || len(f.Policies) != 1 || f.Policies[0] != PolicyExact {
		t.Errorf("--replacement: flags row %+v, want hetsev-exact with replacement", f)
	}
}
