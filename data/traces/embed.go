// Package traces embeds the request traces the demo and the evaluator replay
// (provenance in data/README.md). Only simulation code imports it, so the
// production binaries do not carry the traces.
package traces

import (
	"embed"
	"io/fs"
	"strings"
)

// Files holds the traces exactly as committed.
//
//go:embed twitter_rps_days01-07.txt AzureLLMInferenceTrace_code.csv azure2019_invitro_500func_8h.csv
var Files embed.FS

// Names of the embedded files as data/README.md names them (relative to
// data/), for error messages; Open opens them.
const (
	TwitterTrace   = "traces/twitter_rps_days01-07.txt"
	AzureCodeTrace = "traces/AzureLLMInferenceTrace_code.csv"
	// AzureFunctionsTrace is per-function, per-minute invocations of 500
	// Azure Functions over 8 hours (README-azure2019_invitro_500func_8h.md).
	AzureFunctionsTrace = "traces/azure2019_invitro_500func_8h.csv"
)

// Open opens one of the files named above.
func Open(name string) (fs.File, error) {
	return Files.Open(strings.TrimPrefix(name, "traces/"))
}
