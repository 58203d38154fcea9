package integration

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/hetsev/hetsev/internal/sim/modelservice"

	"github.com/hetsev/hetsev/pkg/catalog"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/client-go/dynamic"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/internal/sim/demo"
	"github.com/hetsev/hetsev/internal/sim/simulator"
	"github.com/hetsev/hetsev/internal/sim/trace"
)

// stack is a cluster with hetsev's programs running.
type stack struct {
	cp      *cluster.ControlPlane
	ctx     context.Context
	dyn     dynamic.Interface
	adapter *cluster.Process
	cat     catalog.Catalog
	prof    catalog.Profiles
	// scalerMetrics is hetsev-scaler's /metrics URL ("" without a scaler).
	scalerMetrics string
	// schedulerPort and adapterPort are the secure ports of
	// hetsev-scheduler (/metrics open without authentication) and
	// hetsev-metrics-adapter on 127.0.0.1.
	schedulerPort, adapterPort int
	// monitoringSeen is every metric family recordMonitoringMetrics
	// scraped, by name.
	monitoringSeen map[string]*dto.MetricFamily
}

// startStack starts the cluster, CRDs, dcgm-exporter pods, hetsev-scheduler
// and hetsev-metrics-adapter (registered as an APIService), and the scaler
// when withScaler is set.
func startStack(t *testing.T, withScaler bool) *stack {
	t.Helper()
	cp, ctx := testbed(t)
	s := &stack{cp: cp, ctx: ctx}
	var err error
	if s.cat, err = catalog.DefaultCatalog(); err != nil {
		t.Fatal(err)
	}
	if s.prof, err = catalog.DefaultProfiles(); err != nil {
		t.Fatal(err)
	}
	// The testbed's GPU types only, as the demo's ModelServices list them.
	s.prof = s.prof.On("V100-32GB", "T4")
	if err := cluster.InstallCRDs(ctx, cp); err != nil {
		t.Fatal(err)
	}
	if err := cluster.InstallIstioCRDs(ctx, cp); err != nil {
		t.Fatal(err)
	}
	nodes, err := cp.Client.CoreV1().Nodes().List(ctx, metav1ListAll)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range nodes.Items {
		names = append(names, n.Name)
	}
	if err := demo.CreateDCGMExporters(ctx, cp.Client, names); err != nil {
		t.Fatal(err)
	}
	if s.schedulerPort, err = cluster.FreePort(); err != nil {
		t.Fatal(err)
	}
	sched, err := cluster.StartScheduler(ctx, cp, cluster.SchedulerMetricsArgs(s.schedulerPort)...)
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, sched)
	s.adapter, s.adapterPort, err = cluster.StartAdapter(ctx, cp, cluster.AdapterOptions{ScrapeInterval: "200ms", RateWindow: "60s"})
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, s.adapter)
	if withScaler {
		mport, err := cluster.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		s.scalerMetrics = fmt.Sprintf("http://127.0.0.1:%d/metrics", mport)
		sc, err := cluster.StartScaler(ctx, cp, fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", mport))
		if err != nil {
			t.Fatal(err)
		}
		stopOnCleanup(t, sc)
	}
	if s.dyn, err = dynamic.NewForConfig(cp.Config); err != nil {
		t.Fatal(err)
	}
	return s
}

// world starts a simulator replaying rates (requests/s per trace second) at
// factor trace seconds per wall second.
func (s *stack) world(t *testing.T, services []simulator.Service, rates trace.Rates, factor float64) *simulator.World {
	t.Helper()
	w, err := simulator.New(s.cp.Client, simulator.Config{Services: services, Rates: rates, Factor: factor, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(s.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

// steps builds a rate series: each pair is (seconds, requests/s).
func steps(pairs ...float64) trace.Rates {
	var r trace.Rates
	for i := 0; i+1 < len(pairs); i += 2 {
		for j := 0; j < int(pairs[i]); j++ {
			r = append(r, pairs[i+1])
		}
	}
	return r
}

var metav1ListAll = metav1.ListOptions{}

// modelService creates a ModelService for model from the repo's profiles
// with the tests' knobs, and returns it.
func (s *stack) modelService(t *testing.T, name, model string, rtMaxMs float64) *v1alpha1.ModelService {
	t.Helper()
	ms, err := modelservice.For(name, "default", model, rtMaxMs, s.prof, knobs, factor)
	if err != nil {
		t.Fatal(err)
	}
	if err := demo.CreateModelService(s.ctx, s.dyn, ms); err != nil {
		t.Fatal(err)
	}
	return ms
}

// scalerDecisions is how many decisions with action hetsev-scaler has made
// for ModelService default/name, read from its /metrics
// (hetsev_scaler_decisions_total); 0 before the first.
func (s *stack) scalerDecisions(ctx context.Context, t *testing.T, name, action string) float64 {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.scalerMetrics, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("hetsev-scaler /metrics: %v", err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("hetsev-scaler /metrics: %v", err)
	}
	for _, m := range families["hetsev_scaler_decisions_total"].GetMetric() {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		if l["namespace"] == "default" && l["modelservice"] == name && l["action"] == action {
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
