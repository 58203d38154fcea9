// Package helmchart loads, lints and renders hetsev's Helm chart
// (charts/hetsev) with Helm's Go SDK, as `helm lint` and `helm template`
// would, for the chart's tests: the unit tests here (lint, schema, the
// defaults against `kustomize build manifests/`) and test/integration's
// apply of the rendered objects to a real kube-apiserver.
package helmchart
