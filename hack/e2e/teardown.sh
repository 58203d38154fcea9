#!/usr/bin/env bash
# Undoes every host change of `make e2e` (test/e2e/README.md lists them),
# in the reverse order of set-up. Idempotent: each step skips what is
# already gone, so it can run before set-up, after a failed run, and again
# after an interrupted teardown (`make e2e-clean`).
set -uo pipefail
cd "$(dirname "$0")/../.."
set -a
# shellcheck source=config/addresses.env
source hack/e2e/config/addresses.env
set +a
E2E_DIR=${E2E_DIR:-/var/lib/hetsev-e2e}
record=$E2E_DIR/../hetsev-e2e.sysctls

# 1. Processes: kubelets, containerd, shims, plugins (each names E2E_DIR in
# its arguments), then whatever runs in the nodes' cgroups (containers).
cgroup_dirs() {
	for h in /sys/fs/cgroup/*/; do
		for d in "$h"hetsev-e2e-*; do
			[[ -d $d ]] && echo "$d"
		done
	done
}
kill_all() {
	local sig=$1
	pkill "-$sig" -f -- "$E2E_DIR/" 2>/dev/null
	while read -r d; do
		find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill "-$sig" 2>/dev/null
	done < <(cgroup_dirs)
	for ns in $(ip netns list 2>/dev/null | awk '/^hetsev-e2e-/ {print $1}'); do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill "-$sig" 2>/dev/null
	done
}
kill_all TERM
for _ in $(seq 1 20); do
	pgrep -f -- "$E2E_DIR/" >/dev/null || break
	sleep 0.5
done
kill_all KILL
sleep 0.5

# 2. Mounts under E2E_DIR (the kubelet's root dir bind mount, pod volumes,
# container root filesystems, pod network namespaces), deepest first.
if [[ -d $E2E_DIR ]]; then
	awk -v d="$E2E_DIR/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r | while read -r m; do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || echo "teardown: cannot unmount $m" >&2
	done
fi

# 3. cgroups <hierarchy>/hetsev-e2e-<node>/..., deepest first.
while read -r d; do
	find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
	[[ -d $d ]] && echo "teardown: cannot remove cgroup $d" >&2
done < <(cgroup_dirs)

# 4. Network: node namespaces (their veths, CNI bridges and chains go with
# them), then the bridge with its address and routes.
for ns in $(ip netns list 2>/dev/null | awk '/^hetsev-e2e-/ {print $1}'); do
	ip netns del "$ns"
done
if ip link show "$E2E_BRIDGE" >/dev/null 2>&1; then
	ip link del "$E2E_BRIDGE"
fi

# 5. Sysctls the kubelet set, back to their recorded values.
if [[ -f $record ]]; then
	while IFS== read -r k v; do
		[[ -n $k ]] && [[ $(sysctl -n "$k") != "$v" ]] && sysctl -q -w "$k=$v"
	done <"$record"
	rm -f "$record"
fi

# 6. Host nftables: the kubelets ran in their namespaces, so the ruleset
# must equal the one recorded at set-up.
if [[ -f $E2E_DIR/nft.before ]] && command -v nft >/dev/null; then
	if ! diff -q "$E2E_DIR/nft.before" <(nft list ruleset 2>/dev/null) >/dev/null; then
		echo "teardown: the host's nftables ruleset changed during the run:" >&2
		diff "$E2E_DIR/nft.before" <(nft list ruleset 2>/dev/null) >&2
	fi
fi

# 7. Container log links the kubelet made in /var/log/containers.
if [[ -d /var/log/containers ]]; then
	find /var/log/containers -maxdepth 1 -type l -lname "$E2E_DIR/*" -delete
fi

# 8. Directories at fixed paths that did not exist before the run, if
# empty now.
created=$E2E_DIR/../hetsev-e2e.created
if [[ -f $created ]]; then
	while read -r p; do
		[[ -d $p/s ]] && rmdir "$p/s" 2>/dev/null
		[[ -d $p ]] && rmdir "$p" 2>/dev/null
	done <"$created"
	rm -f "$created"
fi

# 9. The nodes' state.
rm -rf "$E2E_DIR"
exit 0
