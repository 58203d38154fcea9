package gpushare

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	fwk "k8s.io/kube-scheduler/framework"
	"sigs.k8s.io/yaml"

	configtesting "github.com/hetsev/hetsev/pkg/apis/config/testing"
	"github.com/hetsev/hetsev/pkg/dra"
)

// factoryHandle is a handle with no informers and, optionally, a DRA
// manager (only stored by the factory).
type factoryHandle struct {
	handle
	draManager fwk.SharedDRAManager
}

func (h factoryHandle) SharedInformerFactory() informers.SharedInformerFactory { return nil }
func (h factoryHandle) SharedDRAManager() fwk.SharedDRAManager                 { return h.draManager }

type stubDRAManager struct{ fwk.SharedDRAManager }

// TestNewBuildsOnePluginPerGPUMode: the factory registered as
// HetsevGPUShare builds AnnotationGPUShare for gpuMode annotations (and by
// default) and DRAGPUShare for gpuMode dra, which needs the scheduler's
// DRA manager.
func TestNewBuildsOnePluginPerGPUMode(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, dra.GateDRAConsumableCapacity, true)
	ctx := context.Background()
	for _, tc := range []struct {
		args    string
		h       factoryHandle
		wantDRA bool
		wantErr string
	}{
		{args: `{}`},
		{args: `{"gpuMode":"annotations"}`},
		{args: `{"gpuMode":"dra"}`, h: factoryHandle{draManager: stubDRAManager{}}, wantDRA: true},
		{args: `{"gpuMode":"dra"}`, wantErr: "needs the scheduler's DRA manager"},
	} {
		obj, err := configtesting.DecodePluginArgs(Name, tc.args)
		if err != nil {
			t.Fatalf("%s: %v", tc.args, err)
		}
		pl, err := New(ctx, obj, tc.h)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err %v, want one saying %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.args, err)
		}
		if pl.Name() != Name {
			t.Errorf("%s: name %q, want %q", tc.args, pl.Name(), Name)
		}
		_, isDRA := pl.(*DRAGPUShare)
		_, isAnn := pl.(*AnnotationGPUShare)
		if isDRA != tc.wantDRA || isAnn == tc.wantDRA {
			t.Errorf("%s: New built a %T", tc.args, pl)
		}
	}
}

// TestExtensionPointsMatchManifests: each GPU mode's plugin implements
// exactly the extension points its scheduler configuration in manifests/
// enables for HetsevGPUShare. One it lacks makes the scheduler refuse the
// configuration; one it has and no configuration enables is dead code.
func TestExtensionPointsMatchManifests(t *testing.T) {
	implements := map[string]func(fwk.Plugin) bool{
		"preEnqueue": func(p fwk.Plugin) bool { _, ok := p.(fwk.PreEnqueuePlugin); return ok },
		"preFilter":  func(p fwk.Plugin) bool { _, ok := p.(fwk.PreFilterPlugin); return ok },
		"filter":     func(p fwk.Plugin) bool { _, ok := p.(fwk.FilterPlugin); return ok },
		"postFilter": func(p fwk.Plugin) bool { _, ok := p.(fwk.PostFilterPlugin); return ok },
		"preScore":   func(p fwk.Plugin) bool { _, ok := p.(fwk.PreScorePlugin); return ok },
		"score":      func(p fwk.Plugin) bool { _, ok := p.(fwk.ScorePlugin); return ok },
		"reserve":    func(p fwk.Plugin) bool { _, ok := p.(fwk.ReservePlugin); return ok },
		"permit":     func(p fwk.Plugin) bool { _, ok := p.(fwk.PermitPlugin); return ok },
		"preBind":    func(p fwk.Plugin) bool { _, ok := p.(fwk.PreBindPlugin); return ok },
		"bind":       func(p fwk.Plugin) bool { _, ok := p.(fwk.BindPlugin); return ok },
		"postBind":   func(p fwk.Plugin) bool { _, ok := p.(fwk.PostBindPlugin); return ok },
	}
	for file, pl := range map[string]fwk.Plugin{
		"scheduler-config.yaml":     &AnnotationGPUShare{},
		"dra/scheduler-config.yaml": &DRAGPUShare{},
	} {
		raw, err := os.ReadFile(filepath.Join("..", "..", "..", "manifests", file))
		if err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			Profiles []struct {
				Plugins map[string]struct {
					Enabled []struct{ Name string }
				}
			}
		}
		if err := yaml.Unmarshal(raw, &cfg); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		enabled := map[string]bool{}
		for _, prof := range cfg.Profiles {
			for point, set := range prof.Plugins {
				for _, e := range set.Enabled {
					if e.Name == Name {
						enabled[point] = true
					}
				}
			}
		}
		if enabled["multiPoint"] {
			t.Fatalf("%s enables %s at multiPoint; this test reads the points one by one", file, Name)
		}
		for point, impl := range implements {
			if got := impl(pl); got != enabled[point] {
				t.Errorf("%T implements %s: %v; manifests/%s enables it: %v", pl, point, got, file, enabled[point])
			}
		}
	}
}
