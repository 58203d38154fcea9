package kubectlhetsev

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	"github.com/hetsev/hetsev/internal/sim/dradriver"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/catalog"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/interference"
)

// newFake is a fake API client holding objs, with the field indexes the
// plugin's field selectors need (the API server serves them).
func newFake(funcs *interceptor.Funcs, objs ...client.Object) client.Client {
	b := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(objs...).
		WithIndex(&v1.Pod{}, nodeNameField, func(o client.Object) []string { return []string{o.(*v1.Pod).Spec.NodeName} }).
		WithIndex(&v1.Event{}, involvedNameField, func(o client.Object) []string { return []string{o.(*v1.Event).InvolvedObject.Name} })
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	return b.Build()
}

// runWith runs `kubectl hetsev args...` against c, in namespace default
// (what-if takes hetsev-evaluate's flags only).
func runWith(c client.Client, args ...string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	if args[0] != "what-if" {
		args = append(args, "-n", "default")
	}
	code = run(args, &out, &errOut, func() (client.Client, error) { return c, nil })
	return out.String(), errOut.String(), code
}

func t4Node(name string, gpus int) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		gpuinventory.LabelGPUProduct: "Tesla-T4", gpuinventory.LabelGPUCount: "2", gpuinventory.LabelGPUMemory: "15360",
	}}}
}

// placed is a pod hetsev-scheduler bound to node's GPU index (gpuIndex ""
// for none), with its placement annotations.
func placed(name, node, model, mem, busy, gpuIndex, inflation, neighbours string) *v1.Pod {
	a := map[string]string{v1alpha1.AnnotationModel: model, v1alpha1.AnnotationGPUMemory: mem}
	for k, v := range map[string]string{v1alpha1.AnnotationBusyShare: busy, v1alpha1.AnnotationGPUIndex: gpuIndex,
		v1alpha1.AnnotationPredictedInflation: inflation, v1alpha1.AnnotationGPUNeighbours: neighbours} {
		if v != "" {
			a[k] = v
		}
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid"), Annotations: a},
		Spec:       v1.PodSpec{SchedulerName: v1alpha1.SchedulerName, NodeName: node, Containers: []v1.Container{{Name: "server", Image: "x"}}},
		Status:     v1.PodStatus{Phase: v1.PodRunning},
	}
}

// annotationCluster: a T4 node with resnet50 and ssd on GPU 0, GPU 1
// free, and pods that hold no GPU (no hetsev annotations; Pending).
func annotationCluster() []client.Object {
	pending := placed("pending", "", "bert", "6Gi", "", "", "", "")
	pending.Status.Phase = v1.PodPending
	other := placed("web", "t4-0", "", "", "", "", "", "")
	other.Annotations = nil
	return []client.Object{
		t4Node("t4-0", 2),
		placed("r0", "t4-0", "resnet50", "2Gi", "0.3", "0", "1.00", ""),
		placed("s0", "t4-0", "ssd", "10Gi", "0.5", "0", "1.12", "default/r0 resnet50 0.3"),
		pending, other,
	}
}

// The table has the GPU's type, memory used of total, summed busy share,
// and one line per tenant with its model and inflations; a free GPU has
// "-" for its tenant.
func TestGPUsTable(t *testing.T) {
	out, errOut, code := runWith(newFake(nil, annotationCluster()...), "gpus")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var got [][]string
	for _, l := range lines[1:] {
		got = append(got, strings.Fields(l))
	}
	want := [][]string{
		{"t4-0", "0", "Tesla-T4", "12288/15360", "0.80", "default/r0", "resnet50", "0.30", "1.00"},
		{"default/s0", "ssd", "0.50", "1.12"},
		{"t4-0", "1", "Tesla-T4", "0/15360", "0.00", "-", "-", "-", "-", "-"},
	}
	if len(got) != len(want) {
		t.Fatalf("table has %d rows, want %d:\n%s", len(got), len(want), out)
	}
	for i, w := range want {
		if len(got[i]) < len(w) || strings.Join(got[i][:len(w)], " ") != strings.Join(w, " ") {
			t.Errorf("row %d is %q, want it to start with %q\n%s", i, got[i], w, out)
		}
	}
	// Both tenants now share the GPU: the model predicts inflation > 1.
	if now := got[0][len(got[0])-1]; now == "-" || now == "1.00" {
		t.Errorf("resnet50's inflation now is %s beside ssd, want > 1\n%s", now, out)
	}
}

