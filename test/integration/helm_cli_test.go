package integration

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/internal/helmchart"
)

// helmCLI runs bin/helm (the helm.sh/helm/v4 module's CLI, built by make
// build) against the control plane (none while kubeconfig is empty: pull,
// template), with Helm's cache, configuration and
// data directories in the test's own, and returns its combined output; a
// non-zero exit fails the test with it.
type helmCLI struct {
	t          *testing.T
	kubeconfig string
	home       string
}

func (h helmCLI) run(ctx context.Context, args ...string) string {
	h.t.Helper()
	out, err := h.try(ctx, args...)
	if err != nil {
		h.t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (h helmCLI) try(ctx context.Context, args ...string) (string, error) {
	if h.kubeconfig != "" {
		args = append(args, "--kubeconfig", h.kubeconfig)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(cluster.BinDir(), "helm"), args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(h.home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(h.home, "config"), "HELM_DATA_HOME="+filepath.Join(h.home, "data"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// copyChart copies the chart to a directory of the test's, so that a test
// can change it for an upgrade. Chart.yaml's kubeVersion (>=1.36) is
// dropped: the test's kube-apiserver, a Kubernetes 1.36 library build,
// reports its git version as v0.0.0-master, which Helm compares, unless
// the test binary was linked with make integration's version.
func copyChart(t *testing.T) string {
	t.Helper()
	src := filepath.Join(cluster.RepoRoot(), helmchart.Dir)
	dst := filepath.Join(t.TempDir(), "hetsev")
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if rel == "Chart.yaml" {
			b = regexp.MustCompile(`(?m)^kubeVersion:.*\n`).ReplaceAll(b, nil)
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// The chart's lifecycle with the real helm CLI on a Kubernetes 1.36 API
// server: lint and template against the schema; install beside
// prometheus-adapter's APIService, which it leaves alone; an upgrade with
// a changed CRD (a printer column renamed) applies the change, which Helm
// never does for a chart's crds/; rollback restores it; uninstall removes
// every object of the release but the CRD, which crds.keep keeps with the
// ModelServices; an install with crds.keep=false and its uninstall then
// leave nothing behind; and an install into the release's namespace,
// made by helm --create-namespace, works beside Helm's Namespace.
func TestHelmCLILifecycle(t *testing.T) {
	cp, ctx := controlPlane(t)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	h := helmCLI{t: t, kubeconfig: cp.Kubeconfig, home: t.TempDir()}
	ext, err := apiextclient.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	chart := copyChart(t)

	h.run(ctx, "lint", "--strict", chart)
	h.run(ctx, "lint", "--strict", chart, "-f", filepath.Join(chart, "ci", "all-values.yaml"))
	if out, err := h.try(ctx, "template", "hetsev", chart, "--set", "crds.keep=maybe"); err == nil || !strings.Contains(out, "/crds/keep") {
		t.Errorf("helm template with crds.keep=maybe: %v, want the schema to refuse crds.keep\n%s", err, out)
	}

	crdColumn := func() (string, map[string]string) {
		t.Helper()
		crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "modelservices.hetsev.io", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("CRD modelservices.hetsev.io: %v", err)
		}
		var names []string
		for _, c := range crd.Spec.Versions[0].AdditionalPrinterColumns {
			names = append(names, c.Name)
		}
		return strings.Join(names, ","), crd.Annotations
	}

	// prometheus-adapter's APIService, registered before hetsev: the
	// chart leaves it alone (and says so) rather than failing or taking
	// custom metrics over.
	foreign := filepath.Join(t.TempDir(), "apiservice.yaml")
	if err := os.WriteFile(foreign, []byte(`apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1beta1.custom.metrics.k8s.io
spec:
  group: custom.metrics.k8s.io
  version: v1beta1
  service: {name: prometheus-adapter, namespace: monitoring}
  groupPriorityMinimum: 100
  versionPriority: 100
  insecureSkipTLSVerify: true
`), 0o644); err != nil {
		t.Fatal(err)
	}
	kubectl := func(args ...string) string {
		t.Helper()
		return runKubectl(ctx, t, cp.Kubeconfig, args...)
	}
	kubectl("apply", "-f", foreign)

	notes := h.run(ctx, "install", "hetsev", chart)
	if !strings.Contains(notes, "APIService v1beta1.custom.metrics.k8s.io belongs to another server (monitoring/prometheus-adapter") {
		t.Errorf("install NOTES do not say the chart left prometheus-adapter's APIService alone:\n%s", notes)
	}
	foreignService := func() string {
		t.Helper()
		return kubectl("get", "apiservice", "v1beta1.custom.metrics.k8s.io", "-o", "jsonpath={.spec.service.namespace}/{.spec.service.name}")
	}
	if got := foreignService(); got != "monitoring/prometheus-adapter" {
		t.Errorf("after install: APIService v1beta1.custom.metrics.k8s.io points at %q, want prometheus-adapter's, untouched", got)
	}
	if got := kubectl("get", "apiservice", "v1beta2.custom.metrics.k8s.io", "-o", "jsonpath={.spec.service.name}"); got != "hetsev-metrics-adapter" {
		t.Errorf("after install: APIService v1beta2.custom.metrics.k8s.io points at %q, want hetsev-metrics-adapter", got)
	}
	cols, ann := crdColumn()
	if !strings.Contains(cols, "Saturation") || ann["helm.sh/resource-policy"] != "keep" {
		t.Fatalf("after install: CRD columns %s, annotations %v; want Saturation and Helm's keep policy", cols, ann)
	}
	if _, err := cp.Client.AppsV1().Deployments("hetsev-system").Get(ctx, "hetsev-scaler", metav1.GetOptions{}); err != nil {
		t.Fatalf("after install: %v", err)
	}

	// The upgrade: the CRD's Saturation column renamed.
	crdFile := filepath.Join(chart, "templates", "crds", "crd-modelservice.yaml")
	raw, err := os.ReadFile(crdFile)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(raw), "name: Saturation", "name: SaturationUpgraded", 1)
	if changed == string(raw) {
		t.Fatal("the CRD has no printer column named Saturation to change")
	}
	if err := os.WriteFile(crdFile, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	h.run(ctx, "upgrade", "hetsev", chart)
	if cols, _ := crdColumn(); !strings.Contains(cols, "SaturationUpgraded") {
		t.Errorf("after upgrade: CRD columns %s, want the renamed SaturationUpgraded", cols)
	}
	h.run(ctx, "rollback", "hetsev", "1")
	if cols, _ := crdColumn(); strings.Contains(cols, "SaturationUpgraded") || !strings.Contains(cols, "Saturation") {
		t.Errorf("after rollback to revision 1: CRD columns %s, want Saturation back", cols)
	}
	if out := h.run(ctx, "history", "hetsev"); strings.Count(out, "\n") < 4 {
		t.Errorf("helm history: want three revisions:\n%s", out)
	}

	if got := foreignService(); got != "monitoring/prometheus-adapter" {
		t.Errorf("after upgrade and rollback: prometheus-adapter's APIService points at %q, want it untouched", got)
	}
	// No prometheus-adapter serves it here: while it is unavailable, the
	// namespace controller cannot finish deleting hetsev-system.
	kubectl("delete", "-f", foreign)

	manifest := h.run(ctx, "get", "manifest", "hetsev")
	h.run(ctx, "uninstall", "hetsev", "--wait", "--timeout", "3m")
	cols, _ = crdColumn() // kept: Get fails the test otherwise
	t.Logf("after uninstall the CRD is kept (crds.keep), columns %s", cols)
	checkReleaseGone(ctx, t, cp, ext, "hetsev-system", manifest, true)

	h.run(ctx, "install", "hetsev", chart, "--set", "crds.keep=false")
	manifest = h.run(ctx, "get", "manifest", "hetsev")
	h.run(ctx, "uninstall", "hetsev", "--wait", "--timeout", "3m")
	checkReleaseGone(ctx, t, cp, ext, "hetsev-system", manifest, false)

	// In the release's namespace, which helm makes: the chart leaves
	// Helm's Namespace alone (no conflict over it, now or at the upgrade)
	// and the programs run there.
	h.run(ctx, "install", "hetsev", chart, "-n", "team-x", "--create-namespace", "--set", "namespace.name=")
	h.run(ctx, "upgrade", "hetsev", chart, "-n", "team-x", "--set", "namespace.name=")
	if _, err := cp.Client.AppsV1().Deployments("team-x").Get(ctx, "hetsev-scaler", metav1.GetOptions{}); err != nil {
		t.Errorf("installed with -n team-x and namespace.name empty: %v", err)
	}
	manifest = h.run(ctx, "get", "manifest", "hetsev", "-n", "team-x")
	if strings.Contains(manifest, "kind: Namespace") {
		t.Errorf("the release renders a Namespace beside the one helm --create-namespace made:\n%s", manifest)
	}
	h.run(ctx, "uninstall", "hetsev", "-n", "team-x", "--wait", "--timeout", "3m")
	checkReleaseGone(ctx, t, cp, ext, "", manifest, true)
}

// checkReleaseGone asserts that every object of a release's manifest is
// gone (the CRD excepted when crdKept), once namespace, when the release
// rendered it, has terminated, using kubectl to resolve the manifest's
// kinds.
func checkReleaseGone(ctx context.Context, t *testing.T, cp *cluster.ControlPlane, ext apiextclient.Interface, namespace, manifest string, crdKept bool) {
	t.Helper()
	if namespace != "" {
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := cp.Client.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Fatalf("namespace %s not gone after uninstall: %v", namespace, err)
		}
	}
	file := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(file, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runKubectl(ctx, t, cp.Kubeconfig, "get", "-f", file, "--ignore-not-found", "-o", "name")
	var left []string
	for _, l := range strings.Fields(out) {
		if crdKept && l == "customresourcedefinition.apiextensions.k8s.io/modelservices.hetsev.io" {
			continue
		}
		left = append(left, l)
	}
	if len(left) > 0 {
		t.Errorf("left behind by helm uninstall: %s", strings.Join(left, " "))
	}
	_, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "modelservices.hetsev.io", metav1.GetOptions{})
	if crdKept != (err == nil) {
		t.Errorf("CRD after uninstall: %v, want kept %v", err, crdKept)
	}
}

// runKubectl runs bin/kubectl against kubeconfig and returns its output; a
// non-zero exit fails the test with it.
func runKubectl(ctx context.Context, t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	out, err := exec.CommandContext(ctx, filepath.Join(cluster.BinDir(), "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
