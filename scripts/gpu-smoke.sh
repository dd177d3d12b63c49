#!/usr/bin/env bash
# gpu-smoke.sh: run the CUDA backend's test binary on a GPU machine (which
# needs no Go) and print a short summary.
#
# Build it first on any machine with Go (no CUDA needed):
#   go test -c -tags cuda -o bin/cuda.test ./engine/backend/cuda
# then, from the repository root on the GPU machine:
#   scripts/gpu-smoke.sh [bin/cuda.test]
#
# Runs every test (each kernel against a Go reference; cuBLAS; NCCL over
# all visible GPUs; the out-of-memory error) with -test.v, then the
# benchmarks (GEMM 8192³ bf16 TFLOP/s, statistics of [8192, 7168] bf16,
# RMSNorm, attention). Output goes to the terminal and to
# gpu-smoke.log beside the binary. Exits non-zero when a test fails, or
# when every test skipped (no GPU seen: that is not a pass here).
set -uo pipefail

bin=${1:-bin/cuda.test}
if [[ ! -x $bin ]]; then
	echo "gpu-smoke.sh: $bin not found or not executable; build it with" >&2
	echo "  go test -c -tags cuda -o bin/cuda.test ./engine/backend/cuda" >&2
	exit 2
fi
# The binary needs no file from the repository (the PTX is embedded); run
# it beside itself so the log lands there.
source "$(dirname "${BASH_SOURCE[0]}")/cuda-libs.sh" # cuBLAS/NCCL from pip's nvidia packages if needed
cd "$(dirname "$bin")" || exit 2
bin=./$(basename "$bin")
log=./gpu-smoke.log

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader

"$bin" -test.v -test.count=1 -test.timeout=10m 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
echo "=== benchmarks" | tee -a "$log"
"$bin" -test.run='^$' -test.bench=. -test.benchtime=20x -test.timeout=10m 2>&1 | tee -a "$log"
brc=${PIPESTATUS[0]}

passed=$(grep -c '^--- PASS' "$log")
failed=$(grep -c '^--- FAIL' "$log")
skipped=$(grep -c '^--- SKIP' "$log")
echo
echo "=== summary"
grep -E '^--- FAIL' "$log"
grep -E '^Benchmark' "$log" | awk '{ line=$1; for (i=2; i<=NF; i++) if ($(i) ~ /TFLOP\/s|device-ms\/op|GB\/s/) line=line"  "$(i-1)" "$(i); print line }'
echo "smoke: $passed passed, $failed failed, $skipped skipped"
if [[ $rc -ne 0 || $brc -ne 0 || $failed -ne 0 ]]; then
	exit 1
fi
if grep -q 'no CUDA GPU here' "$log"; then # only the pool tests, which need no GPU, ran
	echo "gpu-smoke.sh: the GPU tests skipped: $(grep -m1 -o 'no CUDA GPU here.*' "$log")" >&2
	exit 1
fi