// --interference-model (gpus, explain pod) predicts the inflation now
// with the model file it names, as hetsev-scheduler's
// interferenceModelFile would: a model whose context switches cost 20
// times the fitted one's predicts more inflation for the same tenants. A
// file that does not load is an error naming the flag.
func TestGPUsInterferenceModelFile(t *testing.T) {
	f := interference.FittedColocation().File()
	sw := *f.TimeSlicing.SwitchSeconds * 20
	f.TimeSlicing.SwitchSeconds = &sw
	data, err := yaml.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "slow-switch.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	now := func(args ...string) float64 {
		t.Helper()
		out, errOut, code := runWith(newFake(nil, annotationCluster()...), append([]string{"gpus", "-o", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("gpus %v: exit %d: %s", args, code, errOut)
		}
		var r GPUReport
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		return r.GPUs[0].Tenants[0].Inflation
	}
	fitted, slow := now(), now("--interference-model", path)
	if !(slow > fitted && fitted > 1) {
		t.Errorf("gpus: resnet50's inflation now: %.4f with the fitted model, %.4f with %s; want the file's higher", fitted, slow, path)
	}
	explained := func(args ...string) float64 {
		t.Helper()
		out, errOut, code := runWith(newFake(nil, annotationCluster()...), append([]string{"explain", "pod", "r0", "-o", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("explain pod %v: exit %d: %s", args, code, errOut)
		}
		var x PodExplanation
		if err := json.Unmarshal([]byte(out), &x); err != nil {
			t.Fatal(err)
		}
		if x.GPU == nil || len(x.GPU.Tenants) == 0 {
			t.Fatalf("explain pod r0: no GPU tenants in %s", out)
		}
		return x.GPU.Tenants[0].Inflation
	}
	if f, s := explained(), explained("--interference-model", path); f != fitted || s != slow {
		t.Errorf("explain pod: resnet50's inflation now %.4f and %.4f with %s; want gpus' %.4f and %.4f", f, s, path, fitted, slow)
	}
	for _, args := range [][]string{{"gpus"}, {"explain", "pod", "r0"}} {
		_, errOut, code := runWith(newFake(nil, annotationCluster()...), append(args, "--interference-model", filepath.Join(t.TempDir(), "missing.yaml"))...)
		if code == 0 || !strings.Contains(errOut, "--interference-model") {
			t.Errorf("%v, missing model file: exit %d, stderr %q; want an error naming --interference-model", args, code, errOut)
		}
	}
}

// Two namespaces' resnet50 on one GPU are two tenants: each one's
// inflation now is its own, beside the other's busy share (the one busy
// 0.2 beside 0.9 more inflated than the one busy 0.9 beside 0.2).
func TestGPUsTenantsByNamespace(t *testing.T) {
	a := placed("r0", "t4-0", "resnet50", "2Gi", "0.2", "0", "", "")
	b := placed("r0", "t4-0", "resnet50", "2Gi", "0.9", "0", "", "")
	b.Namespace, b.UID = "team-b", "team-b-r0-uid"
	r, err := GPUs(context.Background(), newFake(nil, t4Node("t4-0", 2), a, b), "", interference.FittedColocation())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.GPUs) != 2 || len(r.GPUs[0].Tenants) != 2 {
		t.Fatalf("report %+v, want both tenants on GPU 0", r)
	}
	ta, tb := r.GPUs[0].Tenants[0], r.GPUs[0].Tenants[1]
	if ta.Namespace != "default" || tb.Namespace != "team-b" || !(ta.Inflation > tb.Inflation && tb.Inflation > 1) {
		t.Errorf("tenants %s/%s inflation %.3f, %s/%s inflation %.3f; want default's > team-b's > 1",
			ta.Namespace, ta.Pod, ta.Inflation, tb.Namespace, tb.Pod, tb.Inflation)
	}
}

// -o json and -o yaml print the same report, which reads back.
func TestGPUsJSONAndYAML(t *testing.T) {
	c := newFake(nil, annotationCluster()...)
	for _, format := range []string{"json", "yaml"} {
		out, errOut, code := runWith(c, "gpus", "-o", format)
		if code != 0 {
			t.Fatalf("-o %s: exit %d: %s", format, code, errOut)
		}
		var r GPUReport
		var err error
		if format == "json" {
			err = json.Unmarshal([]byte(out), &r)
		} else {
			err = yaml.UnmarshalStrict([]byte(out), &r)
		}
		if err != nil {
			t.Fatalf("-o %s: %v\n%s", format, err, out)
		}
		if len(r.GPUs) != 2 || len(r.GPUs[0].Tenants) != 2 || r.GPUs[0].Tenants[1].Pod != "s0" || r.GPUs[0].Tenants[1].PlacedInflation != "1.12" || r.GPUs[0].MemoryUsedMiB != 12288 || len(r.GPUs[1].Tenants) != 0 {
			t.Errorf("-o %s: %+v, want r0 and s0 on GPU 0 (12288 MiB), GPU 1 free", format, r)
		}
	}
}

// In GPU mode dra a pod without hetsev.io/gpu-index is on the GPU its
// ResourceClaim is allocated on, with the claim's GPU memory.
func TestGPUsDRA(t *testing.T) {
	cat, err := catalog.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	t4, _ := cat.ByName("T4")
	slice := dradriver.Slice("dra-0", t4, 2)
	claim := &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "p-gpu", Namespace: "default"},
		Spec:       gpuinventory.GPUClaimSpec(4096, nil),
		Status: resourcev1.ResourceClaimStatus{
			Allocation: &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
				Request: v1alpha1.ClaimRequestName, Driver: v1alpha1.DRADriver, Pool: "dra-0", Device: "gpu-1",
				ConsumedCapacity: map[resourcev1.QualifiedName]resource.Quantity{v1alpha1.DRAMemoryCapacity: resource.MustParse("4Gi")},
			}}}},
			ReservedFor: []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "p", UID: "p-uid"}},
		},
	}
	pod := placed("p", "dra-0", "resnet50", "", "", "", "", "")
	delete(pod.Annotations, v1alpha1.AnnotationGPUMemory)
	tmpl := "gpu-tmpl"
	pod.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: v1alpha1.PodClaimName, ResourceClaimTemplateName: &tmpl}}
	claimName := claim.Name
	pod.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: v1alpha1.PodClaimName, ResourceClaimName: &claimName}}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dra-0"}}

	out, errOut, code := runWith(newFake(nil, node, slice, claim, pod), "gpus", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r GPUReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.GPUs) != 2 || len(r.GPUs[0].Tenants) != 0 || len(r.GPUs[1].Tenants) != 1 {
		t.Fatalf("GPUs %+v, want pod p on GPU 1 only\n%s", r.GPUs, out)
	}
	g := r.GPUs[1]
	if g.Mode != v1alpha1.GPUModeDRA || g.Index != 1 || g.Type != "Tesla-T4" || g.MemoryUsedMiB != 4096 || g.Tenants[0].Pod != "p" || g.Tenants[0].GPUMemoryMiB != 4096 {
		t.Errorf("GPU 1 is %+v, want dra Tesla-T4 with p holding 4096 MiB", g)
	}
}

