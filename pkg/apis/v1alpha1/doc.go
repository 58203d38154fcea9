// Package v1alpha1 holds the hetsev.io/v1alpha1 API: ModelService, one
// inference service with a latency SLO that hetsev-scaler serves from one
// Deployment per GPU type. The scaler reads objects through the dynamic
// client and converts them to these types.
//
// The kubebuilder markers on the types are the source of truth for the CRD:
// `make generate` writes manifests/crd-modelservice.yaml and
// zz_generated.deepcopy.go from them (controller-gen), and `make verify`
// fails when either is stale. Edit the types, never the generated files.
//
// +kubebuilder:object:generate=true
// +groupName=hetsev.io
package v1alpha1
