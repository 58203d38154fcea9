package prometheus

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hetsev/hetsev/pkg/adapter/internal/adaptertest"
)

// Bad connection settings are refused at start, naming the flag and the
// cause.
func TestPrometheusConnectionRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		mod  func(*Connection)
		want string
	}{
		"header without =":   {func(c *Connection) { c.Headers = []string{"X-Scope-OrgID"} }, `--prometheus-header "X-Scope-OrgID"=...: want Name=Value`},
		"header empty value": {func(c *Connection) { c.Headers = []string{"X-Scope-OrgID="} }, "want Name=Value"},
		"header bad name":    {func(c *Connection) { c.Headers = []string{"X Scope=a"} }, `"X Scope" is not an HTTP header name`},
		"authorization":      {func(c *Connection) { c.Headers = []string{"authorization=Bearer x"} }, "use --prometheus-bearer-token-file"},
		"reserved":           {func(c *Connection) { c.Headers = []string{"User-Agent=x"} }, `setting header "User-Agent" is not allowed`},
		"CA unreadable":      {func(c *Connection) { c.CAFile = filepath.Join(dir, "missing.pem") }, "--prometheus-ca-file: open " + filepath.Join(dir, "missing.pem")},
		"CA not PEM":         {func(c *Connection) { c.CAFile = notPEM }, "no PEM certificate in it"},
		"token unreadable":   {func(c *Connection) { c.BearerTokenFile = filepath.Join(dir, "token") }, "--prometheus-bearer-token-file: open"},
		"user in URL":        {func(c *Connection) { c.URL = "https://u:secret@127.0.0.1:9090" }, "no user or password in the URL"},
	} {
		o := DefaultOptions()
		o.URL = "https://127.0.0.1:9090"
		c.mod(&o.Connection)
		err := o.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, c.want)
		}
		if _, err := New(o); err == nil {
			t.Errorf("%s: source created", name)
		}
	}
}

// The headers reach Prometheus with every query, and the bearer token is
// read from its file on every query: a rotated token is sent at once.
func TestPrometheusConnectionSendsHeadersAndRotatedToken(t *testing.T) {
	fp := &fakePrometheus{vectors: map[string]string{
		"istio_requests_total": vector(sample(map[string]string{"namespace": "ml", "pod": "a"}, "3")),
	}}
	var mu sync.Mutex
	var seen []string
	url := serveLoopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization")+" "+strings.Join(r.Header.Values("X-Scope-OrgID"), ","))
		mu.Unlock()
		fp.ServeHTTP(w, r)
	}))
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := newPromSource(t, url, func(o *Options) {
		o.CacheTTL = -1
		o.BearerTokenFile = token
		o.Headers = []string{"X-Scope-OrgID=tenant-a", "x-scope-orgid=tenant-b"}
	})
	if _, err := src.RequestRate(adaptertest.NN("ml", "a")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(token, []byte("second"), 0o600); err != nil {
		t.Fatal(err)
	}
	if v, err := src.RequestRate(adaptertest.NN("ml", "a")); err != nil || v.Value != 3 {
		t.Fatalf("rate %v, %v; want 3", v.Value, err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"Bearer first tenant-a,tenant-b", "Bearer second tenant-a,tenant-b"}
	if strings.Join(seen, "|") != strings.Join(want, "|") {
		t.Errorf("Prometheus saw %q, want %q", seen, want)
	}
}
