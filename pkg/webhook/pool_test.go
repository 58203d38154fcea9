package webhook

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// onPool is whether p tolerates the pool taint and selects the pool label.
func onPool(p *v1.Pod) (tolerates, selects bool) {
	return gpuinventory.ToleratesGPUPool(p.Spec.Tolerations), p.Spec.NodeSelector[v1alpha1.LabelGPUPool] == v1alpha1.GPUPoolValue
}

// TestGPUPoolOptedInPodsTolerateThePoolTaint: with gpuPool on, a pod the
// webhook opts in, in either GPU mode, tolerates the pool taint and selects
// the pool label, keeping its own tolerations and node selector; the patched
// pod, reviewed again (reinvocation), gets no patch. Pods the webhook leaves
// alone, and every pod with gpuPool off, get neither.
func TestGPUPoolOptedInPodsTolerateThePoolTaint(t *testing.T) {
	pool := PodMutator{RuntimeClassName: gpuinventory.DefaultRuntimeClassName, GPUPool: true}
	_, got := reviewBy(t, pool, pod(true, "", nil), false)
	if tol, sel := onPool(got); !tol || !sel {
		t.Errorf("opted-in pod: tolerates the pool taint %v, selects the pool label %v; want both (tolerations %+v, nodeSelector %v)", tol, sel, got.Spec.Tolerations, got.Spec.NodeSelector)
	}
	if resp, _ := reviewBy(t, pool, got, false); resp.Patch != nil {
		t.Errorf("reinvocation on the patched pod: patch %s, want none", resp.Patch)
	}

	own := pod(true, DefaultSchedulerName, nil)
	own.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpExists}}
	own.Spec.NodeSelector = map[string]string{"zone": "a"}
	_, got = reviewBy(t, pool, own, false)
	if tol, sel := onPool(got); !tol || !sel || len(got.Spec.Tolerations) != 2 || got.Spec.NodeSelector["zone"] != "a" {
		t.Errorf("pod with its own tolerations and node selector: tolerations %+v, nodeSelector %v; want both kept and the pool's added", got.Spec.Tolerations, got.Spec.NodeSelector)
	}

	dra := PodMutator{GPUMode: v1alpha1.GPUModeDRA, Templates: ClaimTemplates{Client: fake.NewClientset()}, GPUPool: true}
	_, got = reviewBy(t, dra, draPod("1Gi"), false)
	if tol, sel := onPool(got); !tol || !sel {
		t.Errorf("DRA mode: tolerates the pool taint %v, selects the pool label %v; want both", tol, sel)
	}

	for name, c := range map[string]struct {
		m PodMutator
		p *v1.Pod
	}{
		"not annotated":          {pool, pod(false, "", nil)},
		"names another schedule": {pool, pod(true, "volcano", nil)},
		"gpuPool off":            {PodMutator{RuntimeClassName: gpuinventory.DefaultRuntimeClassName}, pod(true, "", nil)},
	} {
		_, got := reviewBy(t, c.m, c.p, false)
		if tol, sel := onPool(got); tol || sel {
			t.Errorf("%s: tolerates the pool taint %v, selects the pool label %v; want neither", name, tol, sel)
		}
	}
}
