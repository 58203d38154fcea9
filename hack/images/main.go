// Command images builds hetsev's container images without a container
// engine (`make images`) and pushes them (`make push`); the work is done by
// internal/imagebuild.
//
//	go run ./hack/images --version 0.1.0 [--out images] [--platforms linux/amd64,linux/arm64]
//	go run ./hack/images --version 0.1.0 --push registry.example.com/hetsev
//
// Build: for each program of imagebuild.Programs (or of --programs, which
// may also name imagebuild.NodePrograms), static binaries for every
// platform and an OCI image index of their images, written to
// <out>/<program>-<version>.oci.tar (an OCI image layout tarball; load it
// with `podman load -i`, `skopeo copy oci-archive:FILE ...` or unpack it
// for `crane push`), named <registry>/<program>:v<version> inside. Every
// timestamp is --source-date-epoch (default $SOURCE_DATE_EPOCH, else 0).
// It prints one line per program: the archive, the reference and the
// index digest.
//
// Push: uploads each archive of <out> for --version to
// <REGISTRY>/<program>:v<version>, the same index and digests.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hetsev/hetsev/internal/imagebuild"
)

func main() {
	version := flag.String("version", "", "the version (hack/version.sh): linked into the binaries, the label org.opencontainers.image.version and the tag v<version>; required")
	out := flag.String("out", "images", "directory of the archives")
	platforms := flag.String("platforms", strings.Join(imagebuild.Platforms, ","), "GOOS/GOARCH pairs, comma-separated")
	programs := flag.String("programs", "", "programs to build, comma-separated (default: hetsev's three; the e2e nodes' pause image only when named)")
	registry := flag.String("registry", imagebuild.Registry, "registry/namespace the archives name the images in")
	push := flag.String("push", "", "push the archives of --version in --out to this registry/namespace instead of building")
	epoch := flag.String("source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "every timestamp in the images, in seconds since 1970 (empty: 0)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *version, *out, *platforms, *programs, *registry, *push, *epoch, isSet("push")); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

// isSet reports whether the flag was given on the command line.
func isSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func run(ctx context.Context, version, out, platforms, programs, registry, push, epoch string, pushMode bool) error {
	if version == "" {
		return fmt.Errorf("--version is required (make images passes hack/version.sh's)")
	}
	progs, err := selectPrograms(programs)
	if err != nil {
		return err
	}
	if pushMode {
		if push == "" {
			return fmt.Errorf("no registry to push to: make push REGISTRY=registry.example.com/hetsev")
		}
		return pushAll(ctx, progs, version, out, push)
	}
	created, err := imagebuild.ParseSourceDateEpoch(epoch)
	if err != nil {
		return err
	}
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	for _, p := range progs {
		idx, err := imagebuild.BuildIndex(ctx, p, imagebuild.Options{
			GoTool:     os.Getenv("GO"),
			ModuleRoot: root,
			Version:    version,
			Created:    created,
			Platforms:  strings.Split(platforms, ","),
		})
		if err != nil {
			return err
		}
		file := filepath.Join(out, imagebuild.ArchiveName(p.Name, version))
		ref := imagebuild.Ref(registry, p.Name, version)
		if err := imagebuild.WriteArchive(file, idx, ref, created); err != nil {
			return err
		}
		d, err := idx.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("%s\t%s@%s\n", file, ref, d)
	}
	return nil
}

func pushAll(ctx context.Context, progs []imagebuild.Program, version, out, registry string) error {
	for _, p := range progs {
		file := filepath.Join(out, imagebuild.ArchiveName(p.Name, version))
		dir, err := os.MkdirTemp("", "push-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		idx, _, err := imagebuild.ReadArchive(file, dir)
		if err != nil {
			return fmt.Errorf("%w (make images builds it)", err)
		}
		ref := imagebuild.Ref(registry, p.Name, version)
		if err := imagebuild.Push(ctx, idx, ref); err != nil {
			return err
		}
		d, err := idx.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("pushed %s@%s\n", ref, d)
	}
	return nil
}

func selectPrograms(list string) ([]imagebuild.Program, error) {
	if list == "" {
		return imagebuild.Programs, nil
	}
	var out []imagebuild.Program
	for _, n := range strings.Split(list, ",") {
		found := false
		for _, p := range slices.Concat(imagebuild.Programs, imagebuild.NodePrograms) {
			if p.Name == n {
				out, found = append(out, p), true
			}
		}
		if !found {
			return nil, fmt.Errorf("--programs: unknown program %q", n)
		}
	}
	return out, nil
}
