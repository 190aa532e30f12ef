#!/usr/bin/env bash
# Installs a headless-capable Chromium for the web page's browser test
# (gateway/web), from Debian's `chromium` package (Ubuntu: chromium-browser).
#
# Idempotent: when chromium, chromium-browser or $EXOCORTEX_CHROMIUM is
# already there it only prints the path. When it is missing and cannot be
# installed here (not root, no apt-get, the install fails), it prints why
# and exits 0, so `task setup` goes on; the browser test then skips with
# a message saying the same.
set -uo pipefail

find_chromium() {
	if [[ -n ${EXOCORTEX_CHROMIUM:-} && -x ${EXOCORTEX_CHROMIUM} ]]; then
		echo "$EXOCORTEX_CHROMIUM"
		return 0
	fi
	local name
	for name in chromium chromium-browser; do
		if command -v "$name" >/dev/null 2>&1; then
			command -v "$name"
			return 0
		fi
	done
	return 1
}

if path=$(find_chromium); then
	echo "install-chromium: chromium already installed: $path"
	exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
	echo "install-chromium: chromium is not installed and this is not root; install Debian's chromium package (sudo apt-get install chromium) or set EXOCORTEX_CHROMIUM; the browser test will skip until then" >&2
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-chromium: chromium is not installed and apt-get is not available; install Chromium with this system's package manager or set EXOCORTEX_CHROMIUM; the browser test will skip until then" >&2
	exit 0
fi

export DEBIAN_FRONTEND=noninteractive
echo "install-chromium: installing Debian's chromium package with apt-get" >&2
if ! apt-get update -qq; then
	echo "install-chromium: apt-get update failed; the browser test will skip until chromium is installed" >&2
	exit 0
fi
if ! apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null; then
	# Ubuntu names it chromium-browser (a snap wrapper on recent releases).
	if ! apt-get install -y -qq --no-install-recommends chromium-browser >/dev/null; then
		echo "install-chromium: apt-get install chromium failed; the browser test will skip until chromium is installed" >&2
		exit 0
	fi
fi

if path=$(find_chromium); then
	echo "install-chromium: installed $path"
else
	echo "install-chromium: the package installed but no chromium binary is on PATH; set EXOCORTEX_CHROMIUM" >&2
fi
exit 0
