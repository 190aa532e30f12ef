#!/usr/bin/env bash
# Installs the ONNX Runtime shared library that models/ort loads into
# <repo>/.cache/onnxruntime/<version>/libonnxruntime.so.1 and prints its path.
#
# The library comes from the npm package onnxruntime-node, which ships the
# official prebuilt libonnxruntime for Linux x64 and arm64. The tarball is
# fetched with `npm pack` (no install scripts run), checked against the
# sha256 pinned below, and only the one library file is extracted.
#
# Idempotent: when the library is already installed it only prints the path.
#
# Environment:
#   ORT_VERSION   version to install (default below; a different version
#                 needs ORT_SHA256 too, as only the default is pinned)
#   ORT_SHA256    sha256 of onnxruntime-node-$ORT_VERSION.tgz
set -euo pipefail

readonly DEFAULT_VERSION=1.24.3
# sha256 of onnxruntime-node-1.24.3.tgz as served by registry.npmjs.org.
readonly DEFAULT_SHA256=aa1bb5fa261ea68de05dd53efbba210cd7adf2d2850f4c3a201054c74cc78040

version=${ORT_VERSION:-$DEFAULT_VERSION}
if [[ $version == "$DEFAULT_VERSION" ]]; then
	want_sha=${ORT_SHA256:-$DEFAULT_SHA256}
else
	want_sha=${ORT_SHA256:-}
	if [[ -z $want_sha ]]; then
		echo "install-onnxruntime: ORT_VERSION=$version has no pinned sha256; set ORT_SHA256 to the tarball's sha256" >&2
		exit 1
	fi
fi

repo_root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
dest_dir=$repo_root/.cache/onnxruntime/$version
dest=$dest_dir/libonnxruntime.so.1

if [[ -s $dest ]]; then
	echo "$dest"
	exit 0
fi

os=$(uname -s)
machine=$(uname -m)
case "$os/$machine" in
Linux/x86_64 | Linux/amd64) arch=x64 ;;
Linux/aarch64 | Linux/arm64) arch=arm64 ;;
*)
	echo "install-onnxruntime: unsupported platform $os/$machine (supported: Linux x86_64, Linux aarch64)." >&2
	echo "Install ONNX Runtime >= 1.24 yourself and set EXOCORTEX_ORT_LIB to the path of its shared library." >&2
	exit 1
	;;
esac
member=package/bin/napi-v6/linux/$arch/libonnxruntime.so.1

for tool in npm tar sha256sum; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "install-onnxruntime: $tool is required but not installed" >&2
		exit 1
	fi
done

tmp=$(mktemp -d)
staged=
cleanup() {
	rm -rf -- "$tmp"
	if [[ -n $staged ]]; then rm -f -- "$staged"; fi
}
trap cleanup EXIT

echo "install-onnxruntime: fetching onnxruntime-node@$version from npm" >&2
(cd "$tmp" && npm pack --silent --ignore-scripts "onnxruntime-node@$version" >/dev/null)
tarball=$tmp/onnxruntime-node-$version.tgz
if [[ ! -f $tarball ]]; then
	echo "install-onnxruntime: npm pack did not produce $(basename -- "$tarball")" >&2
	exit 1
fi

got_sha=$(sha256sum "$tarball" | cut -d' ' -f1)
if [[ $got_sha != "$want_sha" ]]; then
	echo "install-onnxruntime: sha256 mismatch for onnxruntime-node-$version.tgz" >&2
	echo "  want $want_sha" >&2
	echo "  got  $got_sha" >&2
	exit 1
fi

if ! tar -xzf "$tarball" -C "$tmp" "$member" 2>/dev/null; then
	echo "install-onnxruntime: onnxruntime-node@$version has no $member (no build for linux/$arch)" >&2
	exit 1
fi

# Install atomically so that a concurrent run or an interrupted one never
# leaves a half-written library behind.
mkdir -p -- "$dest_dir"
staged=$(mktemp "$dest_dir/.libonnxruntime.so.1.XXXXXX")
cp -- "$tmp/$member" "$staged"
chmod 0644 -- "$staged"
mv -f -- "$staged" "$dest"

echo "$dest"
