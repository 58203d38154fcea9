package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/internal/kubectlhetsev"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// TestKubectlHetsev runs bin/kubectl-hetsev against hetsev-scheduler
// placing pods on one node of four T4 GPUs: `gpus` shows every placed pod
// on the GPU its hetsev.io/gpu-index names; `explain pod` names the
// scheduler's reason for a fifth resnet50 instance (anti-affinity) and
// for a malformed hetsev.io/gpu-memory; `explain modelservice` of a
// missing object and any command of a user without RBAC exit non-zero
// with a message that names ClusterRole hetsev-viewer; bound to it, the
// user runs every command; users bound to the built-in edit and view in a
// namespace create and read its ModelServices.
func TestKubectlHetsev(t *testing.T) {
	plugin := filepath.Join(cluster.BinDir(), "kubectl-hetsev")
	if _, err := os.Stat(plugin); err != nil {
		t.Fatalf("%v (run `make build` first)", err)
	}
	cp, ctx := controlPlane(t)
	t4, err := cluster.T4Nodes(1)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := cluster.CreateNodes(ctx, cp.Client, []cluster.NodeGroup{t4})
	if err != nil {
		t.Fatal(err)
	}
	kwok, err := cluster.StartKwok(ctx, cp, cluster.BinDir()+"/kwok")
	if err != nil {
		t.Fatalf("kwok: %v", err)
	}
	stopOnCleanup(t, kwok)
	if err := cluster.InstallCRDs(ctx, cp); err != nil {
		t.Fatal(err)
	}
	sched, err := cluster.StartScheduler(ctx, cp)
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, sched)
	c := cp.Client

	// Five resnet50 instances on four GPUs: anti-affinity leaves one
	// Pending. An SSD instance shares a GPU with one of them.
	for i := range 5 {
		modelPod(fmt.Sprintf("resnet50-%d", i), "resnet50", "2Gi").on("Tesla-T4").create(ctx, t, c)
	}
	modelPod("ssd-0", "ssd-resnet50", "10Gi").on("Tesla-T4").create(ctx, t, c)
	modelPod("bad-quantity", "resnet50", "lots").on("Tesla-T4").create(ctx, t, c)
	waitRunning(ctx, t, c, "app=resnet50", 4)
	waitRunning(ctx, t, c, "app=ssd-resnet50", 1)
	byGPU := checkPlacements(ctx, t, c)

	// gpus: each placed pod on the GPU its annotation names, and no other.
	out, errOut, code := runPlugin(ctx, cp.Kubeconfig, plugin, "gpus", "-o", "json")
	if code != 0 {
		t.Fatalf("gpus: exit %d: %s", code, errOut)
	}
	var r kubectlhetsev.GPUReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("gpus -o json: %v\n%s", err, out)
	}
	got := map[string]gpuKey{}
	for _, g := range r.GPUs {
		if g.Node == nodes[0] && (g.Type != "Tesla-T4" || g.MemoryTotalMiB != catalogT4(t).MemoryMiB) {
			t.Errorf("gpus: %s GPU %d is %s of %d MiB, want Tesla-T4 of %d MiB", g.Node, g.Index, g.Type, g.MemoryTotalMiB, catalogT4(t).MemoryMiB)
		}
		for _, tn := range g.Tenants {
			got[tn.Pod] = gpuKey{g.Node, g.Index}
		}
	}
	placed := 0
	for k, pods := range byGPU {
		for _, p := range pods {
			placed++
			if got[p.Name] != k {
				t.Errorf("gpus shows %s on %v, its %s says %v", p.Name, got[p.Name], v1alpha1.AnnotationGPUIndex, k)
			}
		}
	}
	if placed != 5 || len(got) != placed {
		t.Errorf("gpus shows %d tenants (%v), the scheduler placed %d pods (want 5)", len(got), got, placed)
	}
	// The table, through kubectl's plugin mechanism (kubectl-hetsev on PATH).
	kubectl := exec.CommandContext(ctx, filepath.Join(cluster.BinDir(), "kubectl"), "hetsev", "gpus", "--occupied", "--kubeconfig", cp.Kubeconfig)
	kubectl.Env = append(os.Environ(), "PATH="+cluster.BinDir()+string(os.PathListSeparator)+os.Getenv("PATH"))
	table, err := kubectl.CombinedOutput()
	if err != nil || !strings.Contains(string(table), "default/ssd-0") || !strings.Contains(string(table), "INFLATION(PLACED)") {
		t.Errorf("kubectl hetsev gpus: %v\n%s", err, table)
	}

	// explain pod: the Pending instance and the malformed annotation.
	var pending string
	waitFor(ctx, t, 30*time.Second, "the fifth resnet50 instance's FailedScheduling", func(ctx context.Context) (bool, error) {
		pods, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=resnet50"})
		if err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" && p.Name != "bad-quantity" {
				pending = p.Name
				msgs, err := eventsFor(ctx, c, "default", p.Name)
				return err == nil && strings.Contains(msgs, "anti-affinity"), nil
			}
		}
		return false, nil
	})
	for name, want := range map[string]string{pending: "anti-affinity", "bad-quantity": v1alpha1.AnnotationGPUMemory} {
		waitFor(ctx, t, 30*time.Second, name+" FailedScheduling event", func(ctx context.Context) (bool, error) {
			msgs, err := eventsFor(ctx, c, "default", name)
			return err == nil && strings.Contains(msgs, "FailedScheduling"), nil
		})
		out, errOut, code := runPlugin(ctx, cp.Kubeconfig, plugin, "explain", "pod", name)
		reasons, _, _ := strings.Cut(out, "Events (newest first):")
		if code != 0 || !strings.Contains(out, "Why Pending: PodScheduled=False") || !strings.Contains(reasons, "Scheduler's reasons") || !strings.Contains(reasons, want) {
			t.Errorf("explain pod %s: exit %d, want the scheduler's reason %q:\n%s%s", name, code, want, out, errOut)
		}
	}
	// explain pod of the later of the two pods sharing a GPU: its GPU,
	// and the neighbour and inflation recorded at its placement.
	shared := byGPU[got["ssd-0"]]
	if len(shared) != 2 {
		t.Fatalf("ssd-0's GPU holds %d pods, want ssd-0 and a resnet50", len(shared))
	}
	later := shared[0]
	if later.Annotations[v1alpha1.AnnotationGPUNeighbours] == "" {
		later = shared[1]
	}
	neighbours := later.Annotations[v1alpha1.AnnotationGPUNeighbours]
	if neighbours == "" {
		t.Fatalf("neither %s nor %s has %s", shared[0].Name, shared[1].Name, v1alpha1.AnnotationGPUNeighbours)
	}
	out, errOut, code = runPlugin(ctx, cp.Kubeconfig, plugin, "explain", "pod", later.Name)
	k := got["ssd-0"]
	for _, want := range []string{
		fmt.Sprintf("Node:       %s\nGPU:        %d (Tesla-T4", k.node, k.index),
		"Neighbours at placement:          " + neighbours + "\n",
		"Predicted inflation at placement: " + later.Annotations[v1alpha1.AnnotationPredictedInflation] + "\n",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("explain pod %s: exit %d, want %q:\n%s%s", later.Name, code, want, out, errOut)
		}
	}

	// A missing ModelService.
	_, errOut, code = runPlugin(ctx, cp.Kubeconfig, plugin, "explain", "modelservice", "missing")
	if code == 0 || !strings.Contains(errOut, "modelservice default/missing not found") {
		t.Errorf("explain modelservice missing: exit %d, stderr %q", code, errOut)
	}

	// A user without RBAC.
	nobody, err := cp.KubeconfigAs("nobody")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"gpus"}, "forbidden: you may not list nodes"},
		{[]string{"explain", "modelservice", "missing"}, "forbidden: you may not get modelservices.hetsev.io"},
		{[]string{"explain", "pod", later.Name}, "forbidden: you may not get pods"},
	} {
		_, errOut, code := runPlugin(ctx, nobody, plugin, tc.args...)
		if code == 0 || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "ClusterRole hetsev-viewer") {
			t.Errorf("%v as a user without RBAC: exit %d, stderr %q; want %q and ClusterRole hetsev-viewer", tc.args, code, errOut, tc.want)
		}
	}

	// The user ClusterRoles as manifests/user-roles.yaml installs them.
	roles, err := cluster.ReadManifests(filepath.Join(cluster.RepoRoot(), "manifests", "user-roles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	applier, err := cluster.NewApplier(cp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := applier.Apply(ctx, "", roles); err != nil {
		t.Fatal(err)
	}
	// A user bound to the built-in edit in namespace default creates a
	// ModelService, and one bound to the built-in view reads it (their
	// rules come from hetsev-modelservices-edit and -view by aggregation).
	bindInDefault(ctx, t, c, "edit", "editor")
	bindInDefault(ctx, t, c, "view", "reader")
	editor := pluginClient(t, cp, "editor")
	ms := &v1alpha1.ModelService{
		ObjectMeta: metav1.ObjectMeta{Name: "resnet50", Namespace: "default"},
		Spec: v1alpha1.ModelServiceSpec{
			Model: "resnet50", SLO: v1alpha1.SLO{ResponseTimeMs: 400, ServiceLevel: 0.98}, BatchSize: 8,
			Profiles: []v1alpha1.GPUProfile{{GPUType: "T4", ThroughputRPS: 363, LatencyMs: 22.41, GPUMemory: "2048Mi"}},
			Template: v1.PodTemplateSpec{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "m", Image: "m:1"}}}},
		},
	}
	eventually(ctx, t, "a user bound to edit creating a ModelService", func() error {
		return editor.Create(ctx, ms.DeepCopy())
	})
	reader := pluginClient(t, cp, "reader")
	eventually(ctx, t, "a user bound to view getting and listing ModelServices", func() error {
		var got v1alpha1.ModelService
		var list v1alpha1.ModelServiceList
		if err := reader.Get(ctx, ctrlclient.ObjectKeyFromObject(ms), &got); err != nil {
			return err
		}
		if err := reader.List(ctx, &list, ctrlclient.InNamespace("default")); err != nil || len(list.Items) != 1 {
			return fmt.Errorf("list: %d items, %v", len(list.Items), err)
		}
		return nil
	})
	if err := reader.Delete(ctx, ms.DeepCopy()); !apierrors.IsForbidden(err) {
		t.Errorf("a user bound to view deleting a ModelService: %v, want forbidden", err)
	}

	// A user bound to hetsev-viewer, as the Forbidden message says: every
	// command shows what it shows the cluster admin.
	if _, err := c.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "hetsev-viewer-viewer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "hetsev-viewer"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "viewer"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	viewer, err := cp.KubeconfigAs("viewer")
	if err != nil {
		t.Fatal(err)
	}
	eventually(ctx, t, "gpus as a user bound to hetsev-viewer", func() error {
		if out, errOut, code = runPlugin(ctx, viewer, plugin, "gpus", "-o", "json"); code != 0 {
			return fmt.Errorf("exit %d: %s", code, errOut)
		}
		return nil
	})
	var asViewer kubectlhetsev.GPUReport
	if err := json.Unmarshal([]byte(out), &asViewer); err != nil {
		t.Fatalf("gpus -o json as viewer: %v\n%s%s", err, out, errOut)
	}
	tenants := 0
	for _, g := range asViewer.GPUs {
		tenants += len(g.Tenants)
	}
	if tenants != placed || fmt.Sprint(asViewer.Notes) != fmt.Sprint(r.Notes) {
		t.Errorf("gpus as viewer: %d tenants, notes %v; want %d and the cluster admin's notes %v", tenants, asViewer.Notes, placed, r.Notes)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"explain", "modelservice", ms.Name}, "ModelService: default/" + ms.Name + "\n"},
		{[]string{"explain", "pod", pending}, "anti-affinity"},
		{[]string{"explain", "pod", later.Name}, "Neighbours at placement:          " + neighbours + "\n"},
	} {
		out, errOut, code := runPlugin(ctx, viewer, plugin, tc.args...)
		if code != 0 || !strings.Contains(out, tc.want) || strings.Contains(out+errOut, "may not") {
			t.Errorf("%v as viewer: exit %d, want %q:\n%s%s", tc.args, code, tc.want, out, errOut)
		}
	}
	if pods, err := c.CoreV1().Pods("default").Get(ctx, pending, metav1.GetOptions{}); err != nil || pods.Status.Phase != v1.PodPending {
		t.Errorf("%s: %v, want still Pending", pending, err)
	}
}

