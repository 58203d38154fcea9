package evaluate

import (
	"time"

	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

// recordHistory gives a hetsev autoscaler of service s the arrival rates
// of the service's history (Service.History, the seconds before the
// replayed window) for its seasonal forecast, as the scaler would have
// measured them had it been running: every decision interval of its
// policy (Policy.DecisionInterval, hetsev-scaler's interval, whole
// seconds), the mean rate of the last Knobs.RateWindow. A scaler that runs all along has them; an
// autoscaler created at the window's start would need two periods of the
// window to detect a period. Only the seasonal forecast reads them
// (Autoscaler.RecordRate), and only the past: the window's rates are
// never seen in advance.
func recordHistory(a *heterogeneity.Autoscaler, c *Config, s Service) {
	h := s.History
	window := max(1, int(c.Knobs.RateWindow.Seconds()))
	every := max(1, int(a.Policy.DecisionInterval/time.Second))
	for end := window; end <= len(h); end += every {
		// History second i is trace second i - len(h).
		a.RecordRate(at(float64(end-len(h))), h[end-window:end].Mean())
	}
}
