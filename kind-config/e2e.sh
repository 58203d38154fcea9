#!/usr/bin/env bash
# End-to-end check of hetsev's manifests on a kind cluster (kind-config/cluster.yaml):
# deploys manifests/ with kustomize, waits for the three programs, schedules
# manifests/examples/pod-opt-in.yaml with hetsev-scheduler and checks that the
# pod was bound to a T4 node and carries hetsev.io/gpu-index; then checks the
# admission path: manifests/examples/pod-opt-in-by-annotation.yaml (no
# schedulerName) is opted in by the webhook and placed the same way, and a
# pod with NVIDIA_VISIBLE_DEVICES=all is refused by the admission policy.
# Prints PASS. `make kind-e2e` runs it with --build.
#
# Needs Docker (a running engine), kind (v0.20+) and kubectl. NOT run on the
# project's CI machines, which have no Docker engine.
#
# Usage: kind-config/e2e.sh [--keep] [--build] [--name NAME]
#   --keep       keep the cluster afterwards (default: delete it on exit)
#   --build      build the three images with kind-config/Dockerfile first
#                (needed while ghcr.io/hetsev/* is not published)
#   --name NAME  kind cluster name (default: hetsev-e2e)
# A cluster of that name that already exists is reused and never deleted.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

KEEP=0
BUILD=0
NAME=hetsev-e2e
while [[ $# -gt 0 ]]; do
  case "$1" in
    --keep) KEEP=1 ;;
    --build) BUILD=1 ;;
    --name) NAME="${2:?--name needs a value}"; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done

NS=hetsev-system
TEST_NS=hetsev-e2e
POD=resnet50-opt-in
TAG="v$(tr -d "[:space:]" < VERSION)"   # the manifests' tag (pkg/version test)
PROGRAMS=(scheduler metrics-adapter scaler)   # directories under cmd/
image_of() { echo "ghcr.io/hetsev/hetsev-$1:${TAG}"; }
DEPLOYMENTS=(hetsev-scheduler hetsev-metrics-adapter hetsev-scaler)

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

# --- prerequisites ---------------------------------------------------------
for tool in docker kind kubectl; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool not found in PATH"
done
docker info >/dev/null 2>&1 || die "cannot reach a Docker engine (docker info failed)"

K=(kubectl --context "kind-${NAME}")

CREATED=0
HAVE_CLUSTER=0
diagnose() {
  log "diagnostics"
  "${K[@]}" get nodes -L nvidia.com/gpu.product,nvidia.com/gpu.count,nvidia.com/gpu.memory || true
  "${K[@]}" -n "$NS" get deployments,pods -o wide || true
  "${K[@]}" get apiservices v1beta2.custom.metrics.k8s.io v1beta1.custom.metrics.k8s.io || true
  for d in "${DEPLOYMENTS[@]}"; do
    echo "--- logs of deployment/$d" >&2
    "${K[@]}" -n "$NS" logs "deployment/$d" --all-containers --tail=50 || true
  done
  "${K[@]}" -n "$TEST_NS" describe pod "$POD" || true
}
cleanup() {
  local rc=$?
  if [[ $rc -ne 0 && $HAVE_CLUSTER -eq 1 ]]; then diagnose; fi
  if [[ $CREATED -eq 1 && $KEEP -eq 0 ]]; then
    log "deleting kind cluster $NAME (pass --keep to keep it)"
    kind delete cluster --name "$NAME" || true
  elif [[ $CREATED -eq 1 ]]; then
    log "kept kind cluster $NAME (kubectl context kind-$NAME); delete it with: kind delete cluster --name $NAME"
  fi
  exit "$rc"
}
trap cleanup EXIT

# --- images ----------------------------------------------------------------
if [[ $BUILD -eq 1 ]]; then
  for prog in "${PROGRAMS[@]}"; do
    log "building $(image_of "$prog")"
    docker build -f kind-config/Dockerfile --build-arg "PROGRAM=${prog}" -t "$(image_of "$prog")" .
  done
fi

# --- cluster ---------------------------------------------------------------
if kind get clusters 2>/dev/null | grep -qx "$NAME"; then
  log "reusing existing kind cluster $NAME (it will not be deleted)"
else
  log "creating kind cluster $NAME"
  CREATED=1
  kind create cluster --name "$NAME" --config kind-config/cluster.yaml --wait 180s
fi
HAVE_CLUSTER=1

for prog in "${PROGRAMS[@]}"; do
  img=$(image_of "$prog")
  if docker image inspect "$img" >/dev/null 2>&1; then
    log "loading $img into the cluster"
    kind load docker-image --name "$NAME" "$img"
  else
    log "WARNING: $img is not in the local Docker image store; the nodes will try to pull it (use --build while it is unpublished)"
  fi
done

# --- hetsev ----------------------------------------------------------------
log "kubectl apply -k manifests/"
"${K[@]}" apply -k manifests/
"${K[@]}" wait --for=condition=Established crd/modelservices.hetsev.io --timeout=60s

