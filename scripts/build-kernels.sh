#!/usr/bin/env bash
# build-kernels.sh: compile every kernels/*.cu to PTX for compute capability
# 9.0 (H100/H200; the driver JIT-compiles it for the GPU it runs on) and
# write kernels/ptx/NAME.ptx. The first line of each .ptx is
#   // source-sha256: <hex>
# the SHA-256 of NAME.cu followed by every kernels/*.cuh in name order (the
# headers every module includes), so `go test ./kernels` can tell a stale
# .ptx from a fresh one without nvcc. The .ptx files are committed and
# embedded into the binary by kernels/kernels.go.
#
# A module whose source has the line "// build: sm_90a" uses Hopper-only
# instructions (wgmma) through inline assembly, which nvcc 11.8 passes
# through unchanged: its PTX is then marked .version 8.0 / .target sm_90a
# (the first PTX ISA and target with wgmma) so the driver's JIT accepts
# it; only a device of compute capability 9.0 loads such a module.
#
# Needs nvcc (scripts/setup-cuda.sh installs CUDA 11.8). Usage:
#   scripts/build-kernels.sh           rebuild every module
#   scripts/build-kernels.sh rope      rebuild kernels/rope.cu only
set -euo pipefail
export LC_ALL=C # glob order = Go sort.Strings order (the hash covers headers in that order)

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kdir=$root/kernels
mkdir -p "$kdir/ptx"

if ! command -v nvcc >/dev/null; then
	echo "build-kernels.sh: nvcc not found; run scripts/setup-cuda.sh as root first" >&2
	exit 1
fi

# No -lineinfo: it writes the absolute source path into the PTX, so the
# bytes would depend on where the checkout lives. No fast math: expf,
# sincosf and division stay IEEE-accurate so results track the CPU backend.
NVCC_FLAGS=(-ptx -arch=compute_90 -std=c++17)

if [[ $# -gt 0 ]]; then
	names=("$@")
else
	names=()
	for f in "$kdir"/*.cu; do names+=("$(basename "$f" .cu)"); done
fi

shopt -s nullglob
headers=("$kdir"/*.cuh)
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
for name in "${names[@]}"; do
	src=$kdir/$name.cu
	if [[ ! -f $src ]]; then
		echo "build-kernels.sh: $src not found" >&2
		exit 1
	fi
	hash=$(cat "$src" "${headers[@]}" | sha256sum | cut -d' ' -f1)
	# Relative paths from kernels/ keep the checkout's location out of the
	# PTX's .file lines, so every machine produces the same bytes.
	(cd "$kdir" && nvcc "${NVCC_FLAGS[@]}" "$name.cu" -o "$tmp")
	if grep -qx '// build: sm_90a' "$src"; then
		grep -qx '.version 7.8' "$tmp" && grep -qx '.target sm_90' "$tmp" || {
			echo "build-kernels.sh: $name: expected .version 7.8 / .target sm_90 from nvcc to mark sm_90a" >&2
			exit 1
		}
		sed -i -e 's/^\.version 7\.8$/.version 8.0/' -e 's/^\.target sm_90$/.target sm_90a/' "$tmp"
	fi
	{
		echo "// source-sha256: $hash"
		cat "$tmp"
	} >"$kdir/ptx/$name.ptx"
	printf '%-12s %s  %d entries\n' "$name" "$hash" "$(grep -c '^.visible .entry' "$kdir/ptx/$name.ptx")"
done
