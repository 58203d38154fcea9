package evaluate

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/hetsev/hetsev/pkg/catalog"

	"github.com/hetsev/hetsev/internal/sim/trace"
)

// ParseService reads a service given on the command line as
// NAME=MODEL,SHARE,RT_MAX_MS[,SATURATION_THRESHOLD], e.g.
// "resnet50=resnet50,0.6,400". Errors name the part that is wrong.
func ParseService(s string) (Service, error) {
	name, rest, ok := strings.Cut(s, "=")
	parts := strings.Split(rest, ",")
	if !ok || name == "" || len(parts) < 3 || len(parts) > 4 {
		return Service{}, fmt.Errorf("service %s: want NAME=MODEL,SHARE,RT_MAX_MS[,SATURATION_THRESHOLD]", trace.Quote(s))
	}
	svc := Service{Name: name, Model: parts[0]}
	nums := []*float64{&svc.Share, &svc.RTMaxMs, &svc.SaturationThreshold}
	what := []string{"SHARE", "RT_MAX_MS", "SATURATION_THRESHOLD"}
	for i, p := range parts[1:] {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil {
			return Service{}, fmt.Errorf("service %s: %s %s is not a number", trace.Quote(s), what[i], trace.Quote(p))
		}
		*nums[i] = v
	}
	if svc.Model == "" {
		return Service{}, fmt.Errorf("service %s: MODEL is empty", trace.Quote(s))
	}
	return svc, nil
}

// WhatIf is a user's replay: their trace file (per-second counts or one
// timestamp per request, told apart by trace.Read), prepared by prep, for
// services on cluster, with the repo's catalog and profiles unless
// catalogFile, profilesFile and estimatesFile name their own (the CSV
// formats of data/profiles).
func WhatIf(traceFile string, prep Preparation, cluster []NodeGroup, services []Service, catalogFile, profilesFile, estimatesFile string) (Config, error) {
	f, err := os.Open(traceFile)
	if err != nil {
		return Config{}, err
	}
	defer f.Close()
	raw, err := trace.Read(f, traceFile)
	if err != nil {
		return Config{}, err
	}
	rates, desc := prep.Prepare(raw)
	c, err := Base("what-if", traceFile+": "+desc, rates, cluster, services...)
	if err != nil {
		return Config{}, err
	}
	if err := c.loadOwn(catalogFile, profilesFile, estimatesFile); err != nil {
		return Config{}, err
	}
	c.MeasureFrom = min(prep.SmoothWindow, len(rates)-1)
	return c, nil
}

// WhatIfFunctions is a user's multi-tenant replay: their per-function,
// per-minute trace (trace.ReadFunctions: the Azure Functions trace's
// format), one service per function by w's rules (FunctionWorkload:
// the busiest functions, models by hash, SLOs by model and trigger, one
// scale factor, FunctionCluster's cluster), with the repo's catalog and
// profiles unless catalogFile, profilesFile and estimatesFile name their
// own.
func WhatIfFunctions(file string, w FunctionWorkload, catalogFile, profilesFile, estimatesFile string) (Config, error) {
	f, err := os.Open(file)
	if err != nil {
		return Config{}, err
	}
	defer f.Close()
	fs, err := trace.ReadFunctions(f, file)
	if err != nil {
		return Config{}, err
	}
	base, err := Base("what-if", "", nil, nil)
	if err != nil {
		return Config{}, err
	}
	if err := base.loadOwn(catalogFile, profilesFile, estimatesFile); err != nil {
		return Config{}, err
	}
	return functionsConfig("what-if", fs, w, base)
}

// loadOwn replaces c's catalog and profiles with the files named (the CSV
// formats of data/profiles); empty names keep the repo's. An own catalog
// drops the repo's instance SKUs (its GPUs are billed at its prices).
func (c *Config) loadOwn(catalogFile, profilesFile, estimatesFile string) error {
	if catalogFile != "" {
		cf, err := os.Open(catalogFile)
		if err != nil {
			return err
		}
		defer cf.Close()
		if c.Catalog, err = catalog.LoadCatalog(cf, catalogFile); err != nil {
			return err
		}
		c.SKUs = nil // the repo's SKUs price the repo's catalog; --instance-skus for the user's
	}
	if profilesFile != "" || estimatesFile != "" {
		if profilesFile == "" || estimatesFile == "" {
			return fmt.Errorf("evaluate: own profiles need both a profiles and an estimates file")
		}
		pf, err := os.Open(profilesFile)
		if err != nil {
			return err
		}
		defer pf.Close()
		ef, err := os.Open(estimatesFile)
		if err != nil {
			return err
		}
		defer ef.Close()
		if c.Profiles, err = catalog.LoadProfiles(pf, profilesFile, ef, estimatesFile); err != nil {
			return err
		}
	}
	return nil
}

// loadSKUs replaces c's instance SKUs with file's (the CSV format of
// data/profiles/instance_skus.csv), for c's catalog.
func (c *Config) loadSKUs(file string) error {
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("--instance-skus: %w", err)
	}
	defer f.Close()
	if c.SKUs, err = catalog.LoadSKUs(f, file, c.Catalog); err != nil {
		return fmt.Errorf("--instance-skus: %w", err)
	}
	return nil
}
