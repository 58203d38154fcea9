package integration

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// The install guide (docs/install.md) is the part from "## Install" up to the first
// level-2 heading after "## Uninstall" (Install, its subsections, Upgrade,
// Uninstall). Each command block in it (a fence tagged sh, bash, shell,
// console or untagged) carries a marker comment on the line before its
// fence, one of:
//
//	<!-- install-test: run -->
//	<!-- install-test: skip: REASON -->
//	<!-- install-test: stand-in NAME: REASON -->
//
// run: TestInstallGuide runs the block with bash (set -euo pipefail) against
// the local control plane. skip: the block cannot run there, for REASON.
// stand-in: the block cannot run there, for REASON, and the test does what
// it waits for another way, the stand-in NAME of installStandIns.
const (
	installGuideStart = "## Install"
	installGuideLast  = "## Uninstall"
	installMarker     = "install-test:"
)

// installBlock is one command block of the install guide.
type installBlock struct {
	Line    int    // docs/install.md line of the opening fence, from 1
	Section string // the heading the block sits under
	Action  string // "run", "skip" or "stand-in"
	StandIn string // the stand-in's name, for Action "stand-in"
	Reason  string // why the block is skipped or stood in for
	Script  string // the block's text, without the fences
}

// commandFence reports whether a fence's info string tags a command block.
func commandFence(info string) bool {
	switch strings.ToLower(strings.Fields(info + " x")[0]) {
	case "sh", "bash", "shell", "console", "x":
		return true
	}
	return false
}

var markerRE = regexp.MustCompile(`^<!--\s*install-test:\s*(.*?)\s*-->$`)

// parseInstallGuide returns the install guide's command blocks in order and
// one error per block whose marker is missing or malformed ("docs/install.md:NN:
// ..."). It is an error too when the guide's headings are not found.
func parseInstallGuide(readme string) ([]installBlock, []error) {
	var blocks []installBlock
	var errs []error
	in, seenLast := false, false
	section, prev := "", ""
	var fence *installBlock // the open command block, if any
	var script []string
	inOther := false // inside a fence that is not a command block
	sc := bufio.NewScanner(strings.NewReader(readme))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		isFence := strings.HasPrefix(trimmed, "```")
		switch {
		case fence != nil:
			if isFence {
				fence.Script = strings.Join(script, "\n") + "\n"
				blocks = append(blocks, *fence)
				fence, script, prev = nil, nil, trimmed
			} else {
				script = append(script, line)
			}
			continue
		case inOther:
			inOther = !isFence
			prev = trimmed
			continue
		}
		if strings.HasPrefix(line, "## ") {
			if in && seenLast {
				break
			}
			if line == installGuideStart {
				in = true
			}
			if in && line == installGuideLast {
				seenLast = true
			}
		}
		if in && strings.HasPrefix(line, "#") {
			section = strings.TrimSpace(strings.TrimLeft(line, "#"))
		}
		if isFence {
			if !in || !commandFence(strings.TrimPrefix(trimmed, "```")) {
				inOther = true
			} else {
				b := installBlock{Line: n, Section: section}
				if err := parseMarker(prev, &b); err != nil {
					errs = append(errs, fmt.Errorf("docs/install.md:%d: command block under %q: %w", n, section, err))
				}
				fence = &b
			}
		}
		if trimmed != "" {
			prev = trimmed
		}
	}
	if fence != nil {
		errs = append(errs, fmt.Errorf("docs/install.md:%d: command block is not closed", fence.Line))
	}
	if !in || !seenLast {
		errs = append(errs, fmt.Errorf("docs/install.md: no %q through %q section", installGuideStart, installGuideLast))
	}
	return blocks, errs
}

