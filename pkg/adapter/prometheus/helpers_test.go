package prometheus

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakePrometheus answers /api/v1/query with canned instant vectors, chosen
// by the metric name the query mentions, and records the queries. The real
// server is exercised by test/integration's Prometheus test.
type fakePrometheus struct {
	mu      sync.Mutex
	queries []string
	vectors map[string]string // metric name in the query -> JSON result array
	delay   time.Duration
}

func (f *fakePrometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	q := r.Form.Get("query")
	f.mu.Lock()
	f.queries = append(f.queries, q)
	delay := f.delay
	f.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	result := "[]"
	for name, v := range f.vectors {
		if strings.Contains(q, name) {
			result = v
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":` + result + `}}`))
}

func (f *fakePrometheus) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.queries...)
}

// sample renders one vector element at Unix time 1000.
func sample(labels map[string]string, value string) string {
	b, _ := json.Marshal(labels)
	return `{"metric":` + string(b) + `,"value":[1000,"` + value + `"]}`
}

func vector(samples ...string) string { return "[" + strings.Join(samples, ",") + "]" }

func serveLoopback(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

func newPromSource(t *testing.T, url string, mod func(*Options)) *Source {
	t.Helper()
	o := DefaultOptions()
	o.URL = url
	if mod != nil {
		mod(&o)
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
