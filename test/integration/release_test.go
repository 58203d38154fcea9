package integration

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/hetsev/hetsev/internal/cluster"
)

// make release (hack/release.sh, without the images, whose build takes
// half an hour) writes the chart, the manifests of both GPU modes, an SPDX
// SBOM per program, release notes and SHA256SUMS, every one of the VERSION
// file's version: the packaged chart's version and appVersion, every image
// the manifests and the rendered chart name, the SBOMs' names.
func TestReleaseArtifactsOneVersion(t *testing.T) {
	// The plugin for this machine only, built as make build builds (no
	// -trimpath, the host's cgo setting) so that its cache serves it: a
	// cold static -trimpath build takes minutes.
	platform := runtime.GOOS + "_" + runtime.GOARCH
	version, out := runRelease(t, "REGISTRY=", "PLUGIN_PLATFORMS="+runtime.GOOS+"/"+runtime.GOARCH, "PLUGIN_BUILDFLAGS=-buildvcs=false",
		"PLUGIN_CGO_ENABLED="+goEnv(t, "CGO_ENABLED"), "PLUGIN_URL=https://example.invalid/v{VERSION}")
	want := []string{"RELEASE-NOTES.md", "SHA256SUMS", "hetsev-" + version + ".tgz", "hetsev-" + version + ".yaml", "hetsev-dra-" + version + ".yaml",
		"hetsev-scheduler-" + version + ".spdx.json", "hetsev-metrics-adapter-" + version + ".spdx.json", "hetsev-scaler-" + version + ".spdx.json",
		"kubectl-hetsev_" + platform + ".tar.gz", "kubectl-hetsev.krew.yaml"}
	for _, f := range want {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("release file %s: %v", f, err)
		}
	}
	sums := exec.Command("sha256sum", "-c", "SHA256SUMS")
	sums.Dir = out
	if b, err := sums.CombinedOutput(); err != nil || strings.Count(string(b), ": OK") != len(want)-1 {
		t.Errorf("sha256sum -c SHA256SUMS: %v, want %d files OK:\n%s", err, len(want)-1, b)
	}

	helm := filepath.Join(cluster.BinDir(), "helm")
	tgz := filepath.Join(out, "hetsev-"+version+".tgz")
	meta, err := exec.Command(helm, "show", "chart", tgz).Output()
	if err != nil {
		t.Fatalf("helm show chart: %v", err)
	}
	for _, w := range []string{"version: " + version, "appVersion: " + version} {
		if !strings.Contains(string(meta), w+"\n") {
			t.Errorf("packaged chart: no %q in\n%s", w, meta)
		}
	}
	rendered, err := exec.Command(helm, "template", "hetsev", tgz).Output()
	if err != nil {
		t.Fatalf("helm template the packaged chart: %v", err)
	}
	image := regexp.MustCompile(`(?m)^\s+image: "?([^"\s]+)"?`)
	for name, text := range map[string]string{"the packaged chart": string(rendered), "hetsev-" + version + ".yaml": read(t, out, "hetsev-"+version+".yaml"),
		"hetsev-dra-" + version + ".yaml": read(t, out, "hetsev-dra-"+version+".yaml")} {
		images := image.FindAllStringSubmatch(text, -1)
		if len(images) < 3 {
			t.Errorf("%s names %d images, want the three programs'", name, len(images))
		}
		for _, m := range images {
			if !strings.HasSuffix(m[1], ":v"+version) {
				t.Errorf("%s: image %s, want tag v%s", name, m[1], version)
			}
		}
	}
	var sbom struct {
		SPDXVersion string `json:"spdxVersion"`
		Packages    []struct {
			Name        string `json:"name"`
			VersionInfo string `json:"versionInfo"`
		} `json:"packages"`
	}
	if err := json.Unmarshal([]byte(read(t, out, "hetsev-metrics-adapter-"+version+".spdx.json")), &sbom); err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, p := range sbom.Packages {
		names[p.Name] = p.VersionInfo
	}
	if sbom.SPDXVersion != "SPDX-2.3" || names["hetsev-metrics-adapter"] != version || names["k8s.io/client-go"] == "" ||
		names["golang.org/x/crypto/x509roots/fallback"] == "" {
		t.Errorf("metrics adapter SBOM: %s with %d packages (program %q, client-go %q, CA bundle module %q)", sbom.SPDXVersion, len(sbom.Packages),
			names["hetsev-metrics-adapter"], names["k8s.io/client-go"], names["golang.org/x/crypto/x509roots/fallback"])
	}
	checkPlugin(t, out, version, platform)
	if notes := read(t, out, "RELEASE-NOTES.md"); !strings.Contains(notes, "# hetsev v"+version) || !strings.Contains(notes, "ghcr.io/hetsev/hetsev-scaler:v"+version) {
		t.Errorf("RELEASE-NOTES.md does not name the version and the images:\n%s", notes)
	}
}

