package adapter

import "github.com/hetsev/hetsev/pkg/adapter/internal/selfmetrics"

// RegisterMetrics registers the adapter's own metrics (see
// selfmetrics.Register) in k8s.io/component-base/metrics/legacyregistry,
// which the generic API server serves on /metrics. Safe to call more than
// once.
func RegisterMetrics() { selfmetrics.Register() }