// eventually retries f for 30s (RBAC changes reach the API server's
// authorizer, and aggregated rules the built-in roles, a moment after they
// are written), failing the test with f's last error.
func eventually(ctx context.Context, t *testing.T, what string, f func() error) {
	t.Helper()
	var last error
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		last = f()
		return last == nil, nil
	}); err != nil {
		t.Fatalf("%s: %v", what, last)
	}
}

// bindInDefault binds ClusterRole role to user in namespace default.
func bindInDefault(ctx context.Context, t *testing.T, c kubernetes.Interface, role, user string) {
	t.Helper()
	if _, err := c.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role + "-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// pluginClient is kubectl-hetsev's client acting as user.
func pluginClient(t *testing.T, cp *cluster.ControlPlane, user string) ctrlclient.Client {
	t.Helper()
	kc, err := cp.KubeconfigAs(user)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubectlhetsev.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// runPlugin runs bin/kubectl-hetsev args with kubeconfig and returns its
// output and exit status.
func runPlugin(ctx context.Context, kubeconfig, plugin string, args ...string) (stdout, stderr string, code int) {
	cmd := exec.CommandContext(ctx, plugin, append(args, "--kubeconfig", kubeconfig)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		code, errOut = -1, *bytes.NewBufferString(err.Error())
	}
	return out.String(), errOut.String(), code
}
