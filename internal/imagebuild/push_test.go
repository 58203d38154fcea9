package imagebuild

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Push uploads the index so that the registry serves the same digest, for
// both platforms; an empty reference is refused with the fix.
func TestPush(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	idx := bothPlatforms(t)
	ref := Ref(strings.TrimPrefix(srv.URL, "http://")+"/hetsev", hello.Name, testVersion)
	if err := Push(context.Background(), idx, ref); err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	got, err := remote.Index(r)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := digest(t, idx), digest(t, got); a != b {
		t.Fatalf("registry serves %s as %s, pushed %s", ref, b, a)
	}
	m, err := got.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != len(Platforms) {
		t.Fatalf("registry's index has %d manifests, want %d", len(m.Manifests), len(Platforms))
	}

	if err := Push(context.Background(), idx, ""); err == nil || !strings.Contains(err.Error(), "REGISTRY") {
		t.Fatalf("push without a reference: %v, want an error naming REGISTRY", err)
	}
}
