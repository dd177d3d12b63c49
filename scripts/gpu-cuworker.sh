#!/usr/bin/env bash
# gpu-cuworker.sh: issue 17's GPU checks of the CUDA worker over
# gorgonia.org/cu, in one run from the repository root of the GPU machine,
# with the binaries of scripts/build-cuworker.sh in BIN (default
# bin/cuworker); logs in OUT (default ./cuworker-out).
#   1. the worker's probe (the front's test for defaulting --device)
#   2. the front (cmd.test) with the real CUDA worker: the quickstart on
#      CUDA workers prints the CPU's numbers; a kernel fault in rank 1's
#      worker ends that worker, not the session
#   3. worker.test over cu: HF parity through CUDA workers, a worker killed,
#      a kernel fault, a Llama-3-8B-shaped prefill through a worker vs in
#      process (checkpoint: make_llama8b.py --layers $LAYERS), statistics
#      at a stop over 8 CUDA worker ranks
#   4. cuda.test over cu: statistics at a stop, 8 virtual ranks in process
#   5. driver.test over cu: the driver's own GPU tests through the cu seam
set -uo pipefail
root=$(pwd)
bin=${BIN:-bin/cuworker}
[[ $bin == /* ]] || bin=$root/$bin
out=${OUT:-$root/cuworker-out}
mkdir -p "$out"
source "$root/scripts/cuda-libs.sh"
export HSDB_TEST_CUDA_WORKER=$bin/hsdb-cuda-worker
t0=$(date +%s)
stamp() { echo "[$(($(date +%s) - t0)) s] $*"; }
status=0
step() { # name dir timeout cmd...
	local name=$1 dir=$2 limit=$3
	shift 3
	stamp "$name"
	(cd "$root/$dir" && timeout "$limit" "$@") >"$out/$name.log" 2>&1
	local rc=$?
	[[ $rc -ne 0 ]] && status=1
	grep -E '^(=== RUN|--- (PASS|FAIL|SKIP)|PASS|FAIL|ok|Benchmark)|cuda_fault_test|cuda_test|cuda_worker_test|device_test|ms/stop' "$out/$name.log" | grep -v '^=== RUN' | tail -40
	echo "$name: exit $rc"
}
stamp "1. probe: $("$HSDB_TEST_CUDA_WORKER" --probe 2>&1)"
step front cmd/hsdb 60 "$bin/cmd.test" -test.run 'CUDAWorker|DeviceChoice' -test.v -test.count 1
model=${HSDB_BENCH_MODEL:-/tmp/hsdb-bench/llama3-8b-${LAYERS:-32}l}
stamp "checkpoint $model"
python3 "$bin/make_llama8b.py" --out "$model" --layers "${LAYERS:-32}" 2>&1 | tail -2
HSDB_WORKER_TRACE=${HSDB_WORKER_TRACE:-1} HSDB_BENCH_MODEL=$model step workers engine/worker 150 "$bin/worker.test" -test.run 'TestCUDA' -test.v -test.count 1
step moments engine/backend/cuda 30 "$bin/cuda.test" -test.run '^$' -test.bench '^BenchmarkStopMoments8Ranks$' -test.benchtime 20x
step driver engine/backend/cuda/driver 30 "$bin/driver.test" -test.count 1
stamp "done, status $status"
exit $status