// A missing object is a clear message and a non-zero exit.
func TestExplainMissingObject(t *testing.T) {
	c := newFake(nil)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"explain", "modelservice", "foo"}, "error: modelservice default/foo not found"},
		{[]string{"explain", "pod", "foo"}, "error: pod default/foo not found"},
	} {
		out, errOut, code := runWith(c, tc.args...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want non-zero and %q", tc.args, code, errOut, out, tc.want)
		}
	}
}

// Forbidden names the verb and resource and the installed ClusterRole to
// be bound to, with the command that binds it.
func TestForbidden(t *testing.T) {
	c := newFake(&interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			return apierrors.NewForbidden(schema.GroupResource{Group: v1alpha1.GroupName, Resource: "modelservices"}, key.Name, errors.New("no RBAC"))
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", errors.New("no RBAC"))
		},
	})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"explain", "modelservice", "foo"}, "may not get modelservices.hetsev.io"},
		{[]string{"gpus"}, "may not list nodes"},
	} {
		_, errOut, code := runWith(c, tc.args...)
		bind := "kubectl create clusterrolebinding hetsev-viewer-$USER --clusterrole=hetsev-viewer --user=$USER"
		if code == 0 || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "bind you ClusterRole hetsev-viewer, which hetsev installs") ||
			!strings.Contains(errOut, bind) || strings.Contains(errOut, "kubectl create clusterrole ") {
			t.Errorf("%v: exit %d, stderr %q; want non-zero, %q and ClusterRole hetsev-viewer to bind, not create", tc.args, code, errOut, tc.want)
		}
	}
}

// An unknown -o is refused, by every subcommand.
func TestUnknownOutputFormat(t *testing.T) {
	c := newFake(nil, annotationCluster()...)
	for _, args := range [][]string{{"gpus"}, {"explain", "pod", "r0"}, {"explain", "modelservice", "foo"}, {"what-if"}} {
		_, errOut, code := runWith(c, append(args, "-o", "xml")...)
		if code == 0 || !strings.Contains(errOut, `unknown output format "xml"`) {
			t.Errorf("%v -o xml: exit %d, stderr %q; want non-zero and unknown output format", args, code, errOut)
		}
	}
}

