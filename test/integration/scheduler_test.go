package integration

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hetsev/hetsev/internal/cluster"
)

// TestSchedulerPlacesOnGPUs runs hetsev-scheduler against the testbed's
// eight T4 GPUs: identical models spread one per GPU, a second model shares
// GPUs by worst fit without over-committing memory, and pods that fit nowhere
// or carry a malformed annotation stay Pending with a reason.
func TestSchedulerPlacesOnGPUs(t *testing.T) {
	cp, ctx := testbed(t)
	sched, err := cluster.StartScheduler(ctx, cp)
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, sched)
	c := cp.Client

	// Eight ResNet-50 instances on the eight T4 GPUs: anti-affinity forces
	// one per GPU.
	for i := 0; i < 8; i++ {
		modelPod(fmt.Sprintf("resnet50-%d", i), "resnet50", "2Gi").on("Tesla-T4").create(ctx, t, c)
	}
	waitRunning(ctx, t, c, "app=resnet50", 8)
	byGPU := checkPlacements(ctx, t, c)
	if len(byGPU) != 8 {
		t.Fatalf("resnet50 instances occupy %d GPUs, want 8 distinct GPUs", len(byGPU))
	}
	for k := range byGPU {
		if !strings.HasPrefix(k.node, "t4-") {
			t.Errorf("resnet50 landed on %s, not a T4 node", k.node)
		}
	}

	// A ninth identical instance has no GPU without resnet50 on it.
	modelPod("resnet50-extra", "resnet50", "2Gi").on("Tesla-T4").create(ctx, t, c)
	// SSD instances of 10 GiB: each T4 has 14 GiB free, so eight fit, one per GPU.
	for i := 0; i < 8; i++ {
		modelPod(fmt.Sprintf("ssd-%d", i), "ssd-resnet50", "10Gi").on("Tesla-T4").create(ctx, t, c)
	}
	waitRunning(ctx, t, c, "app=ssd-resnet50", 8)
	// A BERT instance of 6 GiB no longer fits any T4 (4 GiB free on each),
	// but fits a V100.
	modelPod("bert-t4", "bert-large", "6Gi").on("Tesla-T4").create(ctx, t, c)
	modelPod("bert-v100", "bert-large", "6Gi").on("Tesla-V100-SXM2-32GB").create(ctx, t, c)
	// Malformed and negative GPU memory.
	modelPod("bad-quantity", "resnet50", "lots").on("Tesla-T4").create(ctx, t, c)
	modelPod("bad-negative", "resnet50", "-1Gi").on("Tesla-T4").create(ctx, t, c)

	waitRunning(ctx, t, c, "app=bert-large", 1)
	byGPU = checkPlacements(ctx, t, c)
	for k, pods := range byGPU {
		if strings.HasPrefix(k.node, "t4-") && len(pods) != 2 {
			t.Errorf("T4 %s/%d holds %d instances, want resnet50 + ssd", k.node, k.index, len(pods))
		}
	}

	for name, want := range map[string]string{
		"resnet50-extra": "anti-affinity",
		"bert-t4":        "no GPU with 6144 MiB of free GPU memory",
		"bad-quantity":   v1alpha1.AnnotationGPUMemory,
		"bad-negative":   v1alpha1.AnnotationGPUMemory,
	} {
		waitFor(ctx, t, 30*time.Second, name+" FailedScheduling event", func(ctx context.Context) (bool, error) {
			msgs, err := eventsFor(ctx, c, "default", name)
			return err == nil && strings.Contains(msgs, "FailedScheduling") && strings.Contains(msgs, want), nil
		})
		p, err := c.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != "" || p.Status.Phase != v1.PodPending {
			t.Errorf("%s: node %q phase %s, want Pending and unbound", name, p.Spec.NodeName, p.Status.Phase)
		}
	}
}

// waitRunning waits until n pods matching selector are Running with a pod IP.
func waitRunning(ctx context.Context, t *testing.T, c kubernetes.Interface, selector string, n int) {
	t.Helper()
	waitFor(ctx, t, 60*time.Second, fmt.Sprintf("%d running pods %s", n, selector), func(ctx context.Context) (bool, error) {
		pods, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, nil
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == v1.PodRunning && p.Status.PodIP != "" {
				running++
			}
		}
		return running >= n, nil
	})
}

// Invalid plugin arguments stop hetsev-scheduler at start with a message
// naming the field, instead of scheduling with a behaviour nobody asked for.
func TestSchedulerRefusesInvalidPluginArgs(t *testing.T) {
	cp, ctx := controlPlane(t)
	cfg, err := cluster.SchedulerConfig(cp.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ good, bad, want string }{
		{"fit: WorstFit", "fit: FirstFit", `pluginConfig[HetsevGPUShare].args.fit: Unsupported value: \"FirstFit\"`},
		{"k: 3", "k: 17", `pluginConfig[HetsevFairQueue].args.k: Invalid value: 17: must be between 1 and 16`},
	} {
		if !strings.Contains(cfg, c.good) {
			t.Fatalf("manifests/scheduler-config.yaml no longer sets %s", c.good)
		}
		sched, err := cluster.StartSchedulerWithConfig(ctx, cp, "bad-scheduler", strings.Replace(cfg, c.good, c.bad, 1))
		if err != nil {
			t.Fatal(err)
		}
		stopOnCleanup(t, sched)
		var exitErr error
		waitFor(ctx, t, 60*time.Second, "hetsev-scheduler to exit", func(context.Context) (bool, error) {
			done, err := sched.Exited()
			exitErr = err
			return done, nil
		})
		if exitErr == nil {
			t.Errorf("%s: hetsev-scheduler exited with status 0", c.bad)
		}
		if log := sched.Tail(30); !strings.Contains(log, c.want) {
			t.Errorf("%s: log does not name the field:\n%s", c.bad, log)
		}
	}
}

