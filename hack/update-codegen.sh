#!/usr/bin/env bash
# Regenerates deepcopy, conversion and defaulting code of hetsev's
# scheduler-plugin arguments (pkg/apis/config and pkg/apis/config/v1) with
# k8s.io/code-generator at the version of the Kubernetes libraries hetsev
# builds with. `make generate-args` runs it; commit what it writes.
# hack/boilerplate.go.txt, the header the generators put on each file, is
# empty: hetsev's sources carry no licence header.
set -o errexit -o nounset -o pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

CODEGEN_VERSION=${CODEGEN_VERSION:-v0.36.3}
MODULE=github.com/hetsev/hetsev
HEADER=hack/boilerplate.go.txt
GO=${GO:-go}

gen() { "${GO}" run "k8s.io/code-generator/cmd/$1@${CODEGEN_VERSION}" "${@:2}"; }

gen deepcopy-gen --go-header-file "${HEADER}" --output-file zz_generated.deepcopy.go \
  "${MODULE}/pkg/apis/config" "${MODULE}/pkg/apis/config/v1"
gen defaulter-gen --go-header-file "${HEADER}" --output-file zz_generated.defaults.go \
  "${MODULE}/pkg/apis/config/v1"
gen conversion-gen --go-header-file "${HEADER}" --output-file zz_generated.conversion.go \
  "${MODULE}/pkg/apis/config/v1"