// A Pending pod is explained by the scheduler's FailedScheduling reasons,
// one per group of nodes, and its malformed annotations.
func TestExplainPendingPod(t *testing.T) {
	pod := placed("stuck", "", "resnet50", "lots", "", "", "", "")
	pod.Status.Phase = v1.PodPending
	msg := "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 every GPU hosts resnet50 (anti-affinity). no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
	pod.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: "Unschedulable", Message: msg}}
	ev := &v1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "stuck.1", Namespace: "default"},
		InvolvedObject:      v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "stuck", UID: pod.UID},
		Type:                v1.EventTypeWarning,
		Reason:              "FailedScheduling",
		Message:             msg,
		ReportingController: v1alpha1.SchedulerName,
		EventTime:           metav1.NewMicroTime(time.Unix(100, 0)),
	}
	out, errOut, code := runWith(newFake(nil, pod, ev), "explain", "pod", "stuck")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"Why Pending: PodScheduled=False Unschedulable",
		"\n  1 node(s) didn't match Pod's node affinity/selector\n  2 every GPU hosts resnet50 (anti-affinity)\nEvents",
		"Malformed:  annotation " + v1alpha1.AnnotationGPUMemory + `="lots"`,
		"Warning  FailedScheduling  hetsev-scheduler: 0/3",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explanation lacks %q:\n%s", want, out)
		}
	}
}

// A placed pod is explained by its node, GPU, the inflation and
// neighbours recorded at placement, and the GPU's tenants now.
func TestExplainPlacedPod(t *testing.T) {
	out, errOut, code := runWith(newFake(nil, annotationCluster()...), "explain", "pod", "s0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"Node:       t4-0\n",
		"GPU:        0 (Tesla-T4, GPU mode annotations): 12288/15360 MiB",
		"Predicted inflation at placement: 1.12\n",
		"Neighbours at placement:          default/r0 resnet50 0.3\n",
		"  default/r0  resnet50  2048 MiB  busy share 0.30  inflation ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explanation lacks %q:\n%s", want, out)
		}
	}
}

// A ModelService is explained by its last decision, replicas per GPU
// type, arrival rate, saturation, conditions and events.
func TestExplainModelService(t *testing.T) {
	ms := &v1alpha1.ModelService{
		ObjectMeta: metav1.ObjectMeta{Name: "resnet", Namespace: "default", UID: "ms-uid"},
		Spec:       v1alpha1.ModelServiceSpec{SLO: v1alpha1.SLO{ResponseTimeMs: 400, ServiceLevel: 0.999}},
		Status: v1alpha1.ModelServiceStatus{
			Replicas: map[string]int32{"T4": 3, "V100-32GB": 1}, TotalReplicas: 4, CostUSDPerHour: "5.4795",
			ArrivalRate: "412.5", Saturation: "0.91",
			Attainment: "0.9912", LatencyPercentile: "p99.9", LatencyAtServiceLevelMs: "388.0",
			TrafficWeights: map[string]int32{"T4": 60, "V100-32GB": 40},
			LastDecision: &v1alpha1.Decision{Time: metav1.NewTime(time.Unix(60, 0)), Action: "ScaleOut",
				Delta: map[string]int32{"T4": 2}, Reason: "saturation 0.91 above 0.8",
				Objective: "0.63", Alternative: &v1alpha1.DecisionAlternative{Delta: map[string]int32{"V100-32GB": 1}, Objective: "3.90", Why: "V100-32GB costs 3.8x per request"},
				Types: []v1alpha1.TypeDecision{{GPUType: "T4", Replicas: 3, CapacityRPS: "330.00", FreeSlots: 0, CostRatio: "1.00"},
					{GPUType: "V100-32GB", Replicas: 1, CapacityRPS: "250.00", FreeSlots: 6, CostRatio: "3.80"}}},
			Decisions:  []v1alpha1.Decision{{Time: metav1.NewTime(time.Unix(0, 0)), Action: "ScaleIn", Delta: map[string]int32{"V100-32GB": -1}, Reason: "saturation 0.40"}},
			Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Serving", Message: "4 replicas"}},
		},
	}
	ev := &v1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "resnet.1", Namespace: "default"},
		InvolvedObject: v1.ObjectReference{Kind: "ModelService", Namespace: "default", Name: "resnet", UID: "ms-uid"},
		Type:           v1.EventTypeNormal, Reason: "ScaleOut", Message: "saturation 0.91 above 0.8",
		Source: v1.EventSource{Component: v1alpha1.ScalerName}, LastTimestamp: metav1.NewTime(time.Unix(10, 0)),
	}
	c := newFake(nil, ms, ev)
	out, errOut, code := runWith(c, "explain", "modelservice", "resnet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"arrival rate:  412.5 requests/s", "saturation:    0.91",
		"SLO:           0.999 of requests within 400 ms", "attainment:    0.9912", "p99.9 latency: 388.0 ms",
		"T4                   3 replicas, traffic 60%", "cost:          5.4795 USD/h",
		"action:  ScaleOut", "delta:   T4 +2", "reason:  saturation 0.91 above 0.8",
		"Ready=True  Serving: 4 replicas",
		"objective: 0.63 USD/h", "rejected:  V100-32GB +1, objective 3.90 USD/h: V100-32GB costs 3.8x per request",
		"  T4                          3         330.00          0      1.00x",
		"  V100-32GB                   1         250.00          6      3.80x",
		"1970-01-01T00:00:00Z  ScaleIn        V100-32GB -1         saturation 0.40",
		"Normal  ScaleOut  hetsev-scaler: saturation 0.91 above 0.8",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explanation lacks %q:\n%s", want, out)
		}
	}
	out, _, code = runWith(c, "explain", "modelservice", "resnet", "-o", "json")
	var x ModelServiceExplanation
	if err := json.Unmarshal([]byte(out), &x); code != 0 || err != nil || x.Status.LastDecision == nil || x.Status.LastDecision.Delta["T4"] != 2 || x.Status.Replicas["V100-32GB"] != 1 {
		t.Errorf("-o json: exit %d, %v, %+v", code, err, x)
	}
}

