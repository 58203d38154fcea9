// Package data embeds the measured inputs hetsev ships with: GPU prices, model
// profiles, per-instance resource estimates and request traces. Provenance for
// every file is in data/README.md; programs read these through pkg/heterogeneity
// and pkg/trace so that nothing depends on ../shared at run time.
package data

import "embed"

// Files holds profiles/*.csv and traces/* exactly as committed.
//
//go:embed profiles/gpu_catalog.csv profiles/model_profiles.csv profiles/instance_estimates.csv traces/twitter_rps_days01-07.txt traces/AzureLLMInferenceTrace_code.csv
var Files embed.FS

// Paths of the embedded files, for error messages and loaders.
const (
	GPUCatalog        = "profiles/gpu_catalog.csv"
	ModelProfiles     = "profiles/model_profiles.csv"
	InstanceEstimates = "profiles/instance_estimates.csv"
	TwitterTrace      = "traces/twitter_rps_days01-07.txt"
	AzureCodeTrace    = "traces/AzureLLMInferenceTrace_code.csv"
)
