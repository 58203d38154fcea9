package imagebuild

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// Annotations of the image index's entry in an archive's index.json, as
// OCI tools read them: containerd, nerdctl and podman load name the image
// by io.containerd.image.name (the full reference), skopeo's
// oci-archive:FILE:TAG selects by org.opencontainers.image.ref.name (the
// tag).
const (
	AnnotationRefName       = "org.opencontainers.image.ref.name"
	AnnotationContainerName = "io.containerd.image.name"
)

// WriteArchive writes idx as an OCI image layout tarball at file: oci-layout,
// index.json with one entry (idx, annotated with ref's full name and its
// tag) and blobs/sha256/*. Entries are sorted, root-owned, 0644 or 0755,
// with mtime modTime, so the same index gives the same bytes. ref is a
// tagged reference, e.g. ghcr.io/hetsev/hetsev-scheduler:v0.1.0.
func WriteArchive(file string, idx v1.ImageIndex, ref string, modTime time.Time) error {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	dir, err := os.MkdirTemp("", "oci-layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		AnnotationRefName:       tag.TagStr(),
		AnnotationContainerName: tag.Name(),
	})); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	tmp := file + ".tmp"
	if err := tarDir(tmp, dir, modTime); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, file)
}

// tarDir writes the tree under dir as a tar at file with fixed owners,
// modes and mtimes, entries sorted by path.
func tarDir(file, dir string, modTime time.Time) error {
	var paths []string
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			paths = append(paths, filepath.ToSlash(rel))
		}
		return nil
	}); err != nil {
		return err
	}
	sort.Slice(paths, func(i, j int) bool { return pathLess(paths[i], paths[j]) })

	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	for _, rel := range paths {
		full := filepath.Join(dir, filepath.FromSlash(rel))
		st, err := os.Stat(full)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: rel, ModTime: modTime, Mode: 0o644, Typeflag: tar.TypeReg, Size: st.Size()}
		if st.IsDir() {
			h.Name, h.Mode, h.Typeflag, h.Size = rel+"/", 0o755, tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if st.IsDir() {
			continue
		}
		src, err := os.Open(full)
		if err != nil {
			return err
		}
		_, err = io.Copy(tw, src)
		src.Close()
		if err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}

// ReadArchive unpacks the OCI image layout tarball file into dir (which
// must outlive the returned index: its blobs are read from there) and
// returns the image index of its index.json's single entry, with that
// entry's io.containerd.image.name (or ref.name) annotation.
func ReadArchive(file, dir string) (v1.ImageIndex, string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", file, err)
		}
		clean := path.Clean(h.Name)
		if !fs.ValidPath(clean) {
			return nil, "", fmt.Errorf("%s: entry %q leaves the layout", file, h.Name)
		}
		dst := filepath.Join(dir, filepath.FromSlash(clean))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return nil, "", err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return nil, "", err
			}
			out, err := os.Create(dst)
			if err != nil {
				return nil, "", err
			}
			_, err = io.Copy(out, tr)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return nil, "", err
			}
		default:
			return nil, "", fmt.Errorf("%s: entry %q is neither a file nor a directory", file, h.Name)
		}
	}
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, "", fmt.Errorf("%s: not an OCI image layout: %w", file, err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		return nil, "", err
	}
	if len(m.Manifests) != 1 {
		return nil, "", fmt.Errorf("%s: index.json has %d entries, want 1", file, len(m.Manifests))
	}
	d := m.Manifests[0]
	if !d.MediaType.IsIndex() {
		return nil, "", fmt.Errorf("%s: index.json's entry is a %s, want an image index", file, d.MediaType)
	}
	idx, err := top.ImageIndex(d.Digest)
	if err != nil {
		return nil, "", err
	}
	ref := d.Annotations[AnnotationContainerName]
	if ref == "" {
		ref = d.Annotations[AnnotationRefName]
	}
	return idx, ref, nil
}

// ArchiveName is the file name `make images` gives a program's archive:
// <program>-<version>.oci.tar.
func ArchiveName(program, version string) string {
	return program + "-" + version + ".oci.tar"
}

// Ref is the image reference of program at version in registry, e.g.
// ghcr.io/hetsev/hetsev-scheduler:v0.1.0 (the tag is "v" + version).
func Ref(registry, program, version string) string {
	return strings.TrimSuffix(registry, "/") + "/" + program + ":v" + version
}
