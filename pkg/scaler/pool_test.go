package scaler

import (
	"k8s.io/apimachinery/pkg/types"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// TestGPUPoolFreeSlotsAndTemplate: with hetsev-scheduler's gpuPool on (from
// --scheduler-config), the free slots count only the pool node (labelled
// and tainted hetsev.io/gpu-pool=true, 2 GPUs), not the 4 GPUs of the node
// outside the pool, and the Deployment's pods tolerate the pool taint and
// select the pool label. With gpuPool off the pods neither tolerate nor
// select it, so the tainted pool node counts none and the other node 4.
func TestGPUPoolFreeSlotsAndTemplate(t *testing.T) {
	pool, outside := node("pool", 2, 16384, "64"), node("outside", 4, 16384, "64")
	pool.Labels[v1alpha1.LabelGPUPool] = v1alpha1.GPUPoolValue
	pool.Spec.Taints = []v1.Taint{{Key: v1alpha1.TaintGPUPool, Value: v1alpha1.GPUPoolValue, Effect: v1.TaintEffectNoSchedule}}
	nodes := []*v1.Node{pool, outside}
	d := gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048}
	for _, c := range []struct {
		name, args string
		wantSlots  int
		wantPool   bool
	}{
		{name: "gpuPool on", args: "          gpuPool: true\n", wantSlots: 2, wantPool: true},
		{name: "default", args: "          fit: WorstFit\n", wantSlots: 4, wantPool: false},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := NewOptions()
			o.SchedulerConfig = schedulerConfig(t, c.args)
			r := reconcilerWithArgs(t, o)
			svc, err := validate(resnet(), defaultCatalog(t), DefaultDefaults)
			if err != nil {
				t.Fatal(err)
			}
			svc.pool = r.gpuPool()
			if got := capacityOf(nodes, nil, types.NamespacedName{Namespace: svc.obj.Namespace, Name: svc.obj.Name}, "Tesla-T4", d, r.admission(), r.admission(), svc.tolerations(), svc.pool, resource.MustParse("2"), resource.Quantity{}, nil).slots; got != c.wantSlots {
				t.Errorf("%d free slots, want %d", got, c.wantSlots)
			}
			ps := desiredDeployment(svc, svc.types[0], 1).Spec.Template.Spec
			if got := gpuinventory.ToleratesGPUPool(ps.Tolerations); got != c.wantPool {
				t.Errorf("pod template tolerates the pool taint: %v, want %v (tolerations %+v)", got, c.wantPool, ps.Tolerations)
			}
			if got := ps.NodeSelector[v1alpha1.LabelGPUPool] == v1alpha1.GPUPoolValue; got != c.wantPool {
				t.Errorf("pod template selects the pool label: %v, want %v (nodeSelector %v)", got, c.wantPool, ps.NodeSelector)
			}
		})
	}
}
