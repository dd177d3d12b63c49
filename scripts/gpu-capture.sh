#!/usr/bin/env bash
# gpu-capture.sh: issue 14's GPU throughput criterion and issue 15's
# CUDA tests in one run on the GPU machine (no Go there). Build here:
#   go build -tags cuda -ldflags='-s -w' -o DIR/hsdb ./cmd/hsdb
#   go test -c -tags cuda -ldflags='-s -w' -o DIR/debug.test ./inspect/debug
# then, from the repository root on the GPU machine:
#   scripts/gpu-capture.sh DIR [N]         logs in $OUT
#
#   1. inspect/debug's intervention and view tests on CUDA (set var,
#      patch, lens, attn_probs vs HF, frame, save, compare, top logits),
#      while the checkpoint is written; 1b. scripts/check_formats.py with
#      hsdb --device cuda: the Llama and DeepSeek fixtures' speculators and
#      SpecForge files at --tp 1 and 2 against HF transformers
#      (SKIP_FORMATS=1 skips it).
#   2. The Llama-3-8B-shaped checkpoint of scripts/bench/make_llama8b.py:
#      hsdb capture --format speculators (EAGLE-3 ids 2,16,29,32: 4 layers)
#      of N (default 2000) random sequences of 1024 tokens, bf16,
#      --max-batch-tokens 4096, --writers 16, --prefill-baseline 5 (pure
#      prefill of the job's first batch, same process), then the bytes per
#      token of the files. N × 1024 × 32,776 B (67 GB for 2000) exceeds
#      the machine's 64 GiB disk, so the output goes to /dev/shm (tmpfs)
#      when it has room and the machine has the memory; else the largest N
#      that fits where there is room, said so in the log.
#   3. The same job on the disk (/tmp) for DISK_N (default 400) sequences,
#      with dd's O_DIRECT write rate beside it: the rate a real file system
#      allows, fsync and all.
set -uo pipefail
bin=${1:?usage: gpu-capture.sh DIR [N]}
n=${2:-2000}
out=${OUT:-/tmp/gpu-capture-out}
mkdir -p "$out"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[[ -f $root/scripts/cuda-libs.sh ]] || root=$PWD
source "$root/scripts/cuda-libs.sh"
t0=$(date +%s)
stamp() { echo "[$(($(date +%s) - t0)) s] $*"; }
status=0
{
	nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
	nproc
	free -g
	df -B1 / /tmp /dev/shm
	cat /sys/fs/cgroup/memory.max 2>/dev/null
} >"$out/machine.txt" 2>&1
cat "$out/machine.txt"

model=${HSDB_BENCH_MODEL:-/tmp/hsdb-bench/llama3-8b-random}
stamp "checkpoint $model (in the background) and 1. inspect/debug on CUDA"
python3 "$root/scripts/bench/make_llama8b.py" --out "$model" >"$out/make.log" 2>&1 &
make_pid=$!
tests='^(TestSetVarZeroLastStream|TestSetVarOneRankDiverges|TestEditErrorsLeavePass|TestLensLastLayerIsFinalTopK|TestPatchReproducesRunA|TestSetVarShardedColumns|TestAttnProbsMatchHF|TestAttnHistTop|TestFrameShowsEnclosingInputs|TestSaveGathered|TestCompareFindsFirstDeparture|TestTopLogitsDecoded)$/^cuda$'
(cd "$root/inspect/debug" && timeout 120 "$bin/debug.test" -test.run "$tests" -test.v -test.count=1) >"$out/debug.log" 2>&1
rc=$?
p=$(grep -c -- '--- PASS' "$out/debug.log")
f=$(grep -c -- '--- FAIL' "$out/debug.log")
s=$(grep -c -- '--- SKIP' "$out/debug.log")
echo "debug.test rc=$rc: $p passed, $f failed, $s skipped" | tee "$out/debug_summary.txt"
grep -E -- '--- (FAIL|SKIP)' "$out/debug.log" | head -40
grep -E -B2 -A10 -- '--- FAIL|^panic' "$out/debug.log" | head -80
[[ $rc -eq 0 && $f -eq 0 && $s -eq 0 ]] || status=1

