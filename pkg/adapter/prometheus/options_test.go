package prometheus

import (
	"testing"
	"time"
)

func TestPrometheusOptionsValidate(t *testing.T) {
	for name, mod := range map[string]func(*Options){
		"no URL":        func(o *Options) { o.URL = "" },
		"not http":      func(o *Options) { o.URL = "ftp://x" },
		"window ms":     func(o *Options) { o.RateWindow = 1500 * time.Millisecond },
		"label":         func(o *Options) { o.PodLabel = "pod-name" },
		"template":      func(o *Options) { o.RequestRateQuery = "rate(x[{{.Window}])" },
		"unknown field": func(o *Options) { o.GPUUtilQuery = "{{.Nodes}}" },
	} {
		o := DefaultOptions()
		o.URL = "http://127.0.0.1:9090"
		mod(&o)
		if err := o.Validate(); err == nil {
			t.Errorf("%s: no error", name)
		}
		if _, err := New(o); err == nil {
			t.Errorf("%s: source created", name)
		}
	}
	o := DefaultOptions()
	o.URL = "http://127.0.0.1:9090"
	o.NamespaceLabel = "kubernetes_namespace"
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	t2, _ := parseQuery("q", o.RequestRateQuery)
	got, err := o.render(t2, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := `sum by (kubernetes_namespace, pod) (rate(istio_requests_total{reporter="destination",kubernetes_namespace!=""}[1m]))`; got != want {
		t.Errorf("rendered %q, want %q", got, want)
	}
}
