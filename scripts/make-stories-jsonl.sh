#!/usr/bin/env bash
# Writes testdata/stories260K/stories200.jsonl: 200 stories sampled from the
# embedded stories260K with `hsdb generate` at temperature 1, seeds 1..200
# (256 positions each, stopping at BOS as run.c does), one JSON object per
# line: {"id": "story-NNN", "text": "..."} — the input of the `hsdb capture`
# throughput measurement (see README / the capture issue note):
#   hsdb capture --layers 1,2,4 --data testdata/stories260K/stories200.jsonl --out /tmp/stories-dump
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/hsdb ./cmd/hsdb
out=testdata/stories260K/stories200.jsonl
: > "$out"
for seed in $(seq 1 200); do
  bin/hsdb generate --temperature 1 --seed "$seed" --json |
    python3 -c 'import json,sys; r=json.load(sys.stdin); print(json.dumps({"id": "story-%03d" % int(sys.argv[1]), "text": r["text"].strip()}))' "$seed" >> "$out"
done
wc -l "$out"
