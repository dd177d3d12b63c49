#!/usr/bin/env bash
# gpu-dump-compare.sh: the same debugger session on the CPU and on CUDA
# (--tp 2): break at a middle layer, print per-rank statistics, capture
# three layers, dump; then compare the two dumps tensor by tensor and check
# the CUDA dump with `hsdb check --model` (the CPU forward pass as
# reference). Run from the repository root on the GPU machine with a
# cuda-tagged binary (go build -tags cuda -o bin/hsdb ./cmd/hsdb).
#   scripts/gpu-dump-compare.sh [bin/hsdb]     logs in $OUT (or /tmp)
set -uo pipefail
hsdb=${1:-bin/hsdb}
out=${OUT:-/tmp}
work=$(mktemp -d)
source "$(dirname "$0")/cuda-libs.sh"
status=0
for dev in cpu cuda; do
	cat >"$work/$dev.hsdb" <<EOS
input ids 1,403,407,261,378,365 ; ids 1,400,281,350,305
capture layers 1,2,4
break layers.2
run
print hidden_states
print residual
print stream --seq 1
bt
continue
capture list
dump $work/dump-$dev
EOS
	echo "=== $dev"
	"$hsdb" --device "$dev" --tp 2 -x "$work/$dev.hsdb" >"$out/session-$dev.txt" 2>&1 || { echo "session on $dev failed"; status=1; }
	tail -5 "$out/session-$dev.txt"
done
python3 - "$work/dump-cpu" "$work/dump-cuda" <<'PY' || status=1
import json, os, sys
from safetensors.torch import load_file
a, b = sys.argv[1], sys.argv[2]
ma, mb = json.load(open(os.path.join(a, "manifest.json"))), json.load(open(os.path.join(b, "manifest.json")))
worst = 0.0
n = 0
for f in sorted(x for x in os.listdir(a) if x.endswith(".safetensors")):
    ta, tb = load_file(os.path.join(a, f)), load_file(os.path.join(b, f))
    assert ta.keys() == tb.keys(), (f, ta.keys(), tb.keys())
    for k in sorted(ta):
        x, y = ta[k].double(), tb[k].double()
        assert x.shape == y.shape and ta[k].dtype == tb[k].dtype, (f, k, x.shape, y.shape)
        d = ((x - y).abs().max() / x.abs().max().clamp_min(1e-30)).item()
        worst = max(worst, d)
        n += 1
        print(f"{f} {k} {tuple(x.shape)} {ta[k].dtype}: max|cpu-cuda|/max|cpu| = {d:.3g}")
print(f"compared {n} tensors; worst relative difference {worst:.3g}: {'PASS' if worst <= 1e-4 else 'FAIL'} (f32 tolerance 1e-4)")
sys.exit(0 if worst <= 1e-4 else 1)
PY
echo "=== hsdb check of the CUDA dump against the CPU model"
"$hsdb" check "$work/dump-cuda" --model embedded:stories260K --layers 1,2,4 >"$out/check-cuda-dump.txt" 2>&1; rc=$?
tail -15 "$out/check-cuda-dump.txt"; echo "check rc=$rc"
[[ $rc -eq 0 ]] || status=1
exit $status
