package imagebuild

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Push uploads idx and every image and blob it holds to ref (a tagged
// reference, e.g. registry.example.com/hetsev/hetsev-scaler:v0.1.0) with
// the credentials of the local Docker config (~/.docker/config.json or
// $DOCKER_CONFIG, as `crane auth login` or `docker login` write it).
// Registries on localhost or 127.0.0.1 are reached over plain HTTP.
func Push(ctx context.Context, idx v1.ImageIndex, ref string) error {
	if ref == "" {
		return fmt.Errorf("push: no image reference (set REGISTRY, e.g. make push REGISTRY=registry.example.com/hetsev)")
	}
	r, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("push: image reference %q: %w", ref, err)
	}
	if err := remote.WriteIndex(r, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return fmt.Errorf("push %s: %w", r, err)
	}
	return nil
}
