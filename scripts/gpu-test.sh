#!/usr/bin/env bash
# gpu-test.sh: run the prebuilt cuda-tagged test binaries on a GPU machine
# (no Go needed there) and print a PASS/FAIL summary.
#
# Build them first on any machine with Go:   scripts/build-gpu-tests.sh
# Then, from the repository root on the GPU machine:
#   scripts/gpu-test.sh              logs to $OUT (or ./gpu-test-out)
#
# Each binary runs from its package's directory (tests read ../testdata):
#   bin/engine.test   engine/              forward-pass tests on cpu and cuda, cuda-vs-cpu parity
#   bin/cuda.test     engine/backend/cuda  kernels, backend ops vs the CPU backend, collectives
#   bin/driver.test   engine/backend/cuda/driver  the CUDA runtime: device thread, memory, modules, cuBLAS
#   bin/kernels.test  kernels/             PTX freshness (no GPU needed)
# then the CUDA layer's benchmarks once (GEMM, statistics, attention).
# Exits non-zero when a test fails, or when the GPU tests skipped (no GPU
# seen is not a pass here).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${OUT:-$root/gpu-test-out}
mkdir -p "$out"
cd "$root"

source "$root/scripts/cuda-libs.sh"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader | tee "$out/gpus.txt"

status=0
run() { # name dir args...
	local name=$1 dir=$2
	shift 2
	local bin=$root/bin/$name.test
	if [[ ! -x $bin ]]; then
		echo "gpu-test.sh: $bin missing; run scripts/build-gpu-tests.sh" | tee -a "$out/summary.txt"
		status=1
		return
	fi
	echo "=== $name ($dir)"
	(cd "$root/$dir" && "$bin" "$@") >"$out/$name.log" 2>&1
	local rc=$?
	local p f s
	p=$(grep -c -- '--- PASS' "$out/$name.log")
	f=$(grep -c -- '--- FAIL' "$out/$name.log")
	s=$(grep -c -- '--- SKIP' "$out/$name.log")
	printf '%-8s rc=%d  %4d passed %3d failed %3d skipped\n' "$name" "$rc" "$p" "$f" "$s" | tee -a "$out/summary.txt"
	grep -E -- '--- FAIL' "$out/$name.log" | head -40
	if [[ $rc -ne 0 || $f -ne 0 ]]; then
		status=1
		grep -E -B2 -A12 -- '--- FAIL|^panic|FAIL$' "$out/$name.log" | head -120
	fi
	if grep -q 'no cuda backend here\|no CUDA GPU here' "$out/$name.log"; then
		echo "gpu-test.sh: $name skipped its GPU tests: $(grep -m1 -o 'no cuda backend here.*\|no CUDA GPU here.*' "$out/$name.log")" | tee -a "$out/summary.txt"
		status=1
	fi
}

: >"$out/summary.txt"
run kernels kernels -test.v -test.count=1
run driver engine/backend/cuda/driver -test.v -test.count=1 -test.timeout=10m
run cuda engine/backend/cuda -test.v -test.count=1 -test.timeout=10m
# The engine tests run --tp 4 too: on a machine with fewer GPUs than that,
# all ranks share GPU 0 (virtual ranks); the NCCL path (one rank per GPU) is
# tested by bin/cuda.test's TestNCCLRanks and by the quickstart below.
export HSDB_CUDA_VIRTUAL=1
run engine engine -test.v -test.count=1 -test.timeout=10m
run arch engine/arch -test.v -test.count=1 -test.timeout=10m
unset HSDB_CUDA_VIRTUAL
echo "=== cuda benchmarks"
(cd engine/backend/cuda && "$root/bin/cuda.test" -test.run='^$' -test.bench='GEMM|Moments|RMSNorm|Attention' -test.benchtime=20x -test.timeout=5m) >"$out/cuda-bench.log" 2>&1 || status=1
grep -E '^Benchmark' "$out/cuda-bench.log" | tee -a "$out/summary.txt"
echo
echo "=== summary (logs in $out)"
cat "$out/summary.txt"
if [[ $status -eq 0 ]]; then echo "GPU TESTS: PASS"; else echo "GPU TESTS: FAIL"; fi
exit $status
