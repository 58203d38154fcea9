#!/usr/bin/env bash
# make e2e: hetsev on the local control plane with real nodes, each a
# kubelet with containerd and runc in a network namespace of its own on a
# bridge this script creates. Needs root. Every host change is listed in
# test/e2e/README.md and undone by hack/e2e/teardown.sh, which runs on
# EXIT, INT and TERM, and before set-up (a run killed with SIGKILL leaves
# its state for the next run, or `make e2e-clean`, to remove).
set -euo pipefail
cd "$(dirname "$0")/../.."

if [[ $(id -u) -ne 0 ]]; then
	echo "make e2e: needs root (kubelet, containerd, runc and network namespaces)" >&2
	exit 1
fi
mkdir -p /run
exec 9>/run/hetsev-e2e.lock
if ! flock -n 9; then
	echo "make e2e: another make e2e holds /run/hetsev-e2e.lock; not starting" >&2
	exit 1
fi

set -a
# shellcheck source=config/addresses.env
source hack/e2e/config/addresses.env
set +a
export E2E_DIR=${E2E_DIR:-/var/lib/hetsev-e2e}
export E2E_NODES=${E2E_NODES:-2}

hack/e2e/install-node-packages.sh

# Logs of the nodes and control plane survive the teardown in E2E_LOGS.
export E2E_LOGS=${E2E_LOGS:-$PWD/_output/e2e-logs}
save_logs() {
	rm -rf "$E2E_LOGS" && mkdir -p "$E2E_LOGS"
	(cd "$E2E_DIR" 2>/dev/null && find . -maxdepth 2 -name '*.log' -exec cp --parents {} "$E2E_LOGS" \;) || true
}
trap 'save_logs; hack/e2e/teardown.sh' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
hack/e2e/teardown.sh

mkdir -p "$E2E_DIR"
# The sysctls the kubelet sets at start (not namespaced), recorded once:
# a record left by an interrupted teardown is the original state.
if [[ ! -e $E2E_DIR/../hetsev-e2e.sysctls ]]; then
	for k in vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops \
		kernel.keys.root_maxkeys kernel.keys.root_maxbytes; do
		echo "$k=$(sysctl -n "$k")"
	done >"$E2E_DIR/../hetsev-e2e.sysctls"
fi
nft list ruleset >"$E2E_DIR/nft.before" 2>/dev/null || true
# Fixed paths the kubelet and the shims create; removed afterwards if this
# run created them.
created=$E2E_DIR/../hetsev-e2e.created
for p in /var/log/containers /run/containerd; do
	[[ -e $p ]] || echo "$p"
done >>"$created"

ip link add "$E2E_BRIDGE" type bridge
ip addr add "$HOST_IP/${NODE_NETWORK#*/}" dev "$E2E_BRIDGE"
ip link set "$E2E_BRIDGE" up
for i in $(seq 1 "$E2E_NODES"); do
	ns=hetsev-e2e-node$i
	ip netns add "$ns"
	ip link add "e2e-veth$i" type veth peer name eth0 netns "$ns"
	ip link set "e2e-veth$i" master "$E2E_BRIDGE" up
	ip -n "$ns" link set lo up
	ip -n "$ns" addr add "$NODE_IP_PREFIX$i/${NODE_NETWORK#*/}" dev eth0
	ip -n "$ns" link set eth0 up
	ip route add "10.88.$i.0/24" via "$NODE_IP_PREFIX$i" dev "$E2E_BRIDGE"
done
# Each node's cgroup root (the kubelet's cgroupRoot) in every v1 hierarchy:
# the kubelet requires it to exist. A new cpuset cgroup starts with no CPUs
# and memory nodes, so it gets its parent's.
for i in $(seq 1 "$E2E_NODES"); do
	while read -r h; do
		d=$h/hetsev-e2e-node$i
		mkdir -p "$d"
		if [[ -e $h/cpuset.cpus ]]; then
			cat "$h/cpuset.cpus" >"$d/cpuset.cpus"
			cat "$h/cpuset.mems" >"$d/cpuset.mems"
		fi
	done < <(awk '$3 == "cgroup" {print $2}' /proc/self/mounts)
done
# Each node reaches the other nodes' pods through their node address.
for i in $(seq 1 "$E2E_NODES"); do
	for j in $(seq 1 "$E2E_NODES"); do
		[[ $i == "$j" ]] && continue
		ip -n "hetsev-e2e-node$i" route add "10.88.$j.0/24" via "$NODE_IP_PREFIX$j" dev eth0
	done
done

echo "make e2e: bridge $E2E_BRIDGE ($HOST_IP) and $E2E_NODES node namespaces up; running test/e2e"
go test -tags e2e -count=1 -timeout "${E2E_TIMEOUT:-30m}" -v ./test/e2e/ ${E2E_RUN:+-run "$E2E_RUN"}
