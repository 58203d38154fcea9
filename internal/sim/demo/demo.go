package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hetsev/hetsev/internal/sim/modelservice"

	"github.com/hetsev/hetsev/pkg/catalog"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/internal/kubectlhetsev"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/kubernetes/test/utils/ktesting"

	"github.com/hetsev/hetsev/internal/sim/simulator"
	"github.com/hetsev/hetsev/internal/sim/trace"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/interference"
	"github.com/hetsev/hetsev/pkg/scaler"
)

// DemoService is one service of the demo.
type DemoService struct {
	Name    string
	Model   string
	Share   float64 // of the trace's requests
	RTMaxMs float64
	// SaturationThreshold overrides the knobs' (HetSev 4.1: "predefined
	// and tunable for specific model service and SLO requirements").
	SaturationThreshold float64
}

// DemoConfig configures RunDemo.
type DemoConfig struct {
	TraceName    string
	Rates        trace.Rates // whole trace, requests/s per second
	TraceStart   int         // first second replayed
	TraceSeconds int         // seconds replayed
	PeakRPS      float64     // the prepared window's peak, requests/s
	SmoothWindow int         // HetSev 6: 120 s averages ...
	SmoothStep   int         // ... in 15 s steps
	Duration     time.Duration
	WarmupTrace  float64 // trace seconds at the first rate before measuring
	Services     []DemoService
	Knobs        modelservice.Knobs
	Report       time.Duration // wall time between progress lines
	// RateWindow is the metrics adapter's rate window in trace time; the
	// trace is already smoothed (HetSev 6), so 30 s adds little noise and
	// halves the lag of a 1-minute rate.
	RateWindow string
	// ScalerArgs are extra hetsev-scaler flags, e.g. --solver=exact.
	ScalerArgs []string
	// GPUSharing is how the simulated model servers on one GPU share it
	// ("" is time-slicing; or mps), through the fitted co-location model.
	// The demo's nodes carry no GFD sharing label, so hetsev-scheduler rates
	// them as time-slicing whatever this says.
	GPUSharing interference.SharingMode
	// GPUMode is how pods get their GPU: v1alpha1.GPUModeAnnotations ("",
	// the default) or v1alpha1.GPUModeDRA, where the nodes' GPUs are
	// published in ResourceSlices, hetsev-scheduler allocates the pods'
	// ResourceClaims (manifests/dra/scheduler-config.yaml), and
	// hetsev-scaler and hetsev-metrics-adapter run with --gpu-mode=dra, as
	// overlays/dra deploys them; the claims are audited (ClaimAudit) at
	// every progress line.
	GPUMode string
	Seed    uint64
	Dir     string
	Out     io.Writer
}

// DefaultDemo is `make demo`: the Twitter trace's 6,000 s around a load
// spike (HetSev 6.1 replays 6,000 s of production load from 200 to 1K QPS),
// ResNet-50 and SSD sharing it 60/40, RT_max 400 ms and 900 ms (HetSev 6).
func DefaultDemo() DemoConfig {
	return DemoConfig{
		TraceName: "twitter_rps_days01-07 (day 1)", TraceStart: 9100, TraceSeconds: 6000,
		PeakRPS: 1000, SmoothWindow: 120, SmoothStep: 15,
		Duration: 240 * time.Second, WarmupTrace: 300,
		Services: []DemoService{
			{Name: "resnet50", Model: "resnet50", Share: 0.6, RTMaxMs: 400},
			// SSD instances are slow (37.7 requests/s on a T4) and a spike
			// needs many of them at once: 0.7 leaves it more headroom.
			{Name: "ssd", Model: "ssd-resnet50", Share: 0.4, RTMaxMs: 900, SaturationThreshold: 0.7},
		},
		Knobs:  modelservice.Knobs{IntervalSeconds: 15, ScaleOutPeriodSeconds: 0, ScaleInIntervalSeconds: 60, ScaleInCoolDownSeconds: 300, MinReplicas: 1},
		Report: 5 * time.Second, Seed: 1, RateWindow: "30s",
	}
}

