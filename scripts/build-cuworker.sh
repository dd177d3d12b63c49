#!/usr/bin/env bash
# build-cuworker.sh: build what scripts/gpu-cuworker.sh runs on the GPU
# machine (which has no Go) into DIR (default bin/cuworker): the CUDA
# worker over gorgonia.org/cu (hsdb-cuda-worker), the front's tests
# (cmd.test, no tags: the front never links CUDA), and the worker, backend
# and driver tests built over cu (worker.test, cuda.test, driver.test,
# -tags cuda,cu), stripped, plus make_llama8b.py. Needs cuda.h and
# libcuda.so at link time (scripts/setup-cuda.sh installs both; the stub
# is enough: the real libcuda.so.1 is the GPU machine's).
#
#   scripts/build-cuworker.sh [DIR]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
dir=${1:-bin/cuworker}
mkdir -p "$dir"
export CGO_LDFLAGS="-L/usr/lib/x86_64-linux-gnu/stubs ${CGO_LDFLAGS:-}"
go build -tags cuda,cu -ldflags='-s -w' -o "$dir/hsdb-cuda-worker" ./cmd/hsdb-cuda-worker
go test -c -ldflags='-s -w' -o "$dir/cmd.test" ./cmd/hsdb
for p in engine/worker:worker engine/backend/cuda:cuda engine/backend/cuda/driver:driver; do
	go test -c -tags cuda,cu -ldflags='-s -w' -o "$dir/${p##*:}.test" "./${p%%:*}"
done
cp scripts/bench/make_llama8b.py scripts/gpu-cuworker.sh "$dir/"
du -sh "$dir"/*
