#!/usr/bin/env bash
# Installs promtool (Prometheus' checker, from Debian's `prometheus`
# package) for the metrics test (cmd/exocortex/metrics_test.go), which
# checks a fresh scrape and every dashboard query with it.
#
# Idempotent: when promtool or $PROMTOOL is already there it only prints the
# path. When it is missing and cannot be installed here (not root, no
# apt-get, the install fails), it prints why and exits 0, so `task setup`
# goes on; the metrics test then skips with a message saying the same.
set -uo pipefail

if [[ -n ${PROMTOOL:-} && -x ${PROMTOOL} ]]; then
	echo "install-promtool: promtool already installed: $PROMTOOL"
	exit 0
fi
if path=$(command -v promtool); then
	echo "install-promtool: promtool already installed: $path"
	exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
	echo "install-promtool: promtool is not installed and this is not root; install Debian's prometheus package (sudo apt-get install prometheus) or set PROMTOOL; the metrics test will skip until then" >&2
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-promtool: promtool is not installed and apt-get is not available; install Prometheus' promtool or set PROMTOOL; the metrics test will skip until then" >&2
	exit 0
fi
export DEBIAN_FRONTEND=noninteractive
echo "install-promtool: installing Debian's prometheus package with apt-get (for promtool)" >&2
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends prometheus >/dev/null; }; then
	echo "install-promtool: apt-get install prometheus failed; the metrics test will skip until promtool is installed" >&2
	exit 0
fi
# The package starts a Prometheus server where an init system runs; the
# project needs only the checker.
if command -v systemctl >/dev/null 2>&1; then
	systemctl disable --now prometheus >/dev/null 2>&1 || true
fi
if path=$(command -v promtool); then
	echo "install-promtool: installed $path"
else
	echo "install-promtool: the package installed but promtool is not on PATH; set PROMTOOL" >&2
fi
exit 0