// Summary is what demo-summary.json holds.
type Summary struct {
	Trace                     string                    `json:"trace"`
	GPUMode                   string                    `json:"gpu_mode"`
	TraceStart                int                       `json:"trace_start"`
	TraceSeconds              int                       `json:"trace_seconds"`
	Compression               float64                   `json:"compression"`
	Requests                  int64                     `json:"requests"`
	SLOAttainment             float64                   `json:"slo_attainment"`
	Services                  map[string]ServiceSummary `json:"services"`
	ReplicasOverTime          []ReplicaSample           `json:"replicas_over_time"`
	GPUHours                  map[string]float64        `json:"gpu_hours"`
	CostUSD                   float64                   `json:"cost_usd"`
	PodsScheduled             int                       `json:"pods_scheduled"`
	IdenticalModelColocations int                       `json:"identical_model_colocations"`
	GPUMemoryOvercommits      int                       `json:"gpu_memory_overcommits"`
	ScalingActions            int                       `json:"scaling_actions"`
	// Claims is GPU mode dra's audit of the ResourceClaims; nil in
	// annotation mode.
	Claims *ClaimAudit `json:"claims,omitempty"`
}

// ServiceSummary is one service's outcome.
type ServiceSummary struct {
	Model         string  `json:"model"`
	RTMaxMs       float64 `json:"rt_max_ms"`
	Requests      int64   `json:"requests"`
	SLOAttainment float64 `json:"slo_attainment"`
	Failed        int64   `json:"failed"`
	MaxReplicas   int32   `json:"max_replicas"`
}

// ReplicaSample is the desired replicas per GPU type at one time; a light
// flavor's replicas are a column of their own, keyed by its Deployment's
// GPU-type label (e.g. t4-busy0.25).
type ReplicaSample struct {
	TraceSeconds float64                     `json:"trace_seconds"`
	ByType       map[string]int32            `json:"by_gpu_type"`
	ByService    map[string]map[string]int32 `json:"by_service"`
}

