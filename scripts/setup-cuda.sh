#!/usr/bin/env bash
# setup-cuda.sh: install Debian's CUDA 11.8 tool chain (nvcc, cuda.h, the
# libcuda stub) so that kernels/*.cu can be compiled to PTX and the `cuda`
# build tag of hsdb can be built and linked on a machine without a GPU.
#
# Run as root. Idempotent: a second run changes nothing and only re-checks.
# `setup-cuda.sh --sources-only` does step 1 alone (scripts/ci-cuda-vet.sh
# uses it before apt-get download).
#
# What it does:
#   1. adds the `contrib non-free` components to the existing Debian apt
#      source (/etc/apt/sources.list.d/debian.sources, the stanza whose
#      Suites are `bookworm bookworm-updates`); no new source is added;
#   2. apt-get update, apt-get install nvidia-cuda-toolkit (nvcc 11.8,
#      headers, libcuda.so stub in nvidia-cuda-dev);
#   3. says what the Go build needs (no cgo flags: see the end of this file).
set -euo pipefail

SRC=/etc/apt/sources.list.d/debian.sources

if [[ $(id -u) -ne 0 ]]; then
	echo "setup-cuda.sh: must run as root (apt-get install)" >&2
	exit 1
fi
if [[ ! -f $SRC ]]; then
	echo "setup-cuda.sh: $SRC not found; expected Debian bookworm's deb822 source" >&2
	exit 1
fi

scripts_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# 1. contrib non-free on the stanza whose Suites include `bookworm` (the
# bookworm / bookworm-updates one; the security stanza is left alone). awk
# buffers each deb822 stanza (blank-line separated) and appends the missing
# components to its Components line; everything else is copied verbatim.
add_components() {
	local tmp
	tmp=$(mktemp)
	awk '
	function flush(   i, n, w, has, line) {
		if (want) {
			for (i = 1; i <= nl; i++) if (buf[i] ~ /^Components:/) {
				line = buf[i]
				n = split(substr(line, 12), w, /[ \t]+/)
				delete has
				for (j = 1; j <= n; j++) has[w[j]] = 1
				if (!("contrib" in has)) line = line " contrib"
				if (!("non-free" in has)) line = line " non-free"
				buf[i] = line
			}
		}
		for (i = 1; i <= nl; i++) print buf[i]
		nl = 0; want = 0
	}
	/^[ \t]*$/ { flush(); print; next }
	{ buf[++nl] = $0 }
	/^Suites:/ { for (k = 2; k <= NF; k++) if ($k == "bookworm") want = 1 }
	END { flush() }
	' "$SRC" >"$tmp"
	if ! cmp -s "$tmp" "$SRC"; then
		cat "$tmp" >"$SRC"
		echo "setup-cuda.sh: added contrib non-free to the bookworm stanza of $SRC"
	fi
	rm -f "$tmp"
}
add_components
if [[ ${1:-} == --sources-only ]]; then
	exit 0
fi

# 2. install (skipped when nvcc is already there and the lists are fresh).
if ! command -v nvcc >/dev/null || ! dpkg -s nvidia-cuda-toolkit >/dev/null 2>&1; then
	apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nvidia-cuda-toolkit
fi

nvcc --version | tail -n 2

# 3. what the Go build needs. Nothing to link: engine/backend/cuda/driver loads the
# driver (libcuda.so.1), cuBLAS and NCCL with dlopen at run time and declares
# the few C types it uses itself, so `go build -tags cuda ./...` needs only a
# C compiler and libdl, no CUDA headers and no libcuda stub. A binary built
# here therefore starts on machines without the NVIDIA driver (the CUDA
# backend then reports ErrNoDriver) and needs no CUDA library at link time.
echo
echo "nvcc: $(command -v nvcc) (kernels: scripts/build-kernels.sh)"
echo "go build -tags cuda ./... needs no CGO_CFLAGS/CGO_LDFLAGS: libcuda.so.1, libcublas.so.N"
echo "and libnccl.so.2 are opened with dlopen at run time (HSDB_CUBLAS, HSDB_NCCL override)."
