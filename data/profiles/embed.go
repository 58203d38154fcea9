// Package profiles embeds the measured inputs the production programs ship
// with: GPU types and prices, model profiles and per-instance resource
// estimates. Provenance for every file is in data/README.md; programs read
// them through pkg/heterogeneity so that nothing depends on files outside
// the binary at run time. Request traces live in data/traces, for the simulation only.
package profiles

import (
	"embed"
	"io/fs"
	"strings"
)

// Files holds the CSV files exactly as committed.
//
//go:embed gpu_catalog.csv model_profiles.csv instance_estimates.csv small_batches.csv instance_skus.csv
var Files embed.FS

// Names of the embedded files as data/README.md names them (relative to
// data/), for error messages; Open opens them.
const (
	GPUCatalog        = "profiles/gpu_catalog.csv"
	ModelProfiles     = "profiles/model_profiles.csv"
	InstanceEstimates = "profiles/instance_estimates.csv"
	SmallBatches      = "profiles/small_batches.csv"
	// InstanceSKUs are the cloud instances the catalog's GPUs come in,
	// for the evaluator's billing only.
	InstanceSKUs = "profiles/instance_skus.csv"
)

// Open opens one of the files named above.
func Open(name string) (fs.File, error) {
	return Files.Open(strings.TrimPrefix(name, "profiles/"))
}