// RunDemo starts the local cluster and hetsev, replays the trace and
// returns the summary.
func RunDemo(ctx context.Context, tb ktesting.TB, cfg DemoConfig) (*Summary, error) {
	out := cfg.Out
	if out == nil {
		out = os.Stdout
	}
	window, err := cfg.Rates.Window(cfg.TraceStart, cfg.TraceSeconds)
	if err != nil {
		return nil, err
	}
	window = window.FillGaps().Smooth(cfg.SmoothWindow, cfg.SmoothStep)
	window, scale := window.ScaleToPeak(cfg.PeakRPS)
	warm := int(cfg.WarmupTrace)
	rates := make(trace.Rates, 0, warm+len(window))
	for i := 0; i < warm; i++ {
		rates = append(rates, window[0])
	}
	rates = append(rates, window...)
	factor := float64(len(rates)) / cfg.Duration.Seconds()
	fmt.Fprintf(out, "trace %s: seconds [%d, %d), gaps filled, %d s averages in %d s steps, scaled x%.2f to a peak of %.0f requests/s (mean %.0f)\n",
		cfg.TraceName, cfg.TraceStart, cfg.TraceStart+cfg.TraceSeconds, cfg.SmoothWindow, cfg.SmoothStep, scale, window.Peak(), window.Mean())
	fmt.Fprintf(out, "time compression: %.1fx (%d trace seconds incl. %d s warm-up in %s of wall time)\n", factor, len(rates), warm, cfg.Duration)

	cat, err := catalog.DefaultCatalog()
	if err != nil {
		return nil, err
	}
	profiles, err := catalog.DefaultProfiles()
	if err != nil {
		return nil, err
	}

	if cfg.GPUMode == "" {
		cfg.GPUMode = v1alpha1.GPUModeAnnotations
	}
	if !v1alpha1.IsGPUMode(cfg.GPUMode) {
		return nil, fmt.Errorf("GPU mode %q: want %s or %s", cfg.GPUMode, v1alpha1.GPUModeAnnotations, v1alpha1.GPUModeDRA)
	}
	dra := cfg.GPUMode == v1alpha1.GPUModeDRA
	fmt.Fprintf(out, "GPU mode: %s\n", cfg.GPUMode)

	start := time.Now()
	cp, err := cluster.StartControlPlane(ctx, tb, cfg.Dir)
	if err != nil {
		return nil, err
	}
	defer cp.Stop()
	// Runs before cp.Stop: informers and watches end first, or the
	// apiserver's graceful shutdown waits for them.
	ctx, cancelAll := context.WithCancel(ctx)
	defer cancelAll()
	groups, err := cluster.HetSevTestbed(cat)
	if err != nil {
		return nil, err
	}
	nodes, err := cluster.CreateNodes(ctx, cp.Client, groups)
	if err != nil {
		return nil, err
	}
	// The scaler counts free slots with the scheduler's own arguments
	// (first, so that cfg.ScalerArgs may name another file).
	scalerArgs := append([]string{"--scheduler-config=" + cluster.SchedulerConfigFile(dra)}, cfg.ScalerArgs...)
	if dra {
		// What NVIDIA's DRA driver and overlays/dra would install.
		if err := cluster.PublishGPUSlices(ctx, cp, groups); err != nil {
			return nil, err
		}
		if err := cluster.InstallDeviceClass(ctx, cp); err != nil {
			return nil, err
		}
		scalerArgs = append(scalerArgs, "--gpu-mode="+v1alpha1.GPUModeDRA)
	}
	var procs []*cluster.Process
	defer func() {
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].Stop(5 * time.Second)
		}
	}()
	kwok, err := cluster.StartKwok(ctx, cp, filepath.Join(cluster.BinDir(), "kwok"))
	if err != nil {
		return nil, err
	}
	procs = append(procs, kwok)
	if err := cluster.InstallCRDs(ctx, cp); err != nil {
		return nil, err
	}
	if err := cluster.InstallIstioCRDs(ctx, cp); err != nil {
		return nil, err
	}
	if err := CreateDCGMExporters(ctx, cp.Client, nodes); err != nil {
		return nil, err
	}
	sched, err := startScheduler(ctx, cp, dra)
	if err != nil {
		return nil, err
	}
	procs = append(procs, sched)
	adapterOpts := cluster.AdapterOptions{ScrapeInterval: "200ms", RateWindow: cfg.RateWindow}
	if dra {
		adapterOpts.ExtraArgs = []string{"--gpu-mode=" + v1alpha1.GPUModeDRA}
	}
	adapterProc, _, err := cluster.StartAdapter(ctx, cp, adapterOpts)
	if err != nil {
		return nil, err
	}
	procs = append(procs, adapterProc)
	scalerProc, err := cluster.StartScaler(ctx, cp, scalerArgs...)
	if err != nil {
		return nil, err
	}
	procs = append(procs, scalerProc)
	fmt.Fprintf(out, "cluster up in %s: etcd, kube-apiserver, kube-controller-manager, kwok, %d GPU nodes (%s), hetsev-scheduler, hetsev-metrics-adapter (APIService Available), hetsev-scaler; logs in %s\n",
		time.Since(start).Round(100*time.Millisecond), len(nodes), testbedString(groups), cfg.Dir)

	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		return nil, err
	}
	var simServices []simulator.Service
	for _, s := range cfg.Services {
		k := cfg.Knobs
		if s.SaturationThreshold > 0 {
			k.SaturationThreshold = s.SaturationThreshold
		}
		// The testbed's GPU types only: a profiled type the cluster lacks
		// would add a type of no GPUs to every scaling decision.
		ms, err := modelservice.For(s.Name, "default", s.Model, s.RTMaxMs, profiles.On(testbedTypes(groups)...), k, factor)
		if err != nil {
			return nil, err
		}
		if err := CreateModelService(ctx, dyn, ms); err != nil {
			return nil, fmt.Errorf("creating ModelService %s: %w", s.Name, err)
		}
		simServices = append(simServices, SimService(ms, s.Share, cat, factor))
	}
	world, err := simulator.New(cp.Client, simulator.Config{
		Services: simServices, Rates: rates, Factor: factor, GPUSharing: cfg.GPUSharing,
		Seed: cfg.Seed, MeasureFrom: float64(warm),
	})
	if err != nil {
		return nil, err
	}
	if err := world.Start(ctx); err != nil {
		return nil, err
	}
	defer world.Close()
	// The scaler brings each service to its minimum replicas; wait for them
	// to run before the clock starts.
	deadline := time.Now().Add(60 * time.Second)
	for {
		world.SyncPods()
		ok := true
		for _, s := range cfg.Services {
			if world.Instances(s.Name) == 0 {
				ok = false
			}
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("services have no running instance after 60s; see %s", cfg.Dir)
		}
		time.Sleep(100 * time.Millisecond)
	}

	sum := &Summary{Trace: cfg.TraceName, GPUMode: cfg.GPUMode, TraceStart: cfg.TraceStart, TraceSeconds: cfg.TraceSeconds, Compression: factor,
		Services: map[string]ServiceSummary{}, GPUHours: map[string]float64{}}
	if dra {
		sum.Claims = &ClaimAudit{}
	}
	fmt.Fprintf(out, "%-8s %-9s %-20s %-28s %-22s %s\n", "time", "phase", "W (req/s)", "replicas (V100-32GB/T4)", "p98 (ms)", "SLO attainment")
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- world.Run(runCtx) }()
	tick := time.NewTicker(cfg.Report)
	defer tick.Stop()
	lastT := 0.0
	report := func() {
		if sum.Claims != nil {
			if err := sum.Claims.Check(ctx, cp.Client, "default"); err != nil {
				fmt.Fprintf(out, "claim audit: %v\n", err)
			}
		}
		snaps := world.Snapshots()
		rs := replicaSample(ctx, cp, cfg.Services, cat, snaps[0].TraceSeconds)
		sum.ReplicasOverTime = append(sum.ReplicasOverTime, rs)
		dt := snaps[0].TraceSeconds - lastT
		lastT = snaps[0].TraceSeconds
		var w, reps, p98, att []string
		for _, s := range snaps {
			w = append(w, fmt.Sprintf("%.0f", float64(s.Offered)/math.Max(dt, 1e-9)))
			r := rs.ByService[s.Service]
			reps = append(reps, fmt.Sprintf("%s %d/%d", s.Service, r["V100-32GB"], r["T4"]))
			p98 = append(p98, p98String(s.P98Ms))
			att = append(att, fmt.Sprintf("%.4f", s.Attainment))
		}
		phase := "measure"
		if snaps[0].TraceSeconds < float64(warm) {
			phase = "warm-up"
		}
		fmt.Fprintf(out, "%-8s %-9s %-20s %-28s %-22s %s\n", clockString(snaps[0].TraceSeconds-float64(warm)), phase,
			strings.Join(w, " / "), strings.Join(reps, ", "), strings.Join(p98, " / "), strings.Join(att, " / "))
	}
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				return nil, err
			}
			running = false
		case <-tick.C:
			report()
		}
	}
	report()

	tot := world.Totals()
	var all, within int64
	for _, s := range cfg.Services {
		st := tot.Services[s.Name]
		n := st.Completed + st.Failed
		all += n
		within += st.WithinSLO
		ss := ServiceSummary{Model: s.Model, RTMaxMs: s.RTMaxMs, Requests: n, SLOAttainment: st.Attainment(), Failed: st.Failed}
		for _, r := range sum.ReplicasOverTime {
			t := int32(0)
			for _, n := range r.ByService[s.Name] {
				t += n
			}
			ss.MaxReplicas = max(ss.MaxReplicas, t)
		}
		sum.Services[s.Name] = ss
		sum.PodsScheduled += st.PodsStarted
	}
	sum.Requests = all
	if all > 0 {
		sum.SLOAttainment = float64(within) / float64(all)
	}
	for typ, secs := range tot.GPUSeconds {
		h := secs / 3600
		sum.GPUHours[typ] = h
		if g, ok := cat.ByName(typ); ok {
			sum.CostUSD += h * g.PriceUSDPerHour
		}
	}
	sum.IdenticalModelColocations = tot.IdenticalModelColocations
	sum.GPUMemoryOvercommits = tot.GPUMemoryOvercommits
	sum.ScalingActions = countScalingEvents(ctx, cp)
	// Who shares which GPU at the end, as an operator sees it.
	fmt.Fprintf(out, "\n== kubectl hetsev gpus (at the end of the replay) ==\n")
	if c, err := kubectlhetsev.NewClient(cp.Config); err != nil {
		return nil, err
	} else if err := kubectlhetsev.PrintGPUs(ctx, c, out); err != nil {
		return nil, fmt.Errorf("kubectl hetsev gpus: %w", err)
	}
	return sum, nil
}

