//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/internal/sim/demo"
	"github.com/hetsev/hetsev/internal/sim/modelservice"
	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/catalog"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

// rtMaxMs is the e2e ModelService's RT_max.
const rtMaxMs = 400

// testScaler: a ModelService served by real pods through the whole stack
// (hetsev-metrics-adapter scraping the pods' Istio-format metrics,
// hetsev-scaler, hetsev-scheduler, the kubelets). A load ramp makes the
// scaler add instances, whose pods become Ready through the kubelet (the
// launch time is measured); the drop makes it remove them, and their pods
// drain without failing a request in flight. Traffic goes only to Ready,
// non-terminating pods, as a Service's endpoints.
func testScaler(ctx context.Context, t *testing.T, e *env) {
	cp := e.cp
	if err := cluster.InstallCRDs(ctx, cp); err != nil {
		t.Fatal(err)
	}
	if err := cluster.InstallIstioCRDs(ctx, cp); err != nil {
		t.Fatal(err)
	}
	sched := &restartable{start: func() (*cluster.Process, error) { return cluster.StartScheduler(ctx, cp) }}
	if err := sched.restart(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sched.stop)
	ad, _, err := cluster.StartAdapter(ctx, cp, cluster.AdapterOptions{ScrapeInterval: "1s", RateWindow: "10s"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ad.Stop(5 * time.Second) })
	sc, err := cluster.StartScaler(ctx, cp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Stop(10 * time.Second) })

	ms := e2eModelService(t)
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := demo.CreateModelService(ctx, dyn, ms); err != nil {
		t.Fatal(err)
	}
	selector := v1alpha1.LabelModelService + "=" + ms.Name
	pods := &readyPods{}
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go pods.watch(wctx, cp.Client, "default", selector)
	first := waitReplicasReady(ctx, t, e, selector, 1, 2*time.Minute)
	t.Logf("first instance Ready: %s", first)
	// The router has seen it too before the load starts.
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, ok := pods.pick()
		return ok, nil
	}); err != nil {
		t.Fatal("the load generator sees no Ready pod")
	}

	// Replica samples and launch times, read while the load runs.
	type sample struct {
		at    time.Duration
		ready int
	}
	var samples []sample
	launches := map[string]time.Duration{}
	colocations := 0
	gpuOK, gpuChecked := 0, 0
	sctx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(sampled)
		for sctx.Err() == nil {
			l, err := cp.Client.CoreV1().Pods("default").List(sctx, metav1.ListOptions{LabelSelector: selector})
			if err == nil {
				ready := 0
				onGPU := map[gpuKey]int{}
				for _, p := range l.Items {
					if p.DeletionTimestamp != nil || !podReady(&p) {
						continue
					}
					ready++
					k := gpuKey{p.Spec.NodeName, p.Annotations[v1alpha1.AnnotationGPUIndex]}
					if onGPU[k]++; onGPU[k] == 2 {
						colocations++
						t.Errorf("two Ready instances of resnet50 on GPU %s/%s", k.node, k.index)
					}
					if _, seen := launches[p.Name]; !seen {
						launches[p.Name] = readySince(&p).Sub(p.CreationTimestamp.Time)
						gpuChecked++
						if checkGPU(sctx, t, &p) {
							gpuOK++
						}
					}
				}
				samples = append(samples, sample{time.Since(start), ready})
			}
			select {
			case <-sctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()

	// 10 requests/s, a ramp to 160 over 60 s, 20 s at 160, then 10 again:
	// one instance serves 100 requests/s (the stand-in profile), 60 below
	// the saturation threshold 0.6.
	rate := func(s float64) float64 {
		switch {
		case s < 10:
			return 10
		case s < 70:
			return 10 + (s-10)/60*150
		case s < 90:
			return 160
		default:
			return 10
		}
	}
	// hetsev-scheduler is killed (SIGKILL: nothing saved) and started again
	// during the ramp: the instances it placed keep running, and the
	// scale-outs after it are placed by the new one.
	restarted := make(chan error, 1)
	go func() {
		select {
		case <-ctx.Done():
			restarted <- ctx.Err()
		case <-time.After(35 * time.Second):
			restarted <- sched.restart()
		}
	}()
	res := generateLoad(ctx, pods, rate, 150*time.Second, rtMaxMs)
	if err := <-restarted; err != nil {
		t.Errorf("restarting hetsev-scheduler: %v", err)
	}
	stopSampling()
	<-sampled
	if obj, err := dyn.Resource(v1alpha1.Resource).Namespace("default").Get(ctx, ms.Name, metav1.GetOptions{}); err == nil {
		b, _ := json.MarshalIndent(obj.Object["status"], "", "  ")
		t.Logf("ModelService status at the end: %s", b)
	}

	peak, peakAt, last := 0, time.Duration(0), 0
	for _, s := range samples {
		if s.ready > peak {
			peak, peakAt = s.ready, s.at
		}
		last = s.ready
	}
	var lt []string
	for name, d := range launches {
		lt = append(lt, fmt.Sprintf("%s %.1fs", name, d.Seconds()))
	}
	t.Logf("load: %d sent, %d answered, %d failed, attainment %.4f within %d ms (%.4f by the servers' clocks); per pod %v",
		res.Sent, res.OK, res.Failed, res.Attainment(), rtMaxMs, float64(res.ServerWithinRTMax)/float64(max(res.Sent, 1)), res.ByPod)
	t.Logf("Ready instances: peak %d at %v, %d at the end; launch times through the kubelet (creation to Ready, 1 s resolution): %s; GPUs seen as assigned %d/%d; identical-model co-locations %d; hetsev-scheduler restarted at 35 s",
		peak, peakAt.Round(time.Second), last, strings.Join(lt, ", "), gpuOK, gpuChecked, colocations)
	if peak < 2 {
		t.Errorf("peak %d Ready instances, want >= 2 for 160 requests/s", peak)
	}
	if last >= peak {
		t.Errorf("%d Ready instances at the end of the low load, peak %d: no scale-in", last, peak)
	}
	if res.Failed > 0 {
		t.Errorf("%d requests failed (first: %v); a scale-in must drain, not drop", res.Failed, res.FirstErrors)
	}
	if a := res.Attainment(); a < 0.98 {
		t.Errorf("attainment %.4f within RT_max %d ms, want >= 0.98", a, rtMaxMs)
	}
	if gpuOK != gpuChecked {
		t.Errorf("%d of %d instances see a GPU other than the one assigned", gpuChecked-gpuOK, gpuChecked)
	}
}

// standInServiceMs is the e2e model server's service time: one request
// holds its GPU 10 ms, so one instance serves 100 requests/s.
const standInServiceMs = 10.0

// e2eModelService is a ModelService for the e2e model server on V100 and
// T4: its profiles are the stand-in server's own (100 requests/s, 10 ms,
// batch size 1, on either type: one template serves every type), not a
// model's measurements; GPU memory is the ResNet-50 profile's, CPU and
// memory requests what a two-core machine holds, knobs for a run of a
// few minutes: a saturation threshold of 0.6 leaves the headroom a ramp
// this steep needs while the 10 s rate window and a 5 s decision interval
// catch up with it.
func e2eModelService(t *testing.T) *v1alpha1.ModelService {
	t.Helper()
	prof, err := catalog.DefaultProfiles()
	if err != nil {
		t.Fatal(err)
	}
	prof = prof.On("V100-32GB", "T4")
	ms, err := modelservice.For("resnet50", "default", "resnet50", rtMaxMs, prof,
		modelservice.Knobs{SaturationThreshold: 0.6, IntervalSeconds: 5, ScaleInIntervalSeconds: 10, ScaleInCoolDownSeconds: 20, MinReplicas: 1, MaxReplicas: 4}, 1)
	if err != nil {
		t.Fatal(err)
	}
	ms.Spec.BatchSize = 1
	for i := range ms.Spec.Profiles {
		p := &ms.Spec.Profiles[i]
		p.ThroughputRPS, p.LatencyMs = 1000/standInServiceMs, standInServiceMs
		p.CPU, p.Memory, p.LaunchSeconds = "50m", "32Mi", 5
	}
	pod := modelServerPod("template", "", "")
	ctr := pod.Spec.Containers[0]
	ctr.Args = []string{fmt.Sprintf("--service-ms=%g", standInServiceMs), "--load-ms=1000", "--drain-delay=2s"}
	ctr.Env = append(ctr.Env,
		v1.EnvVar{Name: "POD_NAMESPACE", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		v1.EnvVar{Name: "SERVICE", Value: ms.Name})
	ms.Spec.Template.Spec = v1.PodSpec{Containers: []v1.Container{ctr}, TerminationGracePeriodSeconds: ptr(int64(20))}
	ms.Spec.Template.Annotations[adapter.AnnotationPort] = "8080"
	return ms
}

// readySince is when the pod's Ready condition last became true.
func readySince(p *v1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// checkGPU reads the GPU the pod's container sees and compares it with the
// scheduler's choice (hetsev-scaler's template gives NVIDIA_VISIBLE_DEVICES
// from the hetsev.io/gpu-index annotation).
func checkGPU(ctx context.Context, t *testing.T, p *v1.Pod) bool {
	var seen struct{ Node, VisibleDevices string }
	if err := fetchJSON(ctx, "http://"+net.JoinHostPort(p.Status.PodIP, "8080")+"/gpu", &seen); err != nil {
		t.Errorf("%s: %v", p.Name, err)
		return false
	}
	want := p.Annotations[v1alpha1.AnnotationGPUIndex]
	if want == "" || seen.VisibleDevices != want || seen.Node != p.Spec.NodeName {
		t.Errorf("%s: the container sees NVIDIA_VISIBLE_DEVICES %q on %q; the scheduler chose GPU %q on %q", p.Name, seen.VisibleDevices, seen.Node, want, p.Spec.NodeName)
		return false
	}
	return true
}

// waitReplicasReady waits until n pods of selector are Ready and returns
// their names and launch times.
func waitReplicasReady(ctx context.Context, t *testing.T, e *env, selector string, n int, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		l, err := e.cp.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err == nil {
			var ready []string
			for _, p := range l.Items {
				if podReady(&p) {
					ready = append(ready, fmt.Sprintf("%s on %s (%.1fs from creation)", p.Name, p.Spec.NodeName, readySince(&p).Sub(p.CreationTimestamp.Time).Seconds()))
				}
			}
			if len(ready) >= n {
				return strings.Join(ready, ", ")
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
	l, _ := e.cp.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: selector})
	for _, p := range l.Items {
		dumpPod(ctx, t, e, p.Name)
	}
	t.Fatalf("fewer than %d pods of %s Ready within %v", n, selector, timeout)
	return ""
}

// restartable is a program the test kills and starts again.
type restartable struct {
	start func() (*cluster.Process, error)
	mu    sync.Mutex
	p     *cluster.Process
}

// restart kills the running process, if any, and starts a new one.
func (r *restartable) restart() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.p != nil {
		r.p.Kill()
	}
	p, err := r.start()
	r.p = p
	return err
}

func (r *restartable) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.p != nil {
		r.p.Stop(10 * time.Second)
	}
}
