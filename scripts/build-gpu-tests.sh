#!/usr/bin/env bash
# build-gpu-tests.sh: build the cuda-tagged test binaries that
# scripts/gpu-test.sh and scripts/bench-gpu.sh run on the GPU machine (which
# has no Go). Needs Go only: no CUDA install (the driver, cuBLAS and NCCL are
# opened with dlopen at run time). Binaries are stripped (-s -w) so bin/
# stays small enough to travel with the working tree (a few MiB each).
#
#   scripts/build-gpu-tests.sh      writes bin/engine.test bin/arch.test bin/cuda.test bin/driver.test bin/kernels.test
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
mkdir -p bin
# package directory -> binary name; gpu-test.sh runs each from its package
# directory, since tests read testdata relative to it (../testdata).
pkgs=(engine:engine engine/arch:arch engine/backend/cuda:cuda engine/backend/cuda/driver:driver kernels:kernels)
for p in "${pkgs[@]}"; do
	dir=${p%%:*} name=${p##*:}
	go test -c -tags cuda -ldflags='-s -w' -o "bin/$name.test" "./$dir"
	printf '%-18s %s\n' "bin/$name.test" "$(du -h "bin/$name.test" | cut -f1)"
done
