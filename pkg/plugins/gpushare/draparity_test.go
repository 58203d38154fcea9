package gpushare

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/dra"
)

// TestDRARefusesWhatItCannotAllocate: where upstream's DynamicResources
// would act and hetsev's profile (which disables it) cannot, PreFilter
// says so and the pod stays Pending with the reason: a request of an
// extended resource a DeviceClass backs with DRA devices (explicit name,
// or the implicit deviceclass.resource.kubernetes.io/<class>), and a GPU
// entry for which the ResourceClaim controller generated no claim.
func TestDRARefusesWhatItCannotAllocate(t *testing.T) {
	classes := deviceClasses()
	backed := classes[1].(*resourceapi.DeviceClass).DeepCopy()
	backed.Name = "gpu-er"
	backed.Spec.ExtendedResourceName = ptr.To("example.com/gpu")
	tb := newDRATestbed(t, append(classes, backed, kubeNode("a"), gpuSlice("a", "16Gi"), gpuClaim("c", "2Gi"))...)

	withLimit := func(name v1.ResourceName) *v1.Pod {
		p := draPod("er-"+strings.ReplaceAll(string(name), "/", "-"), "resnet50", "c")
		p.Spec.Containers = []v1.Container{{Name: "server", Resources: v1.ResourceRequirements{Limits: v1.ResourceList{name: resource.MustParse("1")}}}}
		return p
	}
	unneeded := draPod("unneeded", "resnet50", "c")
	unneeded.Spec.ResourceClaims[0].ResourceClaimName = nil
	unneeded.Spec.ResourceClaims[0].ResourceClaimTemplateName = ptr.To("t")
	unneeded.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: v1alpha1.PodClaimName}}
	for _, c := range []struct {
		pod  *v1.Pod
		want string
	}{
		{withLimit("example.com/gpu"), "requests example.com/gpu, an extended resource DeviceClass gpu-er backs"},
		{withLimit(v1.ResourceName(resourceapi.ResourceDeviceClassPrefix + v1alpha1.DeviceClassName)), "DeviceClass " + v1alpha1.DeviceClassName + " backs"},
		{unneeded, "generated no claim for spec.resourceClaims entry \"gpu\""},
	} {
		_, st := tb.plugin.PreFilter(tb.ctx, framework.NewCycleState(), c.pod, nil)
		if st.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(st.Message(), c.want) {
			t.Errorf("%s: PreFilter %v, want UnschedulableAndUnresolvable saying %q", c.pod.Name, st, c.want)
		}
	}
	// An ordinary extended resource is not refused here.
	ok := withLimit("example.com/fpga")
	if _, st := tb.plugin.PreFilter(tb.ctx, framework.NewCycleState(), ok, nil); !st.IsSuccess() {
		t.Errorf("a pod with an extended resource no DeviceClass backs: %v", st)
	}
}

// TestDRASkipsDevicesWithBindingConditions: a device that needs binding
// conditions (the driver prepares it before the pod may bind) is not
// offered: hetsev-scheduler binds without waiting for them.
func TestDRASkipsDevicesWithBindingConditions(t *testing.T) {
	// Worst fit alone would pick gpu-1, the emptier.
	s := gpuSlice("a", "8Gi", "16Gi")
	s.Spec.Devices[1].BindingConditions = []string{"example.com/attached"}
	s.Spec.Devices[1].BindingFailureConditions = []string{"example.com/failed"}
	tb := newDRATestbed(t, append(deviceClasses(), []runtime.Object{kubeNode("a"), s, gpuClaim("c", "2Gi")}...)...)
	tb.schedule(t, draPod("p", "resnet50", "c"), "a")
	if got := allocatedDevice(tb.storedClaim(t, "c"), v1alpha1.DRADriver); got != "a/gpu-0" {
		t.Errorf("allocated %q, want a/gpu-0 (gpu-1 needs binding conditions)", got)
	}
	nd := dra.Inventory([]*resourceapi.ResourceSlice{s}, v1alpha1.DRADriver)["a"]
	if len(nd.Unusable) != 1 || !strings.Contains(nd.Unusable[0].Reason, "binding conditions [example.com/attached]") {
		t.Errorf("unusable %+v, want gpu-1 for its binding conditions", nd.Unusable)
	}
}
