package scrape

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/adapter/internal/adaptertest"
	"github.com/hetsev/hetsev/pkg/adapter/provider"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// DCGM series are joined to pods through (spec.nodeName, hetsev.io/gpu-index)
// and the Hostname/gpu labels; pods sharing a GPU both get the whole GPU's
// utilisation. Runs against a real Scraper fed with dcgm-exporter text.
func TestDCGMJoinThroughNodeAndGPUIndex(t *testing.T) {
	dcgm1, dcgm2 := adaptertest.NN("gpu-operator", "dcgm-node-1"), adaptertest.NN("gpu-operator", "dcgm-node-2")
	s := newTestScraper(t, Options{},
		Target{Pod: dcgm1, UID: "d1", Node: "node-1", URL: "http://127.0.0.1:1/d1", DCGM: true},
		Target{Pod: dcgm2, UID: "d2", Node: "node-2", URL: "http://127.0.0.1:1/d2", DCGM: true})
	dcgmText := func(host string, util0, util1, fb0, fb1 float64) string {
		return fmt.Sprintf(`# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %%).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-%[1]s-0",device="nvidia0",modelName="Tesla T4",Hostname=%[1]q} %[2]v %[6]d
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-%[1]s-1",device="nvidia1",modelName="Tesla T4",Hostname=%[1]q} %[3]v %[6]d
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-%[1]s-0",device="nvidia0",modelName="Tesla T4",Hostname=%[1]q} %[4]v %[6]d
DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-%[1]s-1",device="nvidia1",modelName="Tesla T4",Hostname=%[1]q} %[5]v %[6]d
`, host, util0, util1, fb0, fb1, ms(adaptertest.SimEpoch))
	}
	scrapedAt := adaptertest.SimEpoch.Add(time.Minute) // the exposition says SimEpoch
	feed(t, s, dcgm1, dcgmText("node-1", 11, 22, 1000, 2000), scrapedAt)
	// node-2's exporter omits Hostname: its pod's node is used.
	feed(t, s, dcgm2, `DCGM_FI_DEV_GPU_UTIL{gpu="0"} 33
DCGM_FI_DEV_GPU_UTIL{gpu="1"} 44
DCGM_FI_DEV_FB_USED{gpu="1"} 4000
`, time.Now())

	pods, deps := adaptertest.Listers(t, []*corev1.Pod{
		adaptertest.NewPod("ml", "x").Label("app", "m").GPU("node-1", 1).Obj(),
		adaptertest.NewPod("ml", "y").Label("app", "m").GPU("node-2", 1).Obj(),
		adaptertest.NewPod("ml", "shares-x").Label("app", "other").GPU("node-1", 1).Obj(),
		adaptertest.NewPod("ml", "gpu-3").GPU("node-1", 3).Obj(),
		adaptertest.NewPod("ml", "bad-index").Node("node-1").Annotate(v1alpha1.AnnotationGPUIndex, "one").Obj(),
	}, []*appsv1.Deployment{adaptertest.Deployment("ml", "m", map[string]string{"app": "m"})})
	p := provider.New(s, pods, deps)

	for _, tc := range []struct {
		pod, metric string
		want        float64
	}{
		{"x", adapter.MetricGPUUtilization, 22},
		{"x", adapter.MetricGPUMemoryUsed, 2000},
		{"shares-x", adapter.MetricGPUUtilization, 22}, // whole GPU, not a share
		{"y", adapter.MetricGPUUtilization, 44},
		{"y", adapter.MetricGPUMemoryUsed, 4000},
	} {
		if got := adaptertest.GetValue(t, p, adaptertest.PodsInfo(tc.metric), adaptertest.NN("ml", tc.pod)); got != tc.want {
			t.Errorf("%s %s = %v, want %v", tc.pod, tc.metric, got, tc.want)
		}
	}
	if got := adaptertest.GetValue(t, p, adaptertest.DepInfo(adapter.MetricGPUUtilization), adaptertest.NN("ml", "m")); got != 33 {
		t.Errorf("deployment gpu util = %v, want mean(22, 44) = 33", got)
	}
	mv, err := p.GetMetricByName(context.Background(), adaptertest.NN("ml", "x"), adaptertest.PodsInfo(adapter.MetricGPUUtilization), labels.Everything())
	if err != nil || !mv.Timestamp.Time.Equal(scrapedAt) || mv.WindowSeconds == nil || *mv.WindowSeconds != 0 {
		t.Errorf("gauge timestamp/window: %+v, %v", mv, err)
	}
	for _, pod := range []string{"gpu-3", "bad-index"} {
		if _, err := p.GetMetricByName(context.Background(), adaptertest.NN("ml", pod), adaptertest.PodsInfo(adapter.MetricGPUUtilization), labels.Everything()); !apierrors.IsNotFound(err) {
			t.Errorf("%s: err = %v, want NotFound", pod, err)
		}
	}
	// The exporter's scrape fails: its GPUs have no data.
	failScrape(s, dcgm2)
	if _, err := p.GetMetricByName(context.Background(), adaptertest.NN("ml", "y"), adaptertest.PodsInfo(adapter.MetricGPUUtilization), labels.Everything()); !apierrors.IsNotFound(err) {
		t.Errorf("exporter down: err = %v, want NotFound", err)
	}
}

