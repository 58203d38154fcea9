package imagebuild

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Entry is one file or directory of a layer, by its absolute path in the
// image ("/etc/passwd"). Owner and mode are the entry's own: a layer never
// takes them from the build machine.
type Entry struct {
	Path string
	// Dir makes a directory; Data is then ignored.
	Dir  bool
	Data []byte
	// Mode is the permission bits (and sticky bit), e.g. 0o755.
	Mode     int64
	UID, GID int
}

// NewLayer returns a gzip-compressed OCI layer of entries: sorted by path,
// every parent directory present before its children (added as root-owned
// 0755 when entries has none), each header with modTime as its mtime,
// numeric owners only (no user or group names) and the format Go's
// archive/tar picks for these headers (USTAR, times in whole seconds). The same entries and modTime
// give the same bytes, hence the same digest.
func NewLayer(entries []Entry, modTime time.Time) (v1.Layer, error) {
	b, err := layerTar(entries, modTime)
	if err != nil {
		return nil, err
	}
	var gz bytes.Buffer
	// gzip's header has no name and a zero mtime unless set: only the
	// content decides the bytes.
	zw, err := gzip.NewWriterLevel(&gz, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	compressed := gz.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(compressed)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// layerTar is the uncompressed tar of NewLayer.
func layerTar(entries []Entry, modTime time.Time) ([]byte, error) {
	byPath := map[string]Entry{}
	for _, e := range entries {
		p := path.Clean("/" + e.Path)
		if p == "/" {
			return nil, fmt.Errorf("layer entry %q: not a file or directory below /", e.Path)
		}
		if _, dup := byPath[p]; dup {
			return nil, fmt.Errorf("layer entry %s: given twice", p)
		}
		e.Path = p
		byPath[p] = e
	}
	// Parent directories the entries did not list.
	for p := range byPath {
		for d := path.Dir(p); d != "/"; d = path.Dir(d) {
			if _, ok := byPath[d]; !ok {
				byPath[d] = Entry{Path: d, Dir: true, Mode: 0o755}
			}
		}
	}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	// Sorted by path, a directory ("/etc") before what it holds
	// ("/etc/group"): tar readers create parents before children.
	sort.Slice(paths, func(i, j int) bool { return pathLess(paths[i], paths[j]) })

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		e := byPath[p]
		if parent, ok := byPath[path.Dir(p)]; ok && !parent.Dir {
			return nil, fmt.Errorf("layer entry %s: its parent %s is a file", p, parent.Path)
		}
		h := &tar.Header{
			Name:    strings.TrimPrefix(p, "/"),
			Mode:    e.Mode,
			Uid:     e.UID,
			Gid:     e.GID,
			ModTime: modTime,
		}
		if e.Dir {
			h.Typeflag = tar.TypeDir
			h.Name += "/"
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", p, err)
		}
		if !e.Dir {
			if _, err := tw.Write(e.Data); err != nil {
				return nil, fmt.Errorf("layer entry %s: %w", p, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// pathLess orders paths component by component, so that "/etc/ssl" and
// everything below it come before "/etc/ssl-other".
func pathLess(a, b string) bool {
	return strings.ReplaceAll(a, "/", "\x00") < strings.ReplaceAll(b, "/", "\x00")
}
