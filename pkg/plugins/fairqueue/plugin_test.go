package fairqueue

import (
	"context"
	"testing"
	"time"

	"github.com/hetsev/hetsev/pkg/apis/config"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// informerHandle is the part of fwk.Handle New uses.
type informerHandle struct {
	fwk.Handle
	f informers.SharedInformerFactory
}

func (h informerHandle) SharedInformerFactory() informers.SharedInformerFactory { return h.f }

// TestFairQueueForgetsDeletedPods: a pod deleted while the scheduler's heap
// still holds it is forgotten by the plugin's pod handler; a comparison
// that reaches the pod after that (the scheduler drops it from its queue in
// its own handler, which may run later) must not tag it again, or its class
// keeps the pod's weight for good.
func TestFairQueueForgetsDeletedPods(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gone, kept := pod("gone", "m", "1Gi"), pod("kept", "m", "1Gi")
	client := fake.NewClientset(gone, kept)
	f := informers.NewSharedInformerFactory(client, 0)
	// Arguments of this test only: New shares one queue per arguments.
	pl, err := New(ctx, &config.HetsevFairQueueArgs{K: 2, Beta: 9999}, informerHandle{f: f})
	if err != nil {
		t.Fatal(err)
	}
	fq := pl.(*FairQueue)
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	// A synced cache only proves the list: the fake client drops events
	// that happen before the informer's watch opens, so wait until a pod
	// created now shows up through that watch.
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod("watch-open", "other", "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lister := f.Core().V1().Pods().Lister()
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, err := lister.Pods("default").Get("watch-open")
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the pod informer's watch never delivered a created pod: %v", err)
	}

	queued := func(p *v1.Pod) fwk.QueuedPodInfo {
		pi, err := framework.NewPodInfo(p)
		if err != nil {
			t.Fatal(err)
		}
		return &framework.QueuedPodInfo{PodInfo: pi, Timestamp: time.Unix(1_700_000_000, 0)}
	}
	a, b := queued(gone), queued(kept)
	fq.Less(a, b) // both queued: tagged
	if n := pendingPods(fq.q); n != 2 {
		t.Fatalf("%d pods counted after both were queued, want 2", n)
	}

	if err := client.CoreV1().Pods("default").Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The plugin's handler has forgotten the pod ...
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return pendingPods(fq.q) == 1, nil
	}); err != nil {
		t.Fatalf("the deleted pod is still counted: %v", err)
	}
	// ... and the scheduler, not yet done with the delete, compares it once more.
	fq.Less(b, a)
	fq.Less(a, b)
	if n := pendingPods(fq.q); n != 1 {
		t.Errorf("%d pods counted after the deleted one was compared again, want 1 (the deleted pod was tagged again)", n)
	}
	fq.q.mu.Lock()
	_, tagged := fq.q.pending[gone.UID]
	var classPending int
	for _, c := range fq.q.classes {
		classPending += c.pending
	}
	fq.q.mu.Unlock()
	if tagged || classPending != 1 {
		t.Errorf("deleted pod tagged %v, classes count %d pending pods, want untagged and 1", tagged, classPending)
	}
}

func pendingPods(q *queue) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending)
}
