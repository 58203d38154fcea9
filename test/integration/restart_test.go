package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hetsev/hetsev/internal/cluster"
)

// TestSchedulerSurvivesRestarts kills and restarts hetsev-scheduler four
// times (SIGKILL three times, SIGTERM once) while 120 GPU pods are being
// created on 10 nodes with four T4 GPUs each: four models, 6 GiB each, so
// a GPU holds at most two instances of different models and the cluster
// about 80. Each new scheduler must rebuild its GPU accounting from the
// bound pods' hetsev.io/gpu-index. Afterwards no GPU is over-committed or
// hosts a model twice, every bound pod carries its GPU index, and every
// other pod is Pending with the reason.
func TestSchedulerSurvivesRestarts(t *testing.T) {
	cp, ctx := controlPlane(t)
	t4, err := cluster.T4Nodes(10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.CreateNodes(ctx, cp.Client, []cluster.NodeGroup{t4}); err != nil {
		t.Fatal(err)
	}
	c := cp.Client
	var mu sync.Mutex
	var sched *cluster.Process
	start := func() {
		p, err := cluster.StartScheduler(ctx, cp)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		sched = p
		mu.Unlock()
	}
	start()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		sched.Stop(5 * time.Second)
		if t.Failed() {
			t.Logf("--- last lines of the last hetsev-scheduler ---\n%s", sched.Tail(60))
		}
	})

	// 120 pods, one every 50 ms, while the scheduler is restarted.
	created := make(chan struct{})
	go func() {
		defer close(created)
		for i := 0; i < 120; i++ {
			model := fmt.Sprintf("model-%d", i%4)
			b := modelPod(fmt.Sprintf("%s-%03d", model, i), model, "6Gi").on("Tesla-T4")
			if _, err := c.CoreV1().Pods("default").Create(ctx, b.pod, metav1.CreateOptions{}); err != nil {
				t.Errorf("creating pod: %v", err)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	// Each restart comes once the running scheduler has bound
	// boundPerScheduler more pods since it started: it has rebuilt its
	// accounting and is placing the pods being created. 4 restarts need
	// 20 binds, well within the about 80 pods that fit.
	const boundPerScheduler = 5
	bound := func(ctx context.Context) (int, error) {
		l, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		n := 0
		for _, p := range l.Items {
			if p.Spec.NodeName != "" {
				n++
			}
		}
		return n, nil
	}
	boundAtStart := 0
	for i, how := range []string{"kill", "kill", "term", "kill"} {
		waitFor(ctx, t, time.Minute, fmt.Sprintf("scheduler %d to bind %d pods", i+1, boundPerScheduler), func(ctx context.Context) (bool, error) {
			n, err := bound(ctx)
			return err == nil && n >= boundAtStart+boundPerScheduler, nil
		})
		mu.Lock()
		p := sched
		mu.Unlock()
		if how == "kill" {
			p.Kill()
		} else {
			p.Stop(5 * time.Second)
		}
		t.Logf("restart %d (%s)", i+1, how)
		start()
		if boundAtStart, err = bound(ctx); err != nil {
			t.Fatalf("listing pods: %v", err)
		}
	}
	<-created

	// Settled: every pod is bound or has been found unschedulable, and that
	// holds for two polls in a row.
	var pods []v1.Pod
	stable := 0
	waitFor(ctx, t, 2*time.Minute, "every pod bound or Pending with a reason", func(ctx context.Context) (bool, error) {
		l, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, p := range l.Items {
			if p.Spec.NodeName == "" && unschedulableReason(p) == "" {
				stable = 0
				return false, nil
			}
		}
		pods = l.Items
		stable++
		return stable >= 2, nil
	})

	byGPU := checkPlacements(ctx, t, c) // over-commit, anti-affinity, index
	placed, pending := 0, 0
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			placed++
			continue
		}
		pending++
		if r := unschedulableReason(p); !strings.Contains(r, "no GPU with 6144 MiB") && !strings.Contains(r, "anti-affinity") {
			t.Errorf("pending pod %s: reason %q names neither GPU memory nor anti-affinity", p.Name, r)
		}
	}
	t.Logf("%d pods placed on %d GPUs, %d Pending", placed, len(byGPU), pending)
	if len(pods) != 120 || placed < 70 {
		t.Errorf("%d pods, %d placed: want 120, and at least 70 of the about 80 that fit", len(pods), placed)
	}
	// Each pod was bound once: the API server refuses to bind a bound pod,
	// so a second binding shows as a failed binding in the events.
	evs, err := c.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if strings.Contains(e.Message, "already assigned") || strings.Contains(e.Message, "already bound") {
			t.Errorf("pod %s: %s", e.InvolvedObject.Name, e.Message)
		}
	}
}

// unschedulableReason is the message of a pod's PodScheduled=False
// condition, or "".
func unschedulableReason(p v1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse {
			return c.Message
		}
	}
	return ""
}