// TestDCGMOnlyFromTrustedExporters: a tenant's pod on node-1 exposes
// DCGM series for node-1's GPU 0 (busy 99 %, newer than the exporter's)
// and the trusted exporter of node-2 exposes a series naming node-1's
// GPU 1. Neither may overwrite what node-1's own exporter reports: a pod
// on node-1's GPU 0 reads 11 and one on its GPU 1 reads 22. Node-2's
// exporter, whose Hostname is its pod's name (no NODE_NAME), still
// reports its own node's GPU.
func TestDCGMOnlyFromTrustedExporters(t *testing.T) {
	exp1, exp2 := adaptertest.NN("gpu-operator", "dcgm-node-1"), adaptertest.NN("gpu-operator", "dcgm-node-2")
	tenant := adaptertest.NN("ml", "spoofer")
	s := newTestScraper(t, Options{},
		Target{Pod: exp1, UID: "d1", Node: "node-1", URL: "http://127.0.0.1:1/d1", DCGM: true},
		Target{Pod: exp2, UID: "d2", Node: "node-2", URL: "http://127.0.0.1:1/d2", DCGM: true},
		Target{Pod: tenant, UID: "s", Node: "node-1", URL: "http://127.0.0.1:1/s"})
	at := ms(adaptertest.SimEpoch)
	feed(t, s, exp1, fmt.Sprintf("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"node-1\"} 11 %d\nDCGM_FI_DEV_GPU_UTIL{gpu=\"1\",Hostname=\"node-1\"} 22 %d\n", at, at), time.Now())
	feed(t, s, tenant, fmt.Sprintf("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"node-1\"} 99 %d\n", at+60000), time.Now())
	feed(t, s, exp2, fmt.Sprintf("DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",Hostname=\"node-1\"} 77 %d\nDCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"dcgm-node-2\"} 33 %d\n", at+60000, at), time.Now())

	pods, deps := adaptertest.Listers(t, []*corev1.Pod{
		adaptertest.NewPod("ml", "on-gpu-0").GPU("node-1", 0).Obj(),
		adaptertest.NewPod("ml", "on-gpu-1").GPU("node-1", 1).Obj(),
		adaptertest.NewPod("ml", "on-node-2").GPU("node-2", 0).Obj(),
	}, nil)
	p := provider.New(s, pods, deps)
	for pod, want := range map[string]float64{"on-gpu-0": 11, "on-gpu-1": 22, "on-node-2": 33} {
		if got := adaptertest.GetValue(t, p, adaptertest.PodsInfo(adapter.MetricGPUUtilization), adaptertest.NN("ml", pod)); got != want {
			t.Errorf("%s: GPU utilisation %v, want %v (its own node's exporter)", pod, got, want)
		}
	}
}

