package gpushare

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/placement"
)

// The anti-affinity identity of a model is its namespace and name: an
// instance of team-b's resnet50 may join team-a's on the node's one GPU;
// one of team-a's own may not, nor one of team-b's when both declare
// hetsev.io/model-scope=cluster.
func TestModelIdentityIsScopedToTheNamespace(t *testing.T) {
	node := t4Node("a")
	node.Labels[gpuinventory.LabelGPUCount] = "1"
	inNamespace := func(p *v1.Pod, ns string, cluster bool) *v1.Pod {
		p.Namespace = ns
		if cluster {
			p.Annotations[v1alpha1.AnnotationModelScope] = v1alpha1.ModelScopeClusterValue
		}
		return p
	}
	for _, c := range []struct {
		name          string
		placedNS      string
		incomingNS    string
		cluster, fits bool
	}{
		{"another namespace", "team-a", "team-b", false, true},
		{"the same namespace", "team-a", "team-a", false, false},
		{"cluster scope", "team-a", "team-b", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			placed := inNamespace(gpuPod("r0", "a", "resnet50", "2Gi", "0"), c.placedNS, c.cluster)
			incoming := inNamespace(gpuPod("r1", "", "resnet50", "2Gi", ""), c.incomingNS, c.cluster)
			p := newAnnotationGPUShare(handle{snapshot: cache.NewSnapshot([]*v1.Pod{placed}, []*v1.Node{node}), client: fake.NewClientset(incoming)}, placement.Placer{})
			ctx := context.Background()
			state := framework.NewCycleState()
			if _, st := p.PreFilter(ctx, state, incoming, nil); !st.IsSuccess() {
				t.Fatalf("PreFilter: %v", st)
			}
			st := p.Filter(ctx, state, incoming, nodeInfo(node, placed))
			if st.IsSuccess() != c.fits {
				t.Errorf("Filter = %v, want fits %v", st, c.fits)
			}
		})
	}
}