// TestSchedulerConfigzShowsPluginArgs: hetsev's plugin arguments are kinds of
// the scheduler's own config group (pkg/apis/config), so hetsev-scheduler
// defaults them and serves them on /configz like upstream plugins' args.
// The scheduler runs with manifests/scheduler-config.yaml without its
// pluginConfig, so every value shown is a default.
func TestSchedulerConfigzShowsPluginArgs(t *testing.T) {
	cp, ctx := controlPlane(t)
	cfg, err := cluster.SchedulerConfig(cp.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(cfg, "\n    pluginConfig:\n")
	if i < 0 {
		t.Fatal("manifests/scheduler-config.yaml no longer has a pluginConfig")
	}
	cfg = cfg[:i+1]
	port, err := cluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	// As bench-scheduler reads /metrics: anonymous, with the path allowed
	// (the scheduler has no delegated authentication here).
	sched, err := cluster.StartSchedulerWithConfig(ctx, cp, "configz-scheduler", cfg,
		fmt.Sprintf("--secure-port=%d", port), "--authorization-always-allow-paths=/healthz,/readyz,/livez,/configz")
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, sched)

	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the scheduler's self-signed serving cert
	}}
	var body []byte
	waitFor(ctx, t, 60*time.Second, "hetsev-scheduler's /configz", func(ctx context.Context) (bool, error) {
		if done, err := sched.Exited(); done {
			return false, fmt.Errorf("hetsev-scheduler exited: %v", err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/configz", port), nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil // not serving yet
		}
		defer resp.Body.Close()
		body, err = io.ReadAll(resp.Body)
		return err == nil && resp.StatusCode == http.StatusOK, nil
	})
	var configz struct {
		ComponentConfig struct {
			Profiles []struct {
				SchedulerName string `json:"schedulerName"`
				PluginConfig  []struct {
					Name string         `json:"name"`
					Args map[string]any `json:"args"`
				} `json:"pluginConfig"`
			} `json:"profiles"`
		} `json:"componentconfig"`
	}
	if err := json.Unmarshal(body, &configz); err != nil {
		t.Fatalf("/configz: %v\n%s", err, body)
	}
	got := map[string]map[string]any{}
	for _, p := range configz.ComponentConfig.Profiles {
		if p.SchedulerName != v1alpha1.SchedulerName {
			continue
		}
		for _, pc := range p.PluginConfig {
			got[pc.Name] = pc.Args
		}
	}
	for name, want := range map[string]map[string]any{
		"HetsevFairQueue": {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "HetsevFairQueueArgs", "k": 3.0, "beta": 16.0},
		"HetsevGPUShare":  {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "HetsevGPUShareArgs", "antiAffinity": "Hard", "fit": "WorstFit", "interferenceWeight": 0.5, "maxBusyShare": 1.0, "consolidate": true, "gpuMode": "annotations", "gpuPool": false},
	} {
		if !reflect.DeepEqual(got[name], want) {
			t.Errorf("/configz args of %s: %v, want %v", name, got[name], want)
		}
	}
	if t.Failed() {
		t.Logf("/configz: %s", body)
	}
}

// TestSchedulerHonoursPreferredNodeAffinity: the shipped configuration
// scores what the pod prefers beside worst fit. t4-3 holds two instances
// (one per GPU), so worst fit alone rates its GPUs below every empty one
// of t4-0..2; a pod that prefers t4-3 (preferredDuringScheduling node
// affinity) lands there, where a GPU fits it.
func TestSchedulerHonoursPreferredNodeAffinity(t *testing.T) {
	cp, ctx := testbed(t)
	sched, err := cluster.StartScheduler(ctx, cp)
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, sched)
	c := cp.Client
	for i, model := range []string{"filler-a", "filler-b"} {
		b := modelPod(fmt.Sprintf("filler-%d", i), model, "2Gi").on("Tesla-T4")
		b.pod.Spec.NodeSelector[v1.LabelHostname] = "t4-3"
		b.create(ctx, t, c)
	}
	waitRunning(ctx, t, c, "app in (filler-a, filler-b)", 2)
	b := modelPod("prefers-t4-3", "resnet50", "2Gi").on("Tesla-T4")
	b.pod.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{
		Weight: 100, Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{"t4-3"}}}},
	}}}}
	b.create(ctx, t, c)
	waitRunning(ctx, t, c, "app=resnet50", 1)
	p, err := c.CoreV1().Pods("default").Get(ctx, "prefers-t4-3", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.NodeName != "t4-3" {
		t.Errorf("a pod preferring t4-3 landed on %s: the scheduler ignored its preferred node affinity", p.Spec.NodeName)
	}
}
