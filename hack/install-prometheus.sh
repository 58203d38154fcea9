#!/usr/bin/env bash
# Installs Debian's prometheus package when no prometheus binary is on PATH
# (or $PROMETHEUS is unset). The package's service is not started: a
# policy-rc.d denies it for the duration of the install, and the tests run
# their own servers on 127.0.0.1.
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
created=0
if [[ ! -e $policy ]]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod +x "$policy"
	created=1
fi
trap '[[ $created -eq 1 ]] && rm -f "$policy"' EXIT
export DEBIAN_FRONTEND=noninteractive
apt_install() { apt-get install -y -q --no-install-recommends prometheus >/tmp/install-prometheus.log 2>&1; }
if ! apt_install; then
	apt-get update -q >>/tmp/install-prometheus.log 2>&1
	apt_install || { tail -20 /tmp/install-prometheus.log >&2; exit 1; }
fi
prometheus --version 2>&1 | head -1