// checkPlugin checks the krew manifest names the archive by its URL and
// checksum, and that the archive holds the licence and a kubectl-hetsev
// that runs and has the profile command.
func checkPlugin(t *testing.T, out, version, platform string) {
	t.Helper()
	var manifest struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			Version          string `json:"version"`
			Homepage         string `json:"homepage"`
			ShortDescription string `json:"shortDescription"`
			Description      string `json:"description"`
			Platforms        []struct {
				Selector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				} `json:"selector"`
				URI    string `json:"uri"`
				SHA256 string `json:"sha256"`
				Bin    string `json:"bin"`
			} `json:"platforms"`
		} `json:"spec"`
	}
	if err := yaml.UnmarshalStrict([]byte(read(t, out, "kubectl-hetsev.krew.yaml")), &manifest); err != nil {
		t.Fatalf("kubectl-hetsev.krew.yaml: %v", err)
	}
	archive := "kubectl-hetsev_" + platform + ".tar.gz"
	raw, err := os.ReadFile(filepath.Join(out, archive))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	if manifest.APIVersion != "krew.googlecontainers.github.com/v1alpha2" || manifest.Kind != "Plugin" || manifest.Metadata.Name != "hetsev" || manifest.Spec.Version != "v"+version || len(manifest.Spec.Platforms) != 1 {
		t.Fatalf("krew manifest %+v: want Plugin hetsev v%s for one platform", manifest, version)
	}
	p := manifest.Spec.Platforms[0]
	if p.URI != "https://example.invalid/v"+version+"/"+archive || p.SHA256 != hex.EncodeToString(sum[:]) || p.Bin != "kubectl-hetsev" ||
		p.Selector.MatchLabels["os"]+"_"+p.Selector.MatchLabels["arch"] != platform {
		t.Errorf("krew platform %+v: want %s at its URL with sha256 %x", p, archive, sum)
	}
	gz, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var names []string
	bin := filepath.Join(t.TempDir(), "kubectl-hetsev")
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Name == "kubectl-hetsev" {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(bin, b, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	if strings.Join(names, " ") != "LICENSE kubectl-hetsev" {
		t.Fatalf("%s holds %v, want LICENSE and kubectl-hetsev", archive, names)
	}
	help, err := exec.Command(bin, "profile", "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(help), "--gpu-type") {
		t.Errorf("kubectl-hetsev profile --help from the archive: %v\n%s", err, help)
	}
}

// make release with REGISTRY pushes the chart as an OCI artifact; helm
// pulls from the registry the very archive the release wrote, renders it
// with the release's images, and installs it from there onto the control
// plane, then uninstalls it. The registry is
// go-containerregistry's implementation of the OCI distribution API on
// 127.0.0.1, without TLS; the images are left out (their build takes half
// an hour), so only the chart makes the round trip.
func TestReleaseChartThroughRegistry(t *testing.T) {
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "http://")
	version, out := runRelease(t, "REGISTRY="+host+"/hetsev", "REGISTRY_PLAIN_HTTP=1", "PLUGIN_PLATFORMS=")
	h := &helmCLI{t: t, home: t.TempDir()}
	ref := "oci://" + host + "/hetsev/charts/hetsev"
	pulled := t.TempDir()
	h.run(context.Background(), "pull", ref, "--version", version, "--plain-http", "-d", pulled)
	name := "hetsev-" + version + ".tgz"
	if got, want := read(t, pulled, name), read(t, out, name); got != want {
		t.Errorf("the chart pulled from %s differs from the release's %s (%d and %d bytes)", ref, name, len(got), len(want))
	}
	rendered := h.run(context.Background(), "template", "hetsev", ref, "--version", version, "--plain-http")
	if want := "ghcr.io/hetsev/hetsev-scaler:v" + version; !strings.Contains(rendered, want) {
		t.Errorf("the chart rendered from %s does not name %s", ref, want)
	}

	// The install guide's command, from the registry, onto a Kubernetes
	// 1.36 API server; then uninstall.
	cp, ctx := controlPlane(t)
	ctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	if v, err := cp.Client.Discovery().ServerVersion(); err != nil || !strings.HasPrefix(v.GitVersion, "v1.") {
		t.Fatalf("kube-apiserver version %v (%v): helm install checks the chart's kubeVersion against it; run make integration, whose ldflags give it the module's version", v, err)
	}
	h.kubeconfig = cp.Kubeconfig
	h.run(ctx, "install", "hetsev", ref, "--version", version, "--plain-http")
	d, err := cp.Client.AppsV1().Deployments("hetsev-system").Get(ctx, "hetsev-scaler", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("installed from %s: %v", ref, err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "ghcr.io/hetsev/hetsev-scaler:v"+version {
		t.Errorf("installed from %s: hetsev-scaler runs %s, want the release's image", ref, img)
	}
	manifest := h.run(ctx, "get", "manifest", "hetsev")
	h.run(ctx, "uninstall", "hetsev", "--wait", "--timeout", "3m")
	ext, err := apiextclient.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	checkReleaseGone(ctx, t, cp, ext, "hetsev-system", manifest, true)
}

// runRelease runs hack/release.sh (make release) without the images, into
// a directory of the test's, with env added ({VERSION} in a value is the
// VERSION file's), and returns the version and the release's directory.
func runRelease(t *testing.T, env ...string) (version, dir string) {
	t.Helper()
	root := cluster.RepoRoot()
	raw, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	version = strings.TrimSpace(string(raw))
	base := t.TempDir()
	cmd := exec.Command(filepath.Join(root, "hack", "release.sh"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "RELEASE_DIR="+base, "RELEASE_IMAGES=0", "RELEASE_ALLOW_DIRTY=1", "BIN="+cluster.BinDir())
	for _, e := range env {
		cmd.Env = append(cmd.Env, strings.ReplaceAll(e, "{VERSION}", version))
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/release.sh: %v\n%s", err, out)
	}
	return version, filepath.Join(base, "v"+version)
}

func goEnv(t *testing.T, name string) string {
	t.Helper()
	b, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(b))
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
