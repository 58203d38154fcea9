#!/usr/bin/env bash
# Installs Debian's prometheus package unless $PROMETHEUS is set or a
# prometheus binary is on PATH. The package's service is not started: a
# policy-rc.d that denies it replaces any other for the duration of the
# install, and the tests run their own servers on 127.0.0.1.
set -euo pipefail
if [[ -n "${PROMETHEUS:-}" ]] || command -v prometheus >/dev/null 2>&1; then
	exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
	echo "install-prometheus: prometheus is missing and this is not root; install Debian's prometheus package, or set PROMETHEUS to a prometheus binary" >&2
	exit 1
fi
echo "install-prometheus: installing Debian's prometheus package"
policy=/usr/sbin/policy-rc.d
backup=""
restore() {
	rm -f "$policy"
	if [[ -n $backup ]]; then mv -f "$backup" "$policy"; fi
}
if [[ -e $policy ]]; then
	backup=$(mktemp)
	cp -p "$policy" "$backup"
fi
trap restore EXIT
printf '#!/bin/sh\nexit 101\n' >"$policy"
chmod +x "$policy"
export DEBIAN_FRONTEND=noninteractive
log=/tmp/install-prometheus.log
apt_install() { apt-get install -y -q --no-install-recommends prometheus >"$log" 2>&1; }
if ! apt_install; then
	apt-get update -q >>"$log" 2>&1
	apt_install || { tail -20 "$log" >&2; exit 1; }
fi
prometheus --version 2>&1 | head -1
