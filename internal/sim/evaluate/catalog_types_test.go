package evaluate

import (
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/hetsev/hetsev/data/profiles"
	"github.com/hetsev/hetsev/internal/sim/trace"
	"github.com/hetsev/hetsev/pkg/catalog"
)

// withOtherTypes is the repo's catalog and profiles plus two GPU types no
// cluster of these tests has, profiled for every model: FAST (0.01 USD/h,
// 10,000 requests/s at batch 16 in 1 ms: cheapest per request and first in
// name order) and SLOW (1 request/s in 5 s: the slowest type and the
// longest batch latency). A rule that ranges over the catalog's or the
// profiles' types instead of the cluster's picks one of them.
func withOtherTypes(t *testing.T) (catalog.Catalog, catalog.Profiles) {
	t.Helper()
	read := func(name string) string {
		f, err := profiles.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	cat, err := catalog.LoadCatalog(strings.NewReader(read(profiles.GPUCatalog)+
		"FAST,Test-FAST,81920,0.01,none,1,0.01,none,test\n"+
		"SLOW,Test-SLOW,81920,5,none,1,5,none,test\n"), "catalog")
	if err != nil {
		t.Fatal(err)
	}
	rows := read(profiles.ModelProfiles)
	for _, m := range []string{"resnet50", "ssd-resnet50", "bert-large"} {
		rows += m + ",FAST,16,10000,1,f,p,d,test\n" + m + ",SLOW,1,1,5000,f,p,d,test\n"
	}
	prof, err := catalog.LoadProfiles(strings.NewReader(rows), "profiles", strings.NewReader(read(profiles.InstanceEstimates)), "estimates")
	if err != nil {
		t.Fatal(err)
	}
	// The repo's smaller measured batches, as DefaultProfiles loads them.
	prof, err = prof.WithSmallBatches(strings.NewReader(read(profiles.SmallBatches)), "small batches")
	if err != nil {
		t.Fatal(err)
	}
	return cat, prof
}

// TestOtherCatalogTypesChangeNothing: GPU types the cluster lacks, however
// cheap, fast or slow, change neither a per-function replay's services,
// scale and cluster nor any policy's result on a V100 and T4 cluster: the
// rules compare the cluster's types (FunctionGPUTypes, the ModelService's
// profiles, the default policy's slowest type, the bound's sharing gain).
func TestOtherCatalogTypesChangeNothing(t *testing.T) {
	cat, prof := withOtherTypes(t)

	// Two minutes of history, then ten replayed: each row's three counts
	// repeated.
	row := func(id string, c ...int) string {
		out := id
		for m := range 12 {
			out += fmt.Sprintf(",%d", c[m%3])
		}
		return out + "\n"
	}
	in := "HashFunction,Trigger,1,2,3,4,5,6,7,8,9,10,11,12\n" + row("aaaa1111,http", 600, 1200, 600) + row("bbbb2222,timer", 60, 60, 120) +
		row("cccc3333,queue", 30, 0, 90) + row("dddd4444,event", 6, 6, 6)
	fs, err := trace.ReadFunctions(strings.NewReader(in), "f.csv")
	if err != nil {
		t.Fatal(err)
	}
	base, err := Base("t", "t", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	repoSvcs, _, repoScale, _, err := FunctionServices(fs, FunctionWorkload{HistoryMinutes: 2}, base.Profiles, base.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	svcs, _, scale, _, err := FunctionServices(fs, FunctionWorkload{HistoryMinutes: 2}, prof, cat)
	if err != nil {
		t.Fatal(err)
	}
	if scale != repoScale || !reflect.DeepEqual(svcs, repoSvcs) {
		t.Errorf("per-function services with other types: scale %v, %+v; want %v, %+v", scale, svcs, repoScale, repoSvcs)
	}
	if got, want := FunctionCluster(svcs, prof, cat), FunctionCluster(repoSvcs, base.Profiles, base.Catalog); !reflect.DeepEqual(got, want) {
		t.Errorf("per-function cluster with other types %+v, want %+v", got, want)
	}

	services := []Service{
		{Name: "r", Model: "resnet50", Share: 0.7, RTMaxMs: 400},
		{Name: "b", Model: "bert-large", Share: 0.3, RTMaxMs: 1200},
	}
	replay := func(c catalog.Catalog, p catalog.Profiles) []PolicyResult {
		rates := constant(100, 1200)
		for sec := 600; sec < 900; sec++ {
			rates[sec] = 700 // a step the scalers follow
		}
		cfg, err := Base("t", "t", rates, HetSevNodes(1), services...)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Catalog, cfg.Profiles = c, p
		cfg.MeasureFrom = 300
		cfg.Policies = []string{PolicyDefault, PolicyHeuristic, PolicyBound}
		r, err := Evaluate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i := range r.Policies { // wall-clock times, not outcomes
			r.Policies[i].DecisionTimeUs = 0
			for k := range r.Policies[i].Services {
				r.Policies[i].Services[k].DecisionTimeUs = 0
			}
		}
		return r.Policies
	}
	want, got := replay(base.Catalog, base.Profiles), replay(cat, prof)
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("%s with other types: cost %v USD, SLO %v, GPU-hours %v; want %v, %v, %v",
				want[i].Policy, got[i].CostUSD, got[i].SLOAttainment, got[i].GPUHours, want[i].CostUSD, want[i].SLOAttainment, want[i].GPUHours)
		}
	}
}
