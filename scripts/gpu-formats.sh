#!/usr/bin/env bash
# gpu-formats.sh: issue 14's checks on the GPU machine, in one run. From the
# repository root, with a cuda-tagged binary (go build -tags cuda -o
# bin/hsdb ./cmd/hsdb):
#   scripts/gpu-formats.sh [bin/hsdb] [N]        logs and JSON in $OUT
#
#   1. scripts/check_formats.py: hsdb's speculators and SpecForge files of
#      the llama and deepseek_v3 fixtures at --tp 1 and 2 (hsdb on the CPU),
#      loaded with safetensors.torch.load_file / torch.load(weights_only=True),
#      read as the trainers read them and compared with HF transformers.
#   2. The Llama-3-8B-shaped checkpoint of scripts/bench/make_llama8b.py:
#      hsdb capture --format speculators (the EAGLE-3 default ids 2,16,29,32:
#      4 layers) of N (default 2000) random sequences of 1024 tokens, bf16,
#      with --prefill-baseline 5 (pure prefill of the job's first 4096-token
#      batch, same process), then the bytes on disk per token.
set -uo pipefail
hsdb=${1:-bin/hsdb}
n=${2:-2000}
out=${OUT:-/tmp}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/scripts/cuda-libs.sh"
status=0
t0=$(date +%s)
stamp() { echo "[$(($(date +%s) - t0)) s] $*"; }

if [[ ${SKIP_FIXTURES:-0} != 1 ]]; then
stamp "1. trainer formats vs HF (fixtures, hsdb on the CPU)"
python3 "$root/scripts/check_formats.py" --hsdb "$hsdb" --device cpu --out "$out" 2>&1 | tee "$out/check_formats.log"
[[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
stamp "1b. the llama fixture with hsdb --device cuda"
python3 "$root/scripts/check_formats.py" --hsdb "$hsdb" --device cuda --fixtures testdata/hf/llama --json check_formats_cuda.json --out "$out" 2>&1 | tee "$out/check_formats_cuda.log"
[[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
fi

stamp "2. Llama-3-8B shape: checkpoint"
model=${HSDB_BENCH_MODEL:-/tmp/hsdb-bench/llama3-8b-random}
python3 "$root/scripts/bench/make_llama8b.py" --out "$model" >"$out/make.log" 2>&1 || { tail "$out/make.log"; exit 1; }
work=$(mktemp -d /tmp/hsdb-formats-XXXX)
python3 - "$work/bench.jsonl" "$n" <<'PY'
import json, random, sys
r = random.Random(0)
with open(sys.argv[1], "w") as f:
    for i in range(int(sys.argv[2])):
        f.write(json.dumps({"input_ids": [r.randrange(128256) for _ in range(1024)]}) + "\n")
PY
stamp "2b. the disk: 2 GiB written with O_DIRECT (dd), for the bound on bytes/s"
dd if=/dev/zero of="$work/dd.bin" bs=32M count=64 oflag=direct 2>&1 | tail -1 | tee "$out/dd.log"
rm -f "$work/dd.bin"
stamp "3. capture --format speculators of $n x 1024 tokens, ${WRITERS:-16} writers"
"$hsdb" capture --model "$model" --device cuda --format speculators --data "$work/bench.jsonl" --out "$work/hs" \
	--max-batch-tokens 4096 --prefill-baseline 5 --writers "${WRITERS:-16}" 2>"$out/capture_progress.log" | tee "$out/capture.log"
[[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
tail -3 "$out/capture_progress.log"
python3 "$root/scripts/capture_sizes.py" "$work/hs" "$n" | tee -a "$out/capture.log"
rm -rf "$work"
stamp "done"
exit $status
