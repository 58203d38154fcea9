package imagebuild

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"debug/elf"
	"encoding/pem"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

const testVersion = "0.1.0-test"

// created is the images' SOURCE_DATE_EPOCH in these tests.
var created = time.Unix(1700000000, 0).UTC()

// hello is a tiny program built into images the way `make images` builds
// hetsev's programs, with a CA bundle so the bundle's layer entry is
// checked too.
var hello = Program{Name: "hello-image", Package: "./internal/imagebuild/testdata/hello", CACerts: true}

func buildHello(t *testing.T, platforms ...string) v1.ImageIndex {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	idx, err := BuildIndex(context.Background(), hello, Options{
		ModuleRoot: root,
		Version:    testVersion,
		Created:    created,
		Platforms:  platforms,
		CABundle:   "testdata/ca-bundle.crt",
		WorkDir:    t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// both is the two-platform index of hello, built once for the tests that
// only read it.
var both = sync.OnceValues(func() (v1.ImageIndex, error) {
	root, err := filepath.Abs("../..")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "imagebuild-test-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	return BuildIndex(context.Background(), hello, Options{
		ModuleRoot: root, Version: testVersion, Created: created,
		CABundle: "testdata/ca-bundle.crt", WorkDir: dir,
	})
})

func bothPlatforms(t *testing.T) v1.ImageIndex {
	t.Helper()
	idx, err := both()
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func digest(t *testing.T, d interface{ Digest() (v1.Hash, error) }) v1.Hash {
	t.Helper()
	h, err := d.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Building the same program twice, binaries included, gives the same
// index digest and the same archive bytes.
func TestBuildTwiceSameDigest(t *testing.T) {
	first, second := bothPlatforms(t), buildHello(t, Platforms...)
	if a, b := digest(t, first), digest(t, second); a != b {
		t.Fatalf("two builds of the same tree: index digests %s and %s differ", a, b)
	}
	dir := t.TempDir()
	var sums [2][32]byte
	for i, idx := range []v1.ImageIndex{first, second} {
		file := filepath.Join(dir, ArchiveName(hello.Name, testVersion)+string(rune('a'+i)))
		if err := WriteArchive(file, idx, Ref(Registry, hello.Name, testVersion), created); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		sums[i] = sha256.Sum256(b)
	}
	if sums[0] != sums[1] {
		t.Fatalf("two archives of the same index differ: sha256 %x and %x", sums[0], sums[1])
	}
}

// The index holds one image per platform, each with its platform in the
// descriptor and the config and a binary for that machine.
func TestIndexHasBothPlatforms(t *testing.T) {
	idx := bothPlatforms(t)
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	var got []string
	for _, d := range m.Manifests {
		if d.Platform == nil {
			t.Fatalf("manifest %s has no platform", d.Digest)
		}
		got = append(got, d.Platform.OS+"/"+d.Platform.Architecture)
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.OS != d.Platform.OS || cfg.Architecture != d.Platform.Architecture {
			t.Errorf("%s: config says %s/%s, descriptor %s/%s", d.Digest, cfg.OS, cfg.Architecture, d.Platform.OS, d.Platform.Architecture)
		}
		files := extract(t, img)
		f, err := elf.NewFile(bytes.NewReader(files[BinDir+"/"+hello.Name].data))
		if err != nil {
			t.Fatalf("%s: the binary is not ELF: %v", d.Platform.Architecture, err)
		}
		if f.Machine != machines[d.Platform.Architecture] {
			t.Errorf("%s image: binary for %s, want %s", d.Platform.Architecture, f.Machine, machines[d.Platform.Architecture])
		}
	}
	if strings.Join(got, ",") != strings.Join(Platforms, ",") {
		t.Fatalf("index platforms %v, want %v", got, Platforms)
	}
}

type file struct {
	hdr  *tar.Header
	data []byte
}

// extract reads the image's flattened file system (mutate.Extract).
func extract(t *testing.T, img v1.Image) map[string]file {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	files := map[string]file{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files["/"+strings.TrimSuffix(h.Name, "/")] = file{h, b}
	}
}

// The image of this machine's platform runs as 65532:65532, starts the
// binary, whose --help works once unpacked, and every file belongs to
// root except the nonroot user's home.
func TestImageRunsAsNonRoot(t *testing.T) {
	idx := bothPlatforms(t)
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var img v1.Image
	for _, d := range m.Manifests {
		if d.Platform.Architecture == runtime.GOARCH {
			if img, err = idx.Image(d.Digest); err != nil {
				t.Fatal(err)
			}
		}
	}
	if img == nil {
		t.Skipf("no image for %s in the index", runtime.GOARCH)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != "65532:65532" {
		t.Errorf("config User %q, want 65532:65532", cfg.Config.User)
	}
	entry := BinDir + "/" + hello.Name
	if len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != entry {
		t.Errorf("config Entrypoint %q, want [%s]", cfg.Config.Entrypoint, entry)
	}
	for k, want := range map[string]string{LabelVersion: testVersion, LabelSource: Source, LabelLicenses: "Apache-2.0"} {
		if got := cfg.Config.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	if !cfg.Created.Time.Equal(created) {
		t.Errorf("config created %s, want SOURCE_DATE_EPOCH %s", cfg.Created.Time, created)
	}

	files := extract(t, img)
	owners := map[string]int{"/home/nonroot": NonRoot}
	for p, f := range files {
		want := owners[p]
		if f.hdr.Uid != want || f.hdr.Gid != want {
			t.Errorf("%s owned by %d:%d, want %d:%d", p, f.hdr.Uid, f.hdr.Gid, want, want)
		}
		if !f.hdr.ModTime.Equal(created) {
			t.Errorf("%s mtime %s, want %s", p, f.hdr.ModTime, created)
		}
	}
	modes := map[string]int64{entry: 0o755, "/etc/passwd": 0o644, "/etc/group": 0o644,
		CABundle: 0o644, "/home/nonroot": 0o700, "/tmp": 0o1777}
	for p, want := range modes {
		f, ok := files[p]
		if !ok {
			t.Errorf("%s missing from the image", p)
			continue
		}
		if f.hdr.Mode != want {
			t.Errorf("%s mode %o, want %o", p, f.hdr.Mode, want)
		}
	}
	if !strings.Contains(string(files["/etc/passwd"].data), "\nnonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no nonroot 65532:\n%s", files["/etc/passwd"].data)
	}
	if !strings.Contains(string(files["/etc/group"].data), "\nnonroot:x:65532:") {
		t.Errorf("/etc/group has no nonroot 65532:\n%s", files["/etc/group"].data)
	}
	ca, err := os.ReadFile("testdata/ca-bundle.crt")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(files[CABundle].data, ca) {
		t.Errorf("%s is not the given CA bundle", CABundle)
	}

	if runtime.GOOS != "linux" {
		t.Skip("the binary is a Linux one")
	}
	bin := filepath.Join(t.TempDir(), hello.Name)
	if err := os.WriteFile(bin, files[entry].data, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --help: %v\n%s", entry, err, out)
	}
	if want := "Usage of hello-image (version " + testVersion + ")"; !strings.Contains(string(out), want) {
		t.Fatalf("%s --help printed %q, want %q", entry, out, want)
	}
}

// An archive reads back as the index it was written from, under its
// reference.
func TestArchiveRoundTrip(t *testing.T) {
	idx := bothPlatforms(t)
	file := filepath.Join(t.TempDir(), ArchiveName(hello.Name, testVersion))
	ref := Ref(Registry, hello.Name, testVersion)
	if err := WriteArchive(file, idx, ref, created); err != nil {
		t.Fatal(err)
	}
	back, gotRef, err := ReadArchive(file, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if gotRef != "ghcr.io/hetsev/hello-image:v0.1.0-test" {
		t.Errorf("archive names %q, want ghcr.io/hetsev/hello-image:v0.1.0-test", gotRef)
	}
	if a, b := digest(t, idx), digest(t, back); a != b {
		t.Fatalf("archive holds index %s, wrote %s", b, a)
	}
}

func TestNewLayerRefusesBadEntries(t *testing.T) {
	for name, entries := range map[string][]Entry{
		"twice":       {{Path: "/a", Mode: 0o644}, {Path: "a", Mode: 0o644}},
		"file parent": {{Path: "/a", Mode: 0o644}, {Path: "/a/b", Mode: 0o644}},
		"root":        {{Path: "/", Dir: true, Mode: 0o755}},
	} {
		if _, err := NewLayer(entries, created); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// The images' default CA bundle is the pinned NSS trust store, not the
// build machine's: over a hundred roots, every one a CA certificate that
// parses, and the same bytes on every call.
func TestNSSBundle(t *testing.T) {
	b := NSSBundle()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		t.Fatal("NSSBundle does not parse as PEM certificates")
	}
	n := 0
	for rest := b; ; n++ {
		var blk *pem.Block
		if blk, rest = pem.Decode(rest); blk == nil {
			break
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil || !c.IsCA {
			t.Fatalf("certificate %d: %v, CA %v", n, err, err == nil && c.IsCA)
		}
	}
	if n < 100 {
		t.Errorf("NSSBundle holds %d roots, want the NSS store's 100 or more", n)
	}
	if !bytes.Equal(b, NSSBundle()) {
		t.Error("NSSBundle differs between calls")
	}
}
