package scrape

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"k8s.io/apimachinery/pkg/types"
)

// staticTargets is a TargetLister over fixed targets.
func staticTargets(ts ...Target) TargetLister {
	return func() ([]Target, error) { return ts, nil }
}

// newTestScraper returns a Scraper whose targets are registered (no
// scraping), for feeding expositions directly.
func newTestScraper(t *testing.T, opts Options, ts ...Target) *Scraper {
	t.Helper()
	s, err := New(opts, staticTargets(ts...))
	if err != nil {
		t.Fatal(err)
	}
	s.syncTargets(t.Context())
	return s
}

// feed parses a text exposition as one successful scrape of pod at wall
// time scrapeTime and stores it.
func feed(t *testing.T, s *Scraper, pod types.NamespacedName, text string, scrapeTime time.Time) {
	t.Helper()
	samples, err := decodeSamples([]byte(text), expfmt.NewFormat(expfmt.TypeTextPlain), scrapeTime)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, text)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.targets[pod]
	if !ok {
		t.Fatalf("no target %s", pod)
	}
	st.scraped, st.up, st.lastErr = true, true, ""
	s.ingest(st, samples, scrapeTime)
}

// failScrape records a failed scrape of pod.
func failScrape(s *Scraper, pod types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.targets[pod]; ok {
		st.scraped, st.up, st.lastErr = true, false, "test: connection refused"
	}
}

// ms renders a time as a Prometheus exposition timestamp.
func ms(t time.Time) int64 { return t.UnixMilli() }

// istioRequests renders istio_requests_total series: values by response
// code, at time ts (zero: no timestamp).
func istioRequests(ts time.Time, byCode map[string]float64) string {
	var b strings.Builder
	b.WriteString("# TYPE istio_requests_total counter\n")
	for code, v := range byCode {
		fmt.Fprintf(&b, `istio_requests_total{reporter="destination",response_code=%q,destination_workload="resnet"} %v`, code, v)
		if !ts.IsZero() {
			fmt.Fprintf(&b, " %d", ms(ts))
		}
		b.WriteString("\n")
	}
	return b.String()
}
