package exporters

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hetsev/hetsev/pkg/adapter"
)

// DCGMFBFree is dcgm-exporter's free framebuffer gauge (MiB;
// default-counters.csv), which the adapter does not read. The gauges it
// reads are named in pkg/adapter (SeriesDCGMGPUUtil, SeriesDCGMFBUsed).
const DCGMFBFree = "DCGM_FI_DEV_FB_FREE"

// dcgmLabels are dcgm-exporter's per-GPU labels, in its order.
var dcgmLabels = []string{adapter.LabelDCGMGPU, "UUID", "device", "modelName", adapter.LabelDCGMHostname}

// GPUSample is the latest state of one simulated GPU.
type GPUSample struct {
	Index     int    // GPU index on the node; label gpu="<Index>", device="nvidia<Index>"
	UUID      string // e.g. "GPU-8f6b1c2e-..."; label UUID
	ModelName string // e.g. "Tesla T4", "Tesla V100-SXM2-16GB"; label modelName
	// UtilPercent is the percentage (0..100) of time the GPU was busy
	// during the last sample period (DCGM_FI_DEV_GPU_UTIL). Values are
	// clamped to [0,100]; NaN counts as 0.
	UtilPercent float64
	FBUsedMiB   int64 // framebuffer memory used, MiB (DCGM_FI_DEV_FB_USED); negative counts as 0
	FBFreeMiB   int64 // framebuffer memory free, MiB (DCGM_FI_DEV_FB_FREE); negative counts as 0
}

// DCGM is a prometheus.Collector producing NVIDIA dcgm-exporter-style
// gauges for the GPUs of one simulated node: DCGM_FI_DEV_GPU_UTIL
// (percent), DCGM_FI_DEV_FB_USED and DCGM_FI_DEV_FB_FREE (MiB), labelled
// gpu, UUID, device, modelName and Hostname like dcgm-exporter, every
// sample stamped with the simulated clock. It is safe for concurrent use.
type DCGM struct {
	hostname string
	now      func() time.Time
	utilDesc *prometheus.Desc
	usedDesc *prometheus.Desc
	freeDesc *prometheus.Desc
	mu       sync.Mutex
	gpus     map[int]GPUSample
}

// NewDCGM returns a DCGM exporter for the node hostname whose samples are
// stamped with now() (the simulated clock; nil means time.Now).
func NewDCGM(hostname string, now func() time.Time) *DCGM {
	return &DCGM{
		hostname: labelValue(hostname, ""),
		now:      clock(now),
		utilDesc: prometheus.NewDesc(adapter.SeriesDCGMGPUUtil, "GPU utilization (in %).", dcgmLabels, nil),
		usedDesc: prometheus.NewDesc(adapter.SeriesDCGMFBUsed, "Framebuffer memory used (in MiB).", dcgmLabels, nil),
		freeDesc: prometheus.NewDesc(DCGMFBFree, "Framebuffer memory free (in MiB).", dcgmLabels, nil),
		gpus:     map[int]GPUSample{},
	}
}

// SetGPU records the latest sample of GPU g.Index, replacing any previous
// one. It is safe for concurrent use.
func (d *DCGM) SetGPU(g GPUSample) {
	if math.IsNaN(g.UtilPercent) || g.UtilPercent < 0 {
		g.UtilPercent = 0
	}
	if g.UtilPercent > 100 {
		g.UtilPercent = 100
	}
	g.FBUsedMiB = max(g.FBUsedMiB, 0)
	g.FBFreeMiB = max(g.FBFreeMiB, 0)
	g.UUID = labelValue(g.UUID, "")
	g.ModelName = labelValue(g.ModelName, "")
	d.mu.Lock()
	d.gpus[g.Index] = g
	d.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (d *DCGM) Describe(ch chan<- *prometheus.Desc) {
	ch <- d.utilDesc
	ch <- d.usedDesc
	ch <- d.freeDesc
}

// Collect implements prometheus.Collector. Every sample carries the
// timestamp now() of the simulated clock.
func (d *DCGM) Collect(ch chan<- prometheus.Metric) {
	ts := d.now()
	d.mu.Lock()
	gpus := make([]GPUSample, 0, len(d.gpus))
	for _, g := range d.gpus {
		gpus = append(gpus, g)
	}
	d.mu.Unlock()
	slices.SortFunc(gpus, func(a, b GPUSample) int { return cmp.Compare(a.Index, b.Index) })
	for _, g := range gpus {
		idx := strconv.Itoa(g.Index)
		lv := []string{idx, g.UUID, "nvidia" + idx, g.ModelName, d.hostname}
		ch <- prometheus.NewMetricWithTimestamp(ts,
			prometheus.MustNewConstMetric(d.utilDesc, prometheus.GaugeValue, g.UtilPercent, lv...))
		ch <- prometheus.NewMetricWithTimestamp(ts,
			prometheus.MustNewConstMetric(d.usedDesc, prometheus.GaugeValue, float64(g.FBUsedMiB), lv...))
		ch <- prometheus.NewMetricWithTimestamp(ts,
			prometheus.MustNewConstMetric(d.freeDesc, prometheus.GaugeValue, float64(g.FBFreeMiB), lv...))
	}
}

var _ prometheus.Collector = (*DCGM)(nil)