for d in "${DEPLOYMENTS[@]}"; do
  log "waiting for deployment/$d to be Available"
  "${K[@]}" -n "$NS" wait --for=condition=Available "deployment/$d" --timeout=300s
done

log "waiting for the custom metrics API"
"${K[@]}" wait --for=condition=Available apiservice/v1beta2.custom.metrics.k8s.io --timeout=120s
"${K[@]}" get --raw /apis/custom.metrics.k8s.io/v1beta2 >/dev/null

# --- a pod placed by hetsev-scheduler ---------------------------------------
log "scheduling manifests/examples/pod-opt-in.yaml in namespace $TEST_NS"
"${K[@]}" create namespace "$TEST_NS" --dry-run=client -o yaml | "${K[@]}" apply -f -
"${K[@]}" -n "$TEST_NS" delete pod "$POD" --ignore-not-found --wait=true
"${K[@]}" -n "$TEST_NS" apply -f manifests/examples/pod-opt-in.yaml
"${K[@]}" -n "$TEST_NS" wait --for=condition=PodScheduled "pod/$POD" --timeout=120s

node=$("${K[@]}" -n "$TEST_NS" get pod "$POD" -o jsonpath='{.spec.nodeName}')
[[ -n "$node" ]] || die "pod $POD has no spec.nodeName"
product=$("${K[@]}" get node "$node" -o jsonpath='{.metadata.labels.nvidia\.com/gpu\.product}')
[[ "$product" == "Tesla-T4" ]] || die "pod $POD was bound to $node ($product), want a Tesla-T4 node"
scheduler=$("${K[@]}" -n "$TEST_NS" get pod "$POD" -o jsonpath='{.spec.schedulerName}')
[[ "$scheduler" == "hetsev-scheduler" ]] || die "pod $POD has schedulerName $scheduler"
index=$("${K[@]}" -n "$TEST_NS" get pod "$POD" -o jsonpath='{.metadata.annotations.hetsev\.io/gpu-index}')
[[ "$index" =~ ^[0-9]+$ ]] || die "pod $POD: hetsev.io/gpu-index is '${index}', want a GPU index"
count=$("${K[@]}" get node "$node" -o jsonpath='{.metadata.labels.nvidia\.com/gpu\.count}')
(( index < count )) || die "pod $POD: hetsev.io/gpu-index $index is out of range for $count GPUs on $node"

log "pod $POD bound to $node ($product) with hetsev.io/gpu-index=$index"

# --- the admission webhook and policy ---------------------------------------
log "waiting for hetsev-scaler to inject the webhook's caBundle"
for _ in $(seq 60); do
  ca=$("${K[@]}" get mutatingwebhookconfiguration hetsev-scheduler-selection -o jsonpath='{.webhooks[0].clientConfig.caBundle}')
  [[ -n "$ca" ]] && break
  sleep 2
done
[[ -n "$ca" ]] || die "MutatingWebhookConfiguration hetsev-scheduler-selection has no caBundle"

POD2=resnet50-by-annotation
"${K[@]}" -n "$TEST_NS" delete pod "$POD2" --ignore-not-found --wait=true
"${K[@]}" -n "$TEST_NS" apply -f manifests/examples/pod-opt-in-by-annotation.yaml
scheduler=$("${K[@]}" -n "$TEST_NS" get pod "$POD2" -o jsonpath='{.spec.schedulerName}')
[[ "$scheduler" == "hetsev-scheduler" ]] || die "pod $POD2 has schedulerName $scheduler: the webhook did not opt it in"
path=$("${K[@]}" -n "$TEST_NS" get pod "$POD2" -o jsonpath='{.spec.containers[0].env[?(@.name=="NVIDIA_VISIBLE_DEVICES")].valueFrom.fieldRef.fieldPath}')
[[ "$path" == "metadata.annotations['hetsev.io/gpu-index']" ]] || die "pod $POD2: NVIDIA_VISIBLE_DEVICES from '$path'"
"${K[@]}" -n "$TEST_NS" wait --for=condition=PodScheduled "pod/$POD2" --timeout=120s
index=$("${K[@]}" -n "$TEST_NS" get pod "$POD2" -o jsonpath='{.metadata.annotations.hetsev\.io/gpu-index}')
[[ "$index" =~ ^[0-9]+$ ]] || die "pod $POD2: hetsev.io/gpu-index is '${index}'"
log "pod $POD2 opted in by the webhook, hetsev.io/gpu-index=$index"

if out=$("${K[@]}" -n "$TEST_NS" run grab-all-gpus --image=busybox --restart=Never \
    --env=NVIDIA_VISIBLE_DEVICES=all --dry-run=server -o name 2>&1); then
  die "a pod with NVIDIA_VISIBLE_DEVICES=all was admitted: $out"
fi
[[ "$out" == *"must come from the downward API"* ]] || die "unexpected refusal: $out"
log "a literal NVIDIA_VISIBLE_DEVICES is refused: $out"
echo PASS
