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
if [[ -z $gobin ]]; then # go install writes to the first GOPATH entry's bin
	gopath=$(go env GOPATH)
	gobin=${gopath%%:*}/bin
fi
go install ./cmd/hsdb
echo "installed $gobin/hsdb"
worker=$gobin/hsdb-cuda-worker
# skip_worker: the CUDA worker cannot be built here. A worker left in
# GOBIN by an earlier install was built from other sources: hsdb would
# find it next to itself and use it (the wire protocol is versioned, so a
# session would fail), so it is removed, and said.
skip_worker() {
	echo "hsdb-cuda-worker not installed: $1; hsdb runs on the CPU"
	if [[ -e $worker || -L $worker ]]; then
		rm -f -- "$worker"
		echo "removed $worker from an earlier install (built from other sources, it would not match this hsdb)"
	fi
	exit 0
}
inc=""
for d in /usr/local/cuda/include /usr/include; do
	[[ -f $d/cuda.h ]] && { inc=$d; break; }
done
[[ -z $inc ]] && skip_worker "no cuda.h in /usr/local/cuda/include or /usr/include (scripts/setup-cuda.sh installs it)"
cc=$(go env CC)
command -v "${cc%% *}" >/dev/null || skip_worker "no C compiler ($cc, from go env CC) for cgo"
libs=""
for d in /usr/local/cuda/lib64/stubs /usr/lib/x86_64-linux-gnu/stubs; do
	[[ -f $d/libcuda.so ]] && libs="$libs -L$d"
done
# Link a one-line C program against -lcuda the way cgo will, so a missing
# libcuda.so is one sentence here rather than the linker's command line.
probe=$(mktemp -d)
trap 'rm -rf -- "$probe"' EXIT
echo 'int main(void) { return 0; }' >"$probe/main.c"
# shellcheck disable=SC2086 # $libs and $cc are word lists
if ! $cc "$probe/main.c" -o "$probe/a.out" ${CGO_LDFLAGS:-} $libs -lcuda 2>"$probe/err"; then
	skip_worker "$cc cannot link -lcuda (no libcuda.so: not in /usr/local/cuda/lib64/stubs, /usr/lib/x86_64-linux-gnu/stubs or the linker's path; scripts/setup-cuda.sh installs the stub; the linker said: $(grep -m1 -i 'cuda' "$probe/err" || head -n1 "$probe/err"))"
fi
if ! CGO_CFLAGS="-I$inc ${CGO_CFLAGS:-}" CGO_LDFLAGS="${CGO_LDFLAGS:-}$libs" go install -tags cuda,cu ./cmd/hsdb-cuda-worker; then
	echo "install.sh: building hsdb-cuda-worker failed (above); $gobin/hsdb is installed and runs on the CPU" >&2
	exit 1
fi
echo "installed $worker (hsdb --device cuda runs one per GPU rank; without --device, hsdb uses it when it sees a GPU)"
