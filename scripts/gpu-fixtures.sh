#!/usr/bin/env bash
# Generate hsdb's HF golden fixtures and pack them into $OUT/fixtures.tar.gz.
#
# Run from the repository root on a machine with Python 3.12, torch,
# transformers 5.x and safetensors (the device machine; all work is CPU):
#
#     bash scripts/gpu-fixtures.sh            # $OUT must be set (the run tool sets it)
#
# Steps, each run even if an earlier one failed:
#   A  scripts/fixtures/make_hf_fixtures.py      -> fixtures/hf/...
#   B  scripts/fixtures/make_capture_fixtures.py -> fixtures/captures/...
#   K  scripts/fixtures/make_kimi_fixtures.py    -> fixtures/hf/kimi_k2_thinking, kimi_k25
#   T  scripts/tokenizer_reference.py (only if present) -> fixtures/tokenizer/...
# then tars fixtures/ (with the logs) into $OUT/fixtures.tar.gz, split into
# 15 MiB parts fixtures.tar.gz.partN if larger than that. Exit status is
# non-zero if any step failed; whatever was written is packed regardless.
# Unpack as testdata/README.md says (the parts go to testdata/hf, testdata/captures,
# testdata/fixture-logs and engine/tokenizer/testdata).
set -uo pipefail

export PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1
export OMP_NUM_THREADS=8 MKL_NUM_THREADS=8

: "${OUT:?set OUT to the folder that should receive fixtures.tar.gz}"
PY=${PYTHON:-python3}
WORK=$(mktemp -d)
OUT_TMP=$WORK/fixtures
mkdir -p "$OUT_TMP/logs" "$OUT"
t0=$(date +%s)

"$PY" - <<'EOF' 2>&1 | tee "$OUT_TMP/logs/env.log"
import platform, sys
print("python", sys.version.split()[0], platform.platform())
for mod in ("torch", "transformers", "safetensors", "numpy"):
    try:
        m = __import__(mod)
        print(f"{mod} {getattr(m, '__version__', '?')}")
    except Exception as exc:  # report, the steps below will fail loudly
        print(f"{mod} MISSING: {exc}")
EOF

step() {  # step NAME TIMEOUT_S CMD...
  local name=$1 limit=$2
  shift 2
  echo "=== step $name: $* (limit ${limit}s)"
  local s=$(date +%s)
  timeout "$limit" "$@" 2>&1 | tee "$OUT_TMP/logs/$name.log"
  local rc=$?
  echo "=== step $name: rc=$rc in $(( $(date +%s) - s ))s"
  return $rc
}

rc_a=0 rc_b=0 rc_k=0 rc_t=skipped
step A 240 "$PY" scripts/fixtures/make_hf_fixtures.py --out "$OUT_TMP" || rc_a=$?
step B 150 "$PY" scripts/fixtures/make_capture_fixtures.py --out "$OUT_TMP" || rc_b=$?
step K 200 "$PY" scripts/fixtures/make_kimi_fixtures.py --out "$OUT_TMP" || rc_k=$?
if [ -f scripts/tokenizer_reference.py ]; then
  rc_t=0
  step T 120 "$PY" scripts/tokenizer_reference.py --out "$OUT_TMP/tokenizer" || rc_t=$?
fi

echo
echo "=== files"
(cd "$WORK" && find fixtures -type f -printf '%10s  %p\n' | sort -k2)

tarball="$OUT/fixtures.tar.gz"
tar -czf "$tarball" -C "$WORK" fixtures
size=$(stat -c %s "$tarball")
limit=$((15 * 1024 * 1024))
if [ "$size" -gt "$limit" ]; then
  split -b 15M -d -a 1 "$tarball" "$tarball.part"
  rm -f "$tarball"
  echo "tar is $size bytes: split into $(ls "$tarball".part* | wc -l) parts; rejoin with: cat fixtures.tar.gz.part* > fixtures.tar.gz"
fi
cp "$OUT_TMP/logs/A.log" "$OUT/make_hf_fixtures.log" 2>/dev/null || true
cp "$OUT_TMP/logs/B.log" "$OUT/make_capture_fixtures.log" 2>/dev/null || true

echo
echo "=== summary"
"$PY" - "$OUT_TMP" <<'EOF' || true
import json, os, sys
root = sys.argv[1]
for rel in ("hf/MANIFEST.json", "captures/EXPECTED.json"):
    p = os.path.join(root, rel)
    if not os.path.exists(p):
        print(f"{rel}: MISSING")
        continue
    d = json.load(open(p))
    st = d.get("fixtures") or d.get("status") or {}
    bad = [k for k, v in st.items() if v.get("status") != "ok"]
    print(f"{rel}: {len(st) - len(bad)} ok, {len(bad)} failed {bad if bad else ''}")
EOF
echo "step A (hf fixtures):      rc=$rc_a"
echo "step B (capture fixtures): rc=$rc_b"
echo "step K (kimi fixtures):    rc=$rc_k"
echo "step T (tokenizer):        rc=$rc_t"
ls -l "$OUT"/fixtures.tar.gz* 2>/dev/null
echo "tar size: $size bytes; total time $(( $(date +%s) - t0 ))s"
rm -rf "$WORK"

if [ "$rc_a" != 0 ] || [ "$rc_b" != 0 ] || [ "$rc_k" != 0 ] || { [ "$rc_t" != skipped ] && [ "$rc_t" != 0 ]; }; then
  exit 1
fi
exit 0
