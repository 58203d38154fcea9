package kubectlhetsev

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
)

// viewerRole is the ClusterRole hetsev installs (manifests/user-roles.yaml,
// the chart's templates/user-roles.yaml) that grants read access to every
// object kubectl-hetsev reads; the Forbidden message says how to bind it.
const viewerRole = "hetsev-viewer"

// apiError turns an API error of verb on resource (plural, e.g.
// "modelservices") into a message for the user: the object not found,
// the RBAC it lacks with the ClusterRole that grants it, or a resource
// the API server does not serve. key is "namespace/name" for a get, ""
// for a list. Other errors are returned wrapped with the request.
func apiError(err error, verb, resource, kind, key string) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err) && key != "":
		return fmt.Errorf("%s %s not found", kind, key)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("forbidden: you may not %s %s (%v)\nask a cluster admin to bind you ClusterRole %s, which hetsev installs:\n  kubectl create clusterrolebinding %s-$USER --clusterrole=%s --user=$USER",
			verb, resource, err, viewerRole, viewerRole, viewerRole)
	case meta.IsNoMatchError(err):
		return fmt.Errorf("the API server does not serve %s: %v (for modelservices, install hetsev's CRD, manifests/crd-modelservice.yaml)", resource, err)
	default:
		if key != "" {
			return fmt.Errorf("%s %s %s: %w", verb, kind, key, err)
		}
		return fmt.Errorf("%s %s: %w", verb, resource, err)
	}
}