// TestDCGMExportersMatch: a trusted exporter is a pod of the namespace
// with the selector's labels; an empty namespace trusts any; a tenant's
// pod with the labels in its own namespace is not one.
func TestDCGMExportersMatch(t *testing.T) {
	d, err := DefaultOptions().DCGMExporters()
	if err != nil {
		t.Fatal(err)
	}
	exporter := adaptertest.NewPod(DefaultDCGMExporterNamespace, "e").Label("app", "nvidia-dcgm-exporter").Obj()
	spoof := adaptertest.NewPod("ml", "e").Label("app", "nvidia-dcgm-exporter").Obj()
	other := adaptertest.NewPod(DefaultDCGMExporterNamespace, "o").Label("app", "gpu-feature-discovery").Obj()
	if !d.Match(exporter) || d.Match(spoof) || d.Match(other) || d.Match(nil) {
		t.Errorf("match exporter %t, tenant's labelled pod %t, other operand %t; want true, false, false", d.Match(exporter), d.Match(spoof), d.Match(other))
	}
	d.Namespace = ""
	if !d.Match(spoof) {
		t.Error("namespace \"\": a labelled pod in any namespace should match")
	}
	if _, err := (Options{DCGMExporterSelector: "app in (x"}).DCGMExporters(); err == nil || !strings.Contains(err.Error(), "--dcgm-exporter-selector") {
		t.Errorf("bad selector: %v, want an error naming --dcgm-exporter-selector", err)
	}
}

// TestDCGMNewestScrapeWins: two trusted exporters report node-1's GPU 0
// (the old and the new pod of a rollout). The one scraped last wins,
// whatever time its exposition claims: an exporter that stamps its
// samples in the future does not keep its value for ever.
func TestDCGMNewestScrapeWins(t *testing.T) {
	old, fresh := adaptertest.NN("gpu-operator", "dcgm-old"), adaptertest.NN("gpu-operator", "dcgm-new")
	s := newTestScraper(t, Options{},
		Target{Pod: old, UID: "o", Node: "node-1", URL: "http://127.0.0.1:1/o", DCGM: true},
		Target{Pod: fresh, UID: "n", Node: "node-1", URL: "http://127.0.0.1:1/n", DCGM: true})
	at := adaptertest.SimEpoch
	feed(t, s, old, fmt.Sprintf("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"node-1\"} 90 %d\n", ms(at.Add(time.Hour))), at)
	feed(t, s, fresh, fmt.Sprintf("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"node-1\"} 12 %d\n", ms(at)), at.Add(10*time.Second))
	v, err := s.GPUGauge(adapter.SeriesDCGMGPUUtil, adapter.GPU{Node: "node-1", Index: 0})
	if err != nil || v.Value != 12 || !v.Time.Equal(at.Add(10*time.Second)) {
		t.Errorf("GPU 0 of node-1: %+v, %v; want 12 from the exporter scraped last, at its scrape time", v, err)
	}
}

// TestDCGMJoinByUUID: a GPU named by UUID reads the series with that UUID
// label, whatever index it has on its node (a DRA driver's device order
// need not be nvidia-smi's); a UUID no series carries falls back to the
// index.
func TestDCGMJoinByUUID(t *testing.T) {
	exp := adaptertest.NN("gpu-operator", "dcgm-node-1")
	s := newTestScraper(t, Options{}, Target{Pod: exp, UID: "d1", Node: "node-1", URL: "http://127.0.0.1:1/d1", DCGM: true})
	feed(t, s, exp, `DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-aaa",Hostname="node-1"} 10
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-bbb",Hostname="node-1"} 70
`, adaptertest.SimEpoch)
	for _, c := range []struct {
		gpu  adapter.GPU
		want float64
	}{
		{adapter.GPU{Node: "node-1", Index: 0, UUID: "GPU-bbb"}, 70},
		{adapter.GPU{Node: "node-1", Index: 0, UUID: "GPU-zzz"}, 10},
		{adapter.GPU{Node: "node-1", Index: 1}, 70},
	} {
		if v, err := s.GPUGauge(adapter.SeriesDCGMGPUUtil, c.gpu); err != nil || v.Value != c.want {
			t.Errorf("%s: %v, %v; want %v", c.gpu, v.Value, err, c.want)
		}
	}
}