// parseMarker reads the marker comment prev (the last non-blank line before
// a block's fence) into b.
func parseMarker(prev string, b *installBlock) error {
	m := markerRE.FindStringSubmatch(prev)
	if m == nil {
		return fmt.Errorf("no marker on the line before it (<!-- %s run -->, <!-- %s skip: REASON --> or <!-- %s stand-in NAME: REASON -->)", installMarker, installMarker, installMarker)
	}
	body := m[1]
	switch {
	case body == "run":
		b.Action = "run"
	case strings.HasPrefix(body, "skip:"):
		b.Action, b.Reason = "skip", strings.TrimSpace(strings.TrimPrefix(body, "skip:"))
	case strings.HasPrefix(body, "stand-in "):
		name, reason, ok := strings.Cut(strings.TrimPrefix(body, "stand-in "), ":")
		b.Action, b.StandIn, b.Reason = "stand-in", strings.TrimSpace(name), strings.TrimSpace(reason)
		if !ok || b.StandIn == "" {
			return fmt.Errorf("marker %q: want stand-in NAME: REASON", prev)
		}
		if _, known := installStandIns[b.StandIn]; !known {
			return fmt.Errorf("marker %q: no stand-in %q in install_guide_test.go", prev, b.StandIn)
		}
	default:
		return fmt.Errorf("marker %q: want run, skip: REASON or stand-in NAME: REASON", prev)
	}
	if b.Action != "run" && b.Reason == "" {
		return fmt.Errorf("marker %q gives no reason", prev)
	}
	return nil
}

// installEnv is what the blocks run against and the stand-ins start.
type installEnv struct {
	cp   *cluster.ControlPlane
	ctx  context.Context
	node string
}

// installStandIns do, for a block that cannot run on the local control
// plane, what the block waits for.
var installStandIns = map[string]func(t *testing.T, e *installEnv){
	// The Deployments' pods need a kubelet and the images. In their place
	// run bin/hetsev-metrics-adapter and bin/hetsev-scaler on loopback, each
	// as its service account (the manifests' RBAC). Without kube-proxy the
	// aggregator cannot reach the adapter through the manifests' ClusterIP
	// Service, so that Service is replaced by one of type ExternalName
	// pointing at localhost on the adapter's port, and the APIServices are
	// pointed at that port (cluster.RegisterAPIService); the scaler serves
	// its webhook on 127.0.0.1 and writes the caBundle into the manifests'
	// MutatingWebhookConfiguration as it does in the cluster.
	// hetsev-scheduler is not started: no block checks it.
	"programs": func(t *testing.T, e *installEnv) {
		asScaler, err := e.cp.KubeconfigAs(scalerSA)
		if err != nil {
			t.Fatal(err)
		}
		port, err := cluster.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		scaler, err := cluster.StartScaler(e.ctx, e.cp, "--kubeconfig="+asScaler,
			fmt.Sprintf("--webhook-bind-address=127.0.0.1:%d", port), "--webhook-cert-hosts=127.0.0.1",
			"--webhook-namespace="+cluster.SystemNamespace)
		if err != nil {
			t.Fatal(err)
		}
		stopOnCleanup(t, scaler)
		err = e.cp.Client.CoreV1().Services(cluster.SystemNamespace).Delete(e.ctx, cluster.AdapterService, metav1.DeleteOptions{})
		if err != nil {
			t.Fatalf("replacing the adapter's Service: %v", err)
		}
		asAdapter, err := e.cp.KubeconfigAs(adapterSA)
		if err != nil {
			t.Fatal(err)
		}
		adapter, _, err := cluster.StartAdapter(e.ctx, e.cp, cluster.AdapterOptions{Kubeconfig: asAdapter})
		if adapter != nil {
			stopOnCleanup(t, adapter)
		}
		if err != nil {
			t.Fatalf("hetsev-metrics-adapter: %v", err)
		}
	},
}

// nodePlaceholder is the install guide's name for the node a user labels and
// taints; the test substitutes the name of a node it created.
var nodePlaceholder = regexp.MustCompile(`\bNODE\b`)

