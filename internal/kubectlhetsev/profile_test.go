package kubectlhetsev

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hetsev/hetsev/internal/sim/e2emodelserver"
	"github.com/hetsev/hetsev/internal/sim/exporters"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// profiledServer runs the e2e model server on 127.0.0.1, ready, 10 ms a
// request (100 requests/s whatever the batch, as it serves one at a time).
func profiledServer(t *testing.T) string {
	t.Helper()
	url, stop, err := e2emodelserver.StartLocal(e2emodelserver.Config{Service: 10 * time.Millisecond, Queue: 4096})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return url
}

// TestProfileWritesTheEntry profiles the e2e model server as it would a
// pod on a V100 (GPU 1 of node-v in dcgm-exporter, Ready 42 s after its
// creation), then again as the T4 entry the ModelService has: the new
// entry carries every measured field, and the existing one keeps what
// the profile does not measure (price, overrides).
func TestProfileWritesTheEntry(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ms := &v1alpha1.ModelService{
		ObjectMeta: metav1.ObjectMeta{Name: "resnet50", Namespace: "default"},
		Spec: v1alpha1.ModelServiceSpec{Model: "resnet50", BatchSize: 4,
			SLO: v1alpha1.SLO{ResponseTimeMs: 400, ServiceLevel: 0.98},
			Profiles: []v1alpha1.GPUProfile{{GPUType: "T4", ThroughputRPS: 1, LatencyMs: 1, GPUMemory: "1Gi",
				PriceUSDPerHour: 0.5, Overrides: &v1alpha1.TemplateOverrides{Image: "triton:t4"},
				SmallBatches: []v1alpha1.BatchPoint{{BatchSize: 1, ThroughputRPS: 1, LatencyMs: 1}}}}},
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "resnet50-v100-0", Namespace: "default", UID: "pod-uid",
			CreationTimestamp: metav1.NewTime(created),
			Annotations:       map[string]string{v1alpha1.AnnotationGPUIndex: "1"}},
		Spec: v1.PodSpec{NodeName: "node-v"},
		Status: v1.PodStatus{
			Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue,
				LastTransitionTime: metav1.NewTime(created.Add(42 * time.Second))}},
			ContainerStatuses: []v1.ContainerStatus{{Name: "server", Ready: true}},
		},
	}
	pulled := &v1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "resnet50-v100-0.1", Namespace: "default"},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: pod.Name, UID: pod.UID},
		Type:           v1.EventTypeNormal, Reason: "Pulled", Message: `Container image "triton:v100" already present on machine`,
		LastTimestamp: metav1.NewTime(created.Add(3 * time.Second)),
	}
	dcgm := exporters.NewDCGM("node-v", nil)
	dcgm.SetGPU(exporters.GPUSample{Index: 0, UUID: "GPU-0", ModelName: "Tesla V100", FBUsedMiB: 100})
	dcgm.SetGPU(exporters.GPUSample{Index: 1, UUID: "GPU-1", ModelName: "Tesla V100", FBUsedMiB: 2345})
	dcgmSrv := httptest.NewServer(exporters.Handler(dcgm))
	defer dcgmSrv.Close()
	url := profiledServer(t)
	c := newFake(nil, ms, pod, pulled)

	args := []string{"profile", "resnet50", "--gpu-type", "V100", "--url", url, "--path", "/infer",
		"--ready-path", "/healthz/ready", "--pod", pod.Name, "--dcgm-url", dcgmSrv.URL}
	// Without --write it prints the entry and writes nothing.
	out, errOut, code := runWith(c, append(args, "--step-duration", "1s", "--latency-bursts", "1", "--max-steps", "1")...)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	t.Log(out)
	for _, want := range []string{"gpuType: V100", "gpuMemory: 2345Mi", "launchSeconds: 42", "not written", "GPU memory: 2345 MiB", "launch: 42.0 s"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if got := getMS(t, c); len(got.Spec.Profiles) != 1 {
		t.Fatalf("without --write the ModelService changed: %+v", got.Spec.Profiles)
	}

	if out, errOut, code = runWith(c, append(args, "--batch-sizes", "2,4", "--step-duration", "1500ms", "--latency-bursts", "3", "--write")...); code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	got := getMS(t, c)
	if len(got.Spec.Profiles) != 2 || got.Spec.Profiles[1].GPUType != "V100" {
		t.Fatalf("profiles %+v: want T4 and a new V100", got.Spec.Profiles)
	}
	v := got.Spec.Profiles[1]
	if v.GPUMemory != "2345Mi" || v.LaunchSeconds != 42 {
		t.Errorf("V100 gpuMemory %q launchSeconds %v: want 2345Mi (GPU 1's DCGM_FI_DEV_FB_USED) and 42 (creation to Ready)", v.GPUMemory, v.LaunchSeconds)
	}
	// One request at a time for 10 ms: 100 requests/s at any batch, and a
	// batch of b takes b*10 ms.
	if v.ThroughputRPS < 70 || v.ThroughputRPS > 110 || v.LatencyMs < 40 || v.LatencyMs > 110 {
		t.Errorf("V100 batch 4: %v requests/s, %v ms: want about 100 and 40", v.ThroughputRPS, v.LatencyMs)
	}
	if len(v.SmallBatches) != 1 || v.SmallBatches[0].BatchSize != 2 || v.SmallBatches[0].LatencyMs < 20 || v.SmallBatches[0].LatencyMs > 60 ||
		v.SmallBatches[0].ThroughputRPS < 60 || v.SmallBatches[0].ThroughputRPS > 110 {
		t.Errorf("V100 smallBatches %+v: want batch 2 at about 100 requests/s and 20 ms", v.SmallBatches)
	}

	// The existing T4 entry: measured fields replaced, the rest kept,
	// smallBatches merged by batch size.
	if out, errOut, code = runWith(c, "profile", "resnet50", "--gpu-type", "T4", "--url", url, "--batch-sizes", "2,4",
		"--step-duration", "1s", "--latency-bursts", "2", "--max-steps", "1", "--write"); code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	if !strings.Contains(out, "never saturated") {
		t.Errorf("one step that cannot saturate, no note:\n%s", out)
	}
	t4 := getMS(t, c).Spec.Profiles[0]
	if t4.GPUType != "T4" || t4.PriceUSDPerHour != 0.5 || t4.Overrides == nil || t4.Overrides.Image != "triton:t4" || t4.GPUMemory != "1Gi" {
		t.Errorf("T4 entry lost what the profile does not measure: %+v", t4)
	}
	if t4.ThroughputRPS == 1 || t4.LatencyMs == 1 || len(t4.SmallBatches) != 2 || t4.SmallBatches[0].BatchSize != 1 ||
		t4.SmallBatches[0].LatencyMs != 1 || t4.SmallBatches[1].BatchSize != 2 {
		t.Errorf("T4 entry %+v: want batch 4 measured, smallBatches 1 (kept) and 2 (measured)", t4)
	}
}