// startScheduler starts hetsev-scheduler with the config its mode's
// manifests deploy: manifests/scheduler-config.yaml, or in GPU mode dra
// manifests/dra/scheduler-config.yaml.
func startScheduler(ctx context.Context, cp *cluster.ControlPlane, dra bool) (*cluster.Process, error) {
	if !dra {
		return cluster.StartScheduler(ctx, cp)
	}
	cfg, err := cluster.DRASchedulerConfig(cp.Kubeconfig)
	if err != nil {
		return nil, err
	}
	return cluster.StartSchedulerWithConfig(ctx, cp, v1alpha1.SchedulerName, cfg)
}

// p98String shows a p98 that falls on a shed request (rejected because it
// could not meet RT_max, or no instance ready) as "shed".
func p98String(ms float64) string {
	if math.IsInf(ms, 1) {
		return "shed"
	}
	return fmt.Sprintf("%.0f", ms)
}

// testbedTypes are the names of the GPU types of groups, in their order.
func testbedTypes(groups []cluster.NodeGroup) []string {
	var out []string
	for _, g := range groups {
		if !slices.Contains(out, g.GPUType.Name) {
			out = append(out, g.GPUType.Name)
		}
	}
	return out
}

func testbedString(groups []cluster.NodeGroup) string {
	var parts []string
	for _, g := range groups {
		parts = append(parts, fmt.Sprintf("%d x %d %s", g.Count, g.GPUsPerNode, g.GPUType.Name))
	}
	return strings.Join(parts, ", ")
}

