#!/usr/bin/env bash
# install.sh: put the front end (hsdb) and, where CUDA can be linked, the
# CUDA worker (hsdb-cuda-worker, over gorgonia.org/cu) side by side in
# GOBIN (default $(go env GOPATH)/bin), where hsdb finds its worker:
#
#   scripts/install.sh            # from the repository root
#
# The front end needs Go only and never links CUDA. The CUDA worker needs
# cuda.h and libcuda.so at link time: the NVIDIA driver's libcuda.so, or
# the CUDA toolkit's stub (scripts/setup-cuda.sh installs Debian's
# nvidia-cuda-toolkit: /usr/include/cuda.h and
# /usr/lib/x86_64-linux-gnu/stubs/libcuda.so); it runs where the driver's
# libcuda.so.1 and a GPU are. Without cuda.h only the front end is
# installed, and it runs on the CPU.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
gobin=$(go env GOBIN)
[[ -z $gobin ]] && gobin=$(go env GOPATH)/bin
go install ./cmd/hsdb
echo "installed $gobin/hsdb"
inc=""
for d in /usr/local/cuda/include /usr/include; do
	[[ -f $d/cuda.h ]] && { inc=$d; break; }
done
if [[ -z $inc ]]; then
	echo "hsdb-cuda-worker not installed: no cuda.h in /usr/local/cuda/include or /usr/include (scripts/setup-cuda.sh installs it); hsdb runs on the CPU"
	exit 0
fi
libs=""
for d in /usr/local/cuda/lib64/stubs /usr/lib/x86_64-linux-gnu/stubs; do
	[[ -f $d/libcuda.so ]] && libs="$libs -L$d"
done
CGO_CFLAGS="-I$inc ${CGO_CFLAGS:-}" CGO_LDFLAGS="${CGO_LDFLAGS:-}$libs" go install -tags cuda,cu ./cmd/hsdb-cuda-worker
echo "installed $gobin/hsdb-cuda-worker (hsdb --device cuda runs one per GPU rank; without --device, hsdb uses it when it sees a GPU)"