// kube-scheduler's FitError is split into its groups of nodes, without
// the PostFilter plugins' messages that follow it.
func TestSplitReasons(t *testing.T) {
	for msg, want := range map[string][]string{
		"0/4 nodes are available: 1 a, b. c, 3 d. preemption: 0/4 nodes are available: 4 e.":                      {"1 a, b. c", "3 d"},
		"0/1 nodes are available: 1 x (anti-affinity). no new claims to deallocate, preemption: 0/1 nodes are av": {"1 x (anti-affinity)"},
		"0/1 nodes are available: annotation y is bad.":                                                           {"annotation y is bad"},
		"binding rejected: boom": {"binding rejected: boom"},
	} {
		if got := splitReasons(msg); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("splitReasons(%q) = %q, want %q", msg, got, want)
		}
	}
}

// shippedDeviceClass is hetsev's DeviceClass as manifests/dra ships it.
func shippedDeviceClass(t *testing.T) *resourcev1.DeviceClass {
	t.Helper()
	class, err := dradriver.ShippedDeviceClass(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return class
}

// In GPU mode dra the GPUs shown are those hetsev-scheduler may allocate:
// a GPU its driver taints NoSchedule (unhealthy) and a device hetsev's
// DeviceClass does not select are left out, with a note saying why.
func TestGPUsDRAShowsOnlyWhatTheSchedulerMayAllocate(t *testing.T) {
	cat, err := catalog.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	t4, _ := cat.ByName("T4")
	slice := dradriver.Slice("dra-0", t4, 3)
	slice.Spec.Devices[1].Taints = []resourcev1.DeviceTaint{{Key: "gpu.nvidia.com/unhealthy", Value: "xid-79", Effect: resourcev1.DeviceTaintEffectNoSchedule}}
	class := shippedDeviceClass(t)
	class.Spec.Selectors = append(class.Spec.Selectors, resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: `device.attributes["gpu.nvidia.com"].uuid != "` + dradriver.UUID("dra-0", 2) + `"`}})
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dra-0"}}
	out, errOut, code := runWith(newFake(nil, node, slice, class), "gpus", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r GPUReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.GPUs) != 1 || r.GPUs[0].Index != 0 {
		t.Errorf("GPUs %+v, want GPU 0 only (1 tainted, 2 not selected)", r.GPUs)
	}
	notes := strings.Join(r.Notes, "\n")
	for _, want := range []string{"taint gpu.nvidia.com/unhealthy=xid-79:NoSchedule", "not selected by DeviceClass " + v1alpha1.DeviceClassName} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes %q do not say %q", notes, want)
		}
	}
}
