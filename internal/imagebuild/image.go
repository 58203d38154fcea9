package imagebuild

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The OCI labels every image carries.
const (
	LabelVersion  = "org.opencontainers.image.version"
	LabelSource   = "org.opencontainers.image.source"
	LabelLicenses = "org.opencontainers.image.licenses"
	LabelTitle    = "org.opencontainers.image.title"
)

// User is the image config's User: the nonroot uid and gid.
var User = fmt.Sprintf("%d:%d", NonRoot, NonRoot)

// Spec is one program's image for one platform.
type Spec struct {
	Program Program
	// Platform is GOOS/GOARCH, e.g. "linux/arm64".
	Platform string
	// Binary is the program's executable for Platform.
	Binary []byte
	// CACerts is the CA bundle written to CABundle; used only when
	// Program.CACerts is set, and then required.
	CACerts []byte
	// Version is the org.opencontainers.image.version label.
	Version string
	// Created is every timestamp in the image: the config's and history's
	// created and every tar entry's mtime (SOURCE_DATE_EPOCH).
	Created time.Time
}

// Image builds the OCI image of s on an empty base: a layer with
// /etc/passwd and /etc/group (root, and nonroot 65532 whose home
// /home/nonroot it owns), /tmp (1777) and the CA bundle where the program
// needs one, then a layer with the binary at BinDir/<name>, root-owned and
// 0755 so the program cannot rewrite itself. Config: User 65532:65532,
// Entrypoint the binary, WorkingDir /home/nonroot, the OCI labels.
func Image(s Spec) (v1.Image, error) {
	goos, goarch, ok := strings.Cut(s.Platform, "/")
	if !ok || goos == "" || goarch == "" {
		return nil, fmt.Errorf("platform %q: want GOOS/GOARCH, e.g. linux/amd64", s.Platform)
	}
	if len(s.Binary) == 0 {
		return nil, fmt.Errorf("%s %s: empty binary", s.Program.Name, s.Platform)
	}
	if s.Program.CACerts && len(s.CACerts) == 0 {
		return nil, fmt.Errorf("%s: needs a CA bundle and none was given", s.Program.Name)
	}
	files := []Entry{
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte(
			"root:x:0:0:root:/root:/sbin/nologin\n" +
				fmt.Sprintf("nonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", NonRoot, NonRoot))},
		{Path: "/etc/group", Mode: 0o644, Data: []byte(
			"root:x:0:\n" + fmt.Sprintf("nonroot:x:%d:\n", NonRoot))},
		{Path: "/home/nonroot", Dir: true, Mode: 0o700, UID: NonRoot, GID: NonRoot},
		{Path: "/tmp", Dir: true, Mode: 0o1777},
	}
	if s.Program.CACerts {
		files = append(files, Entry{Path: CABundle, Mode: 0o644, Data: s.CACerts})
	}
	base, err := NewLayer(files, s.Created)
	if err != nil {
		return nil, err
	}
	entrypoint := BinDir + "/" + s.Program.Name
	bin, err := NewLayer([]Entry{{Path: entrypoint, Mode: 0o755, Data: s.Binary}}, s.Created)
	if err != nil {
		return nil, err
	}

	created := v1.Time{Time: s.Created.UTC()}
	cfg := &v1.ConfigFile{
		Architecture: goarch,
		OS:           goos,
		Created:      created,
		Config: v1.Config{
			User:       User,
			Entrypoint: []string{entrypoint},
			Env:        []string{"PATH=" + BinDir + ":/usr/bin:/bin"},
			WorkingDir: "/home/nonroot",
			Labels: map[string]string{
				LabelVersion:  s.Version,
				LabelSource:   Source,
				LabelLicenses: License,
				LabelTitle:    s.Program.Name,
			},
		},
		RootFS: v1.RootFS{Type: "layers"},
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, err
	}
	return mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: created,
			CreatedBy: "imagebuild: /etc/passwd, /etc/group, /home/nonroot, /tmp" + caNote(s.Program)}},
		mutate.Addendum{Layer: bin, History: v1.History{Created: created,
			CreatedBy: "imagebuild: " + entrypoint}},
	)
}

func caNote(p Program) string {
	if p.CACerts {
		return ", " + CABundle
	}
	return ""
}

// Index is the OCI image index of one image per platform, in the order
// given, each descriptor naming its platform.
func Index(images []v1.Image) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var adds []mutate.IndexAddendum
	for _, img := range images {
		cfg, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: cfg.OS, Architecture: cfg.Architecture},
		}})
	}
	return mutate.AppendManifests(idx, adds...), nil
}

// Options are what BuildIndex needs besides the program.
type Options struct {
	// GoTool is the go command; "go" when empty.
	GoTool string
	// ModuleRoot is the repository root, where go build runs.
	ModuleRoot string
	// Version is linked into pkg/version and labels the images.
	Version string
	// Created is every timestamp in the images (SOURCE_DATE_EPOCH).
	Created time.Time
	// Platforms are GOOS/GOARCH pairs; Platforms (amd64 and arm64) when
	// empty.
	Platforms []string
	// CABundle is the file the CA bundle is read from, for programs with
	// CACerts; NSSBundle, pinned by go.mod, when empty.
	CABundle string
	// WorkDir holds the binaries while they are built; a temporary
	// directory when empty.
	WorkDir string
}

// BuildIndex builds p for every platform (BuildBinary) and returns the
// image index of its images.
func BuildIndex(ctx context.Context, p Program, o Options) (v1.ImageIndex, error) {
	platforms := o.Platforms
	if len(platforms) == 0 {
		platforms = Platforms
	}
	var ca []byte
	if p.CACerts {
		ca = NSSBundle()
		if o.CABundle != "" {
			var err error
			if ca, err = os.ReadFile(o.CABundle); err != nil {
				return nil, fmt.Errorf("%s: the CA bundle: %w", p.Name, err)
			}
		}
	}
	work := o.WorkDir
	if work == "" {
		dir, err := os.MkdirTemp("", "imagebuild-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		work = dir
	}
	var images []v1.Image
	for _, platform := range platforms {
		out := filepath.Join(work, p.Name+"-"+strings.ReplaceAll(platform, "/", "-"))
		if err := BuildBinary(ctx, o.GoTool, o.ModuleRoot, p.Package, platform, o.Version, out); err != nil {
			return nil, err
		}
		bin, err := os.ReadFile(out)
		if err != nil {
			return nil, err
		}
		img, err := Image(Spec{Program: p, Platform: platform, Binary: bin, CACerts: ca, Version: o.Version, Created: o.Created})
		if err != nil {
			return nil, err
		}
		images = append(images, img)
	}
	return Index(images)
}