if [[ ${SKIP_FORMATS:-0} != 1 ]]; then
	stamp "1b. trainer files of the HF fixtures written with --device cuda (the asynchronous copies) vs HF"
	timeout 120 python3 "$root/scripts/check_formats.py" --hsdb "$bin/hsdb" --device cuda --out "$out" --json check_formats_cuda.json >"$out/check_formats_cuda.log" 2>&1 || status=1
	echo "check_formats (cuda): $(grep -c '^PASS' "$out/check_formats_cuda.log") PASS, $(grep -c '^FAIL' "$out/check_formats_cuda.log") FAIL"
fi

wait "$make_pid" || { tail "$out/make.log"; exit 1; }
tail -1 "$out/make.log"

rows() { # FILE N: N random rows of 1024 ids below Llama 3's vocabulary
	python3 - "$1" "$2" <<'PY'
import json, random, sys
r = random.Random(0)
with open(sys.argv[1], "w") as f:
    for i in range(int(sys.argv[2])):
        f.write(json.dumps({"input_ids": [r.randrange(128256) for _ in range(1024)]}) + "\n")
PY
}
sizes() { # DIR N
	python3 "$root/scripts/capture_sizes.py" "$1" "$2"
}
capture() { # NAME DIR N: one capture job and its summary
	local name=$1 dir=$2 k=$3
	rows "$dir/in.jsonl" "$k"
	stamp "capture ($name) of $k x 1024 tokens into $dir"
	timeout "${CAPTURE_TIMEOUT:-170}" "$bin/hsdb" capture --model "$model" --device cuda --format speculators --data "$dir/in.jsonl" --out "$dir/hs" \
		--max-batch-tokens 4096 --prefill-baseline 5 --writers "${WRITERS:-16}" 2>"$out/${name}_progress.log" | tee "$out/$name.log"
	[[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
	tail -2 "$out/${name}_progress.log"
	[[ -d $dir/hs ]] && sizes "$dir/hs" "$k" | tee -a "$out/$name.log"
	rm -rf "$dir"
}

per=33562928 # one sample: 1024 x (4 x 4096 x 2 + 8) bytes + a 304-byte header
need=$((n * per + (1 << 30)))
shm_avail=$(df -B1 --output=avail /dev/shm 2>/dev/null | tail -1 | tr -d ' ')
disk_avail=$(df -B1 --output=avail /tmp | tail -1 | tr -d ' ')
mem_avail=$(awk '/MemAvailable/ {print $2 * 1024}' /proc/meminfo)
echo "need $need bytes for $n samples; /dev/shm avail ${shm_avail:-0}, /tmp avail $disk_avail, MemAvailable $mem_avail" | tee "$out/where.txt"
if [[ ${shm_avail:-0} -lt $need && $mem_avail -gt $((need + (24 << 30))) ]]; then
	# tmpfs' default size is half the memory: try to raise it (root only).
	mount -o remount,size=$(((need >> 30) + 4))G /dev/shm 2>>"$out/where.txt" && echo "remounted /dev/shm with size $(((need >> 30) + 4))G" | tee -a "$out/where.txt"
	shm_avail=$(df -B1 --output=avail /dev/shm 2>/dev/null | tail -1 | tr -d ' ')
fi
if [[ ${shm_avail:-0} -ge $need && $mem_avail -gt $((need + (16 << 30))) ]]; then
	dest=/dev/shm/hsdb-capture k=$n
	echo "2. output on tmpfs /dev/shm: $n samples fit" | tee -a "$out/where.txt"
else
	room=$((shm_avail > disk_avail ? shm_avail : disk_avail))
	fs=$([[ $shm_avail -gt $disk_avail ]] && echo /dev/shm || echo /tmp)
	k=$(((room - (2 << 30)) / per))
	[[ $k -gt $n ]] && k=$n
	dest=$fs/hsdb-capture
	echo "2. $n samples do not fit anywhere: the largest run that does, $k samples on $fs" | tee -a "$out/where.txt"
fi
mkdir -p "$dest"
capture main "$dest" "$k"

if [[ $(($(date +%s) - t0)) -lt ${DISK_DEADLINE:-230} ]]; then
	dn=${DISK_N:-400}
	d=$(mktemp -d /tmp/hsdb-capture-disk-XXXX)
	stamp "3. the disk: 2 GiB written with O_DIRECT (dd)"
	dd if=/dev/zero of="$d/dd.bin" bs=32M count=64 oflag=direct 2>&1 | tail -1 | tee "$out/dd.log"
	rm -f "$d/dd.bin"
	capture disk "$d" "$dn"
else
	stamp "3. skipped: past ${DISK_DEADLINE:-230} s"
fi
stamp done
exit $status