// runInstallBlock runs one block with bash in the repository root, with
// bin/ first on PATH (bin/kubectl) and KUBECONFIG the control plane's.
// It returns the combined output.
func runInstallBlock(ctx context.Context, e *installEnv, home, script string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	script = nodePlaceholder.ReplaceAllString(script, e.node)
	cmd := exec.CommandContext(ctx, "bash", "-c", "set -euo pipefail\nset -x\n"+script)
	cmd.Dir = cluster.RepoRoot()
	cmd.Env = append(os.Environ(),
		"PATH="+cluster.BinDir()+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KUBECONFIG="+e.cp.Kubeconfig,
		"HOME="+home, // kubectl's discovery cache
	)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// The install guide (docs/install.md) works as written against the local control
// plane: every command block runs (or is marked skip or stand-in, with a
// reason), in order, on a node the test created (NODE in the guide), and
// afterwards the node is in the GPU pool, the CRD is established, the
// APIService is Available, the webhook has a caBundle and the GPU
// Operator's namespace is exempt; the Uninstall block then removes every
// object of manifests/ and a user's ModelService.
func TestInstallGuide(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(cluster.RepoRoot(), "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, errs := parseInstallGuide(string(raw))
	for _, err := range errs {
		t.Error(err)
	}
	if len(errs) > 0 {
		t.FailNow()
	}
	kubectl := filepath.Join(cluster.BinDir(), "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		t.Fatalf("%v (run `make build` first)", err)
	}

	cp, ctx := controlPlane(t)
	c := cp.Client
	// A node as GPU Feature Discovery labels it, outside the pool until the
	// guide's first block puts it in.
	t4, err := cluster.T4Nodes(1)
	if err != nil {
		t.Fatal(err)
	}
	t4.Prefix, t4.OutsideGPUPool = "gpu-", true
	nodes, err := cluster.CreateNodes(ctx, c, []cluster.NodeGroup{t4})
	if err != nil {
		t.Fatal(err)
	}
	// The GPU Operator's namespace, which the guide exempts from the GPU
	// assignment policy.
	if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gpu-operator"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e := &installEnv{cp: cp, ctx: ctx, node: nodes[0]}
	home := t.TempDir()

	uninstall := -1
	for i, b := range blocks {
		if b.Section == "Uninstall" {
			uninstall = i
			break
		}
	}
	if uninstall < 0 {
		t.Fatal("docs/install.md: no command block under Uninstall")
	}
	runBlocks := func(bs []installBlock) {
		t.Helper()
		for _, b := range bs {
			switch b.Action {
			case "skip":
				t.Logf("docs/install.md:%d (%s): skipped: %s", b.Line, b.Section, b.Reason)
			case "stand-in":
				t.Logf("docs/install.md:%d (%s): stand-in %q: %s", b.Line, b.Section, b.StandIn, b.Reason)
				installStandIns[b.StandIn](t, e)
			case "run":
				out, err := runInstallBlock(ctx, e, home, b.Script)
				if err != nil {
					t.Fatalf("docs/install.md:%d (%s): %v\n%s", b.Line, b.Section, err, out)
				}
				t.Logf("docs/install.md:%d (%s): ran\n%s", b.Line, b.Section, out)
			}
		}
	}

	runBlocks(blocks[:uninstall])

	// The node is in hetsev's GPU pool and off the GPU Operator's device
	// plugin.
	n, err := c.CoreV1().Nodes().Get(ctx, e.node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := n.Labels[v1alpha1.LabelGPUPool]; got != v1alpha1.GPUPoolValue {
		t.Errorf("node %s: label %s=%q, want %q", e.node, v1alpha1.LabelGPUPool, got, v1alpha1.GPUPoolValue)
	}
	// The GPU Operator's node label that keeps its device plugin off a node.
	if got := n.Labels["nvidia.com/gpu.deploy.device-plugin"]; got != "false" {
		t.Errorf("node %s: label nvidia.com/gpu.deploy.device-plugin=%q, want \"false\"", e.node, got)
	}
	tainted := false
	for _, taint := range n.Spec.Taints {
		tainted = tainted || taint.Key == v1alpha1.TaintGPUPool && taint.Value == v1alpha1.GPUPoolValue && taint.Effect == v1.TaintEffectNoSchedule
	}
	if !tainted {
		t.Errorf("node %s: taints %v, want %s=%s:NoSchedule", e.node, n.Spec.Taints, v1alpha1.TaintGPUPool, v1alpha1.GPUPoolValue)
	}
	if _, err := c.CoreV1().Namespaces().Get(ctx, cluster.SystemNamespace, metav1.GetOptions{}); err != nil {
		t.Errorf("namespace %s: %v", cluster.SystemNamespace, err)
	}
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	crd, err := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).
		Get(ctx, "modelservices."+v1alpha1.GroupName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !conditionTrue(crd.Object, "Established") {
		t.Errorf("CRD %s is not Established", crd.GetName())
	}
	apisvc, err := dyn.Resource(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}).
		Get(ctx, "v1beta2.custom.metrics.k8s.io", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !conditionTrue(apisvc.Object, "Available") {
		t.Errorf("APIService %s is not Available", apisvc.GetName())
	}
	if bundle, err := caBundle(ctx, c); err != nil || countCerts(bundle) == 0 {
		t.Errorf("webhook caBundle holds no certificate (%v)", err)
	}
	if ns, err := c.CoreV1().Namespaces().Get(ctx, "gpu-operator", metav1.GetOptions{}); err != nil {
		t.Error(err)
	} else if got := ns.Labels["hetsev.io/gpu-admission"]; got != "exempt" {
		t.Errorf("namespace gpu-operator: label hetsev.io/gpu-admission=%q, want \"exempt\"", got)
	}
	if t.Failed() {
		t.FailNow()
	}

	// What Uninstall must remove: every object of manifests/ and a user's
	// ModelService (the example, applied as a user would).
	objs, err := cluster.BuildKustomization(filepath.Join(cluster.RepoRoot(), "manifests"))
	if err != nil {
		t.Fatal(err)
	}
	example, err := cluster.ReadManifests(filepath.Join(cluster.RepoRoot(), "manifests", "examples", "modelservice-resnet50.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := cluster.NewApplier(cp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Apply(ctx, "default", example); err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	type object struct {
		id  string
		get func(ctx context.Context) error
	}
	var made []object
	for _, o := range append(objs, example...) {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s %s: %v", gvk.Kind, o.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		ns := ""
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ns = o.GetNamespace()
			if ns == "" {
				ns = "default"
			}
			ri = dyn.Resource(m.Resource).Namespace(ns)
		}
		name := o.GetName()
		made = append(made, object{id: fmt.Sprintf("%s %s/%s", gvk.Kind, ns, name), get: func(ctx context.Context) error {
			_, err := ri.Get(ctx, name, metav1.GetOptions{})
			return err
		}})
	}
	for _, o := range made {
		if err := o.get(ctx); err != nil {
			t.Fatalf("before Uninstall: %s: %v", o.id, err)
		}
	}
	// hetsev-scaler gives the ModelService its Service, owned by it.
	msName := example[0].GetName()
	waitFor(ctx, t, 60*time.Second, "hetsev-scaler to create the ModelService's Service", func(ctx context.Context) (bool, error) {
		return len(ownedByModelService(ctx, t, c)) > 0, nil
	})

	runBlocks(blocks[uninstall:])

	// kubectl delete waits until what it deleted is gone; the ModelService
	// goes with its CRD.
	for _, o := range made {
		if err := o.get(ctx); !apierrors.IsNotFound(err) {
			t.Errorf("after Uninstall: %s is still there (%v)", o.id, err)
		}
	}
	// The garbage collector deletes the ModelService's dependents once it is
	// gone (kubectl deletes in the background).
	waitFor(ctx, t, 60*time.Second, "ModelService "+msName+"'s dependents to be deleted", func(ctx context.Context) (bool, error) {
		return len(ownedByModelService(ctx, t, c)) == 0, nil
	})
	if _, err := c.CoreV1().Secrets(cluster.SystemNamespace).Get(ctx, "hetsev-webhook-tls", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after Uninstall: Secret %s/hetsev-webhook-tls is still there (%v)", cluster.SystemNamespace, err)
	}
}

// ownedByModelService lists the Services and Deployments in namespace
// default that a ModelService owns, as "Kind name".
func ownedByModelService(ctx context.Context, t *testing.T, c kubernetes.Interface) []string {
	t.Helper()
	var owned []string
	svcs, err := c.CoreV1().Services("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deps, err := c.AppsV1().Deployments("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var objs []metav1.Object
	for i := range svcs.Items {
		objs = append(objs, &svcs.Items[i])
	}
	for i := range deps.Items {
		objs = append(objs, &deps.Items[i])
	}
	for _, o := range objs {
		for _, ref := range o.GetOwnerReferences() {
			if ref.Kind == "ModelService" {
				owned = append(owned, fmt.Sprintf("%T %s", o, o.GetName()))
			}
		}
	}
	return owned
}

// conditionTrue reports whether obj's status has condition typ with status
// "True".
func conditionTrue(obj map[string]any, typ string) bool {
	status, _ := obj["status"].(map[string]any)
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}

// The marker rules themselves: only the install guide's command blocks
// count, and each needs a run, skip or stand-in marker with a reason.
func TestInstallGuideMarkers(t *testing.T) {
	readme := strings.Join([]string{
		"# x",                               // 1
		"```sh",                             // 2: before the guide
		"make demo",                         // 3
		"```",                               // 4
		"## Install",                        // 5
		"<!-- install-test: run -->",        // 6
		"```sh",                             // 7
		"kubectl apply -k manifests/",       // 8
		"```",                               // 9
		"```yaml",                           // 10: not a command block
		"kind: Pod",                         // 11
		"```",                               // 12
		"```sh",                             // 13: no marker
		"helm install hetsev charts/hetsev", // 14
		"```",                               // 15
		"<!-- install-test: skip: -->",      // 16
		"```bash",                           // 17: no reason
		"make images",                       // 18
		"```",                               // 19
		"<!-- install-test: stand-in nope: x -->", // 20
		"```",          // 21: unknown stand-in
		"true",         // 22
		"```",          // 23
		"## Uninstall", // 24
		"<!-- install-test: skip: needs a kubelet -->", // 25
		"",                             // 26
		"```sh",                        // 27
		"kubectl delete -k manifests/", // 28
		"```",                          // 29
		"## Documentation",             // 30
		"```sh",                        // 31: after the guide
		"make test",                    // 32
		"```",                          // 33
	}, "\n")
	blocks, errs := parseInstallGuide(readme)
	var got []string
	for _, b := range blocks {
		got = append(got, fmt.Sprintf("%d %s %s", b.Line, b.Section, b.Action))
	}
	want := []string{"7 Install run", "13 Install ", "17 Install skip", "21 Install stand-in", "27 Uninstall skip"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("blocks %q, want %q", got, want)
	}
	var lines []string
	for _, err := range errs {
		lines = append(lines, strings.SplitN(err.Error(), ":", 3)[1])
	}
	if strings.Join(lines, ",") != "13,17,21" {
		t.Errorf("errors on lines %v, want 13, 17, 21: %v", lines, errs)
	}
	if s := blocks[0].Script; s != "kubectl apply -k manifests/\n" {
		t.Errorf("script %q", s)
	}
	if _, errs := parseInstallGuide("# x\n## Install\n"); len(errs) == 0 {
		t.Error("a README without Uninstall passed")
	}
}
