#!/usr/bin/env bash
# ci-cuda-vet.sh: compile check of the `cuda` build tag for CI (no GPU, no
# CUDA install needed). Run as root from the repository root; finishes in a
# few minutes.
#
# 1. go vet -tags cuda ./... : the cuda package and its C shims compile.
#    They need only a C compiler and libdl: libcuda, cuBLAS and NCCL are
#    opened with dlopen at run time and their types declared by hand.
# 2. The hand-written declarations are checked against NVIDIA's real
#    headers: each function pointer type of engine/backend/cuda/driver/shim_*.h is
#    initialised with the real function from cuda.h / cublas_api.h, so a
#    wrong parameter type or count fails the C compiler. The headers come
#    from Debian's nvidia-cuda-dev package (contrib/non-free, enabled by
#    scripts/setup-cuda.sh --sources-only), downloaded with apt-get
#    download and unpacked to a temporary directory, NOT installed: only
#    ./usr/include is extracted (dpkg -x would write 2.8 GB). Where the
#    headers are already installed in /usr/include they are used instead,
#    unless --download is given.
# 3. go test -tags cuda ./kernels ./engine/backend/cuda/... ./engine ./engine/worker: the PTX is fresh,
#    the pool logic passes, the rank workers' process path passes in the
#    cuda build, and every GPU test skips with its reason; then the cuda
#    build of hsdb links.
# 4. The CUDA worker over gorgonia.org/cu (cmd/hsdb-cuda-worker, -tags
#    cuda,cu): vetted and linked against cuda.h and libcuda.so (installed
#    by scripts/setup-cuda.sh, else the headers and the driver stub
#    libcuda.so of the same nvidia-cuda-dev package, unpacked as in 2), and
#    run by the front's process-path test without a GPU: cu's init ends
#    the worker and the session falls back to cpu or reports the rank.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
force_download=0
[[ ${1:-} == --download ]] && force_download=1

echo "== go vet -tags cuda ./..."
go vet -tags cuda ./...

inc=/usr/include
tmp=""
if [[ $force_download == 1 || ! -f /usr/include/cuda.h || ! -f /usr/include/cublas_api.h ]]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	"$root/scripts/setup-cuda.sh" --sources-only
	apt-get update -q >/dev/null
	echo "== apt-get download nvidia-cuda-dev (headers only, not installed)"
	chmod 0777 "$tmp" # apt's _apt user downloads into it
	(cd "$tmp" && apt-get download -q nvidia-cuda-dev >/dev/null)
	deb=$(ls "$tmp"/nvidia-cuda-dev_*.deb)
	mkdir -p "$tmp/root"
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp/root" --wildcards './usr/include/*' './usr/lib/x86_64-linux-gnu/stubs/libcuda.so'
	rm -f "$deb"
	inc=$tmp/root/usr/include
fi

echo "== shim declarations vs $inc/cuda.h, cublas_v2.h and cublasLt.h"
check=$(mktemp --suffix=.c)
cat >"$check" <<'C'
#include <cuda.h>
#include <cublas_v2.h>
#include <cublasLt.h>
#define HSDB_REAL_HEADERS
#include "shim_driver.h"
#include "shim_blas.h"
#define CHK_CU(name, sym, params, args) CUresult (*chk_cu_##name) params = sym;
HSDB_CU_FUNCS(CHK_CU)
#define CHK_BLAS(name, sym, params, args) cublasStatus_t (*chk_blas_##name) params = sym;
HSDB_BLAS_FUNCS(CHK_BLAS)
HSDB_BLASLT_FUNCS(CHK_BLAS)
_Static_assert(sizeof(cublasLtMatmulAlgo_t) == 64, "cublasLtMatmulAlgo_t");
_Static_assert(sizeof(cublasLtMatmulHeuristicResult_t) == 96, "cublasLtMatmulHeuristicResult_t");
C
status=0
gcc -fsyntax-only -Wall -Werror -I "$inc" -I "$root/engine/backend/cuda/driver" "$check" 2>"$check.log" || status=$?
head -c 4000 "$check.log"; rm -f "$check.log"
rm -f "$check"
if [[ $status -ne 0 ]]; then
	echo "ci-cuda-vet.sh: a declaration in engine/backend/cuda/driver/shim_*.h does not match NVIDIA's header" >&2
	exit 1
fi
echo "ok"

echo "== go test -tags cuda ./kernels ./engine/backend/cuda/... ./engine ./engine/worker"
go test -tags cuda ./kernels ./engine/backend/cuda/... ./engine ./engine/worker
# the cuda worker binary (hsdb worker in a -tags cuda build) and its
# process-path tests (CPU workers spawned from the cuda build)
echo "== go build -tags cuda ./cmd/hsdb"
go build -tags cuda -o /dev/null ./cmd/hsdb
if go list -deps -tags cuda ./cmd/hsdb | grep -q '^gorgonia.org/cu$'; then
	echo "ci-cuda-vet.sh: the front end (cmd/hsdb) links gorgonia.org/cu; only cmd/hsdb-cuda-worker may" >&2
	exit 1
fi

# 4. The CUDA worker over gorgonia.org/cu. cgo finds cuda.h in $inc and
# libcuda.so in the driver's directory or the toolkit's stubs directory.
stubs=/usr/lib/x86_64-linux-gnu/stubs
[[ -n $tmp && -f $tmp/root$stubs/libcuda.so ]] && stubs=$tmp/root$stubs
export CGO_CFLAGS="-I$inc ${CGO_CFLAGS:-}" CGO_LDFLAGS="-L$stubs ${CGO_LDFLAGS:-}"
echo "== go vet -tags cuda,cu ./engine/backend/cuda/driver ./cmd/hsdb-cuda-worker (cuda.h from $inc, libcuda.so from the loader path or $stubs)"
go vet -tags cuda,cu ./engine/backend/cuda/driver ./cmd/hsdb-cuda-worker
bin=$(mktemp -d)
go build -tags cuda,cu -o "$bin/hsdb-cuda-worker" ./cmd/hsdb-cuda-worker
echo "== the front with the CUDA worker and no GPU (go test ./cmd/hsdb -run CUDAWorker)"
HSDB_TEST_CUDA_WORKER=$bin/hsdb-cuda-worker go test -count=1 -run 'CUDAWorker|DeviceChoice' ./cmd/hsdb
rm -rf "$bin"