func clockString(s float64) string {
	if s < 0 {
		return fmt.Sprintf("-%s", clockString(-s))
	}
	t := int(s)
	return fmt.Sprintf("%02d:%02d:%02d", t/3600, t/60%60, t%60)
}

func replicaSample(ctx context.Context, cp *cluster.ControlPlane, services []DemoService, cat catalog.Catalog, t float64) ReplicaSample {
	rs := ReplicaSample{TraceSeconds: t, ByType: map[string]int32{}, ByService: map[string]map[string]int32{}}
	for _, s := range services {
		rs.ByService[s.Name] = map[string]int32{}
		column := map[string]string{} // Deployment name -> GPU type
		for _, g := range cat.Types {
			column[scaler.DeploymentName(s.Name, g.Name)] = g.Name
		}
		list, err := cp.Client.AppsV1().Deployments("default").List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelModelService + "=" + s.Name})
		if err != nil {
			continue
		}
		for _, d := range list.Items {
			if d.Spec.Replicas == nil {
				continue
			}
			// A light flavor's Deployment is its own column, named by
			// its label (e.g. t4-busy0.25).
			c, ok := column[d.Name]
			if !ok {
				c = d.Labels[v1alpha1.LabelGPUType]
			}
			rs.ByService[s.Name][c] = *d.Spec.Replicas
			rs.ByType[c] += *d.Spec.Replicas
		}
	}
	return rs
}

func countScalingEvents(ctx context.Context, cp *cluster.ControlPlane) int {
	evs, err := cp.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=ModelService"})
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range evs.Items {
		if e.Reason == "ScaleOut" || e.Reason == "ScaleIn" {
			n += int(max(e.Count, 1))
		}
	}
	return n
}

// PrintSummary writes the end-of-run table.
func PrintSummary(w io.Writer, s *Summary) {
	fmt.Fprintf(w, "\n== summary: %s, %d trace seconds at %.1fx, GPU mode %s ==\n", s.Trace, s.TraceSeconds, s.Compression, s.GPUMode)
	fmt.Fprintf(w, "%-10s %-14s %-10s %-12s %-14s %-8s %s\n", "service", "model", "RT_max", "requests", "SLO attainment", "failed", "max replicas")
	names := make([]string, 0, len(s.Services))
	for n := range s.Services {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v := s.Services[n]
		fmt.Fprintf(w, "%-10s %-14s %-10s %-12d %-14.4f %-8d %d\n", n, v.Model, fmt.Sprintf("%.0f ms", v.RTMaxMs), v.Requests, v.SLOAttainment, v.Failed, v.MaxReplicas)
	}
	fmt.Fprintf(w, "%-10s %-14s %-10s %-12d %-14.4f\n", "all", "", "", s.Requests, s.SLOAttainment)
	var types []string
	for t := range s.GPUHours {
		types = append(types, t)
	}
	sort.Strings(types)
	for _, t := range types {
		fmt.Fprintf(w, "GPU-hours %-10s %.3f\n", t, s.GPUHours[t])
	}
	fmt.Fprintf(w, "cost (GPUs hosting >= 1 instance x USD/h): %.2f USD\n", s.CostUSD)
	fmt.Fprintf(w, "pods scheduled: %d, scaling actions: %d, identical-model co-locations: %d, GPU memory over-commits: %d\n",
		s.PodsScheduled, s.ScalingActions, s.IdenticalModelColocations, s.GPUMemoryOvercommits)
	if c := s.Claims; c != nil {
		fmt.Fprintf(w, "ResourceClaims (%d audits, %d allocated claims and %d running pods seen): device over-commits: %d, identical-model co-locations: %d, running pods without their allocation: %d, gpu-index not the claim's device: %d\n",
			c.Audits, c.ClaimsChecked, c.PodsChecked, c.DeviceOvercommits, c.IdenticalModelColocations, c.RunningWithoutAllocation, c.GPUIndexMismatches)
	}
}

// WriteSummary writes s as indented JSON.
func WriteSummary(path string, s *Summary) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
