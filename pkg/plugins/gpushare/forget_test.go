package gpushare

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// informerHandle is the part of fwk.Handle New uses to watch deletions.
type informerHandle struct {
	fwk.Handle
	f informers.SharedInformerFactory
}

func (h informerHandle) SharedInformerFactory() informers.SharedInformerFactory { return h.f }

// A deleted node's cached accounting is dropped: the cache follows the
// cluster instead of growing with every node the scheduler ever saw.
func TestNodeCacheForgetsDeletedNodes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := t4Node("a"), t4Node("b")
	client := fake.NewClientset(a, b)
	f := informers.NewSharedInformerFactory(client, 0)
	pl, err := New(ctx, nil, informerHandle{f: f})
	if err != nil {
		t.Fatal(err)
	}
	p := pl.(*AnnotationGPUShare)
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	// The fake client drops events between the informer's list and its
	// watch: wait until a node created now arrives through the watch.
	if _, err := client.CoreV1().Nodes().Create(ctx, t4Node("watch-open"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, err := f.Core().V1().Nodes().Lister().Get("watch-open")
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the node informer's watch never delivered a created node: %v", err)
	}

	pod := gpuPod("p", "", "resnet50", "2Gi", "")
	state := framework.NewCycleState()
	if _, st := p.PreFilter(ctx, state, pod, nil); !st.IsSuccess() {
		t.Fatal(st)
	}
	for _, n := range []string{"a", "b"} {
		if st := p.Filter(ctx, state, pod, nodeInfo(t4Node(n))); !st.IsSuccess() {
			t.Fatalf("Filter on %s: %v", n, st)
		}
	}
	if n := cachedNodes(p); n != 2 {
		t.Fatalf("%d nodes cached after Filter on two, want 2", n)
	}
	if err := client.CoreV1().Nodes().Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return cachedNodes(p) == 1, nil
	}); err != nil {
		t.Fatalf("node a deleted, %d nodes still cached, want 1: %v", cachedNodes(p), err)
	}
}

func cachedNodes(p *AnnotationGPUShare) int {
	p.cacheMu.RLock()
	defer p.cacheMu.RUnlock()
	return len(p.nodeCache)
}

// A deleted node's reported safe-side counts are dropped with it, so a
// node of the same name reports its own again.
func TestDRAForgetsReportsOfDeletedNodes(t *testing.T) {
	p := &DRAGPUShare{}
	p.reportedIssues.Store("a\x00claim default/x: y", true)
	p.reportedIssues.Store("ab\x00claim default/x: y", true)
	p.forgetNode("a")
	var left []string
	p.reportedIssues.Range(func(k, _ any) bool { left = append(left, k.(string)); return true })
	if len(left) != 1 || left[0] != "ab\x00claim default/x: y" {
		t.Errorf("reports left after node a was deleted: %q, want only node ab's", left)
	}
}

// TestOneProfilePerScheduler: a second profile of the same scheduler (the
// same informer factory) that enables the plugin is refused, since its
// reservations would be its own and two pods could land on one GPU; a
// plugin of another scheduler (another factory) starts.
func TestOneProfilePerScheduler(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	if _, err := New(ctx, nil, informerHandle{f: f}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(ctx, nil, informerHandle{f: f}); err == nil || !strings.Contains(err.Error(), "more than one profile") {
		t.Errorf("second profile: err %v, want a refusal naming more than one profile", err)
	}
	other := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	if _, err := New(ctx, nil, informerHandle{f: other}); err != nil {
		t.Errorf("another scheduler's profile: %v", err)
	}
}
