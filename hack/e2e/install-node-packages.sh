#!/usr/bin/env bash
# Installs Debian's runc and containernetworking-plugins (bridge,
# host-local) for `make e2e`'s nodes, where missing. Installing starts no
# service.
set -euo pipefail
missing=()
command -v runc >/dev/null 2>&1 || missing+=(runc)
[[ -x ${CNI_BIN_DIR:-/usr/lib/cni}/bridge ]] || missing+=(containernetworking-plugins)
command -v nft >/dev/null 2>&1 || missing+=(nftables)
[[ ${#missing[@]} -eq 0 ]] && exit 0
echo "install-node-packages: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
log=/tmp/install-node-packages.log
install() { apt-get install -y -q --no-install-recommends "${missing[@]}" >"$log" 2>&1; }
if ! install; then
	apt-get update -q >>"$log" 2>&1
	install || { tail -20 "$log" >&2; exit 1; }
fi