func getMS(t *testing.T, c client.Client) *v1alpha1.ModelService {
	t.Helper()
	var ms v1alpha1.ModelService
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "resnet50"}, &ms); err != nil {
		t.Fatal(err)
	}
	return &ms
}

// A new entry needs what only a measurement of spec.batchSize and
// dcgm-exporter give; the command says so before sending any load, and a
// restarted or pulling pod's launch time is not taken for O_i.
func TestProfileRefusesWhatItCannotMeasure(t *testing.T) {
	ms := &v1alpha1.ModelService{ObjectMeta: metav1.ObjectMeta{Name: "resnet50", Namespace: "default"},
		Spec: v1alpha1.ModelServiceSpec{Model: "resnet50", BatchSize: 4,
			Profiles: []v1alpha1.GPUProfile{{GPUType: "T4", ThroughputRPS: 1, LatencyMs: 1, GPUMemory: "1Gi"}}}}
	c := newFake(nil, ms)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--gpu-type", "V100", "--url", "http://127.0.0.1:1"}, "a new one needs batch size 4 (spec.batchSize) among --batch-sizes and GPU memory (--dcgm-url)"},
		{[]string{"--gpu-type", "T4", "--url", "http://127.0.0.1:1", "--batch-sizes", "8"}, "above spec.batchSize 4"},
		{[]string{"--gpu-type", "T4"}, "needs --gpu-type and --url"},
		{[]string{"--gpu-type", "T4", "--url", "http://127.0.0.1:1", "--protocol", "kserve-v2"}, "--request-file"},
		{[]string{"--gpu-type", "T4", "--url", "http://127.0.0.1:1", "--pod", "nope"}, "pod default/nope not found"},
	} {
		_, errOut, code := runWith(c, append([]string{"profile", "resnet50"}, tc.args...)...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, %q; want an error containing %q", tc.args, code, errOut, tc.want)
		}
	}

	created := time.Unix(1000, 0)
	for _, tc := range []struct {
		name   string
		status v1.PodStatus
		events []client.Object
		want   string
	}{
		{"restarted", v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(created.Add(time.Hour))}},
			ContainerStatuses: []v1.ContainerStatus{{RestartCount: 2}}}, nil, "restarted 2 times: launch time not measured"},
		{"not ready", v1.PodStatus{}, nil, "is not Ready: launch time not measured"},
		{"pulled", v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(created.Add(time.Minute))}}},
			[]client.Object{&v1.Event{ObjectMeta: metav1.ObjectMeta{Name: "p.1", Namespace: "default"},
				InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p"}, Reason: "Pulled",
				Message: `Successfully pulled image "triton" in 41s`}}, "the launch time includes the pull"},
	} {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", CreationTimestamp: metav1.NewTime(created)}, Status: tc.status}
		res := &ProfileResult{}
		if err := launchTime(context.Background(), newFake(nil, append(tc.events, pod)...), pod, res); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(res.Notes, "\n"), tc.want) {
			t.Errorf("%s: notes %q, want %q", tc.name, res.Notes, tc.want)
		}
		if tc.name != "pulled" && res.LaunchSeconds != 0 {
			t.Errorf("%s: launch %v s taken as O_i", tc.name, res.LaunchSeconds)
		}
	}
}
