#!/usr/bin/env python3
"""Check that the dumps `hsdb capture` writes load in Python and hold HF's hidden states.

Run from the repository root on a machine with Python 3, torch, transformers
(5.x; 4.x works too) and safetensors -- no GPU and no Go needed. Build the hsdb
binary first on any machine with Go:

    go build -o bin/hsdb ./cmd/hsdb
    python3 scripts/check_dump.py --hsdb bin/hsdb [--out "$OUT"]

It runs, with the given binary:

  1. hsdb capture --model testdata/hf/llama --layers 0,1,2 over the fixture's
     three sequences (input_ids and seq_lens of testdata/hf/llama/reference.safetensors),
     at --tp 1 and --tp 2, saved as f32 and as bf16;
  2. hsdb capture (embedded stories260K) --layers 1,2,4 over
     testdata/stories260K/stories200.jsonl, f32.

Then, for every dump: reads manifest.json, loads every sequence file with
safetensors.torch.load_file, checks that each tensor's shape, dtype and sha256
are the manifest's, and compares hidden_states.{i} with HF transformers run on
the file's own input_ids (one sequence at a time, float32, eager attention):
HF output_hidden_states[i+1] for i below the last layer, and the output of
model.model.layers[i] (a forward hook) for every i -- HF's last
output_hidden_states entry has the final norm applied, so the last layer is
compared with the hook only. The HF models are testdata/hf/llama and
engine/stories/model (the embedded model's HF-format files).

Pass: f32 dumps within 1e-5 of max|HF| per tensor (hsdb's HF parity bound);
bf16 dumps within 2^-8 |HF| + 1e-5 max|HF| per element (one bf16 rounding).
Prints one line per dump and layer and a summary; writes check_dump.json to
--out when given. Exit status 0 when everything passes, 1 otherwise.
"""
import argparse
import hashlib
import json
import os
import sys
import tempfile

import torch
from safetensors.torch import load_file

from hf_check_common import first, fixture_sequences, load_hf, log, run


def hf_layers(model, ids):
    """Per decoder layer i: (HF output_hidden_states[i+1] or None for the last, hooked layer output)."""
    layers = model.model.layers
    hooked = {}
    hooks = [layer.register_forward_hook(lambda m, a, o, i=i: hooked.__setitem__(i, first(o)[0].detach().clone()))
             for i, layer in enumerate(layers)]
    try:
        with torch.no_grad():
            out = model(input_ids=torch.tensor(ids, dtype=torch.int64)[None, :], use_cache=False, output_hidden_states=True)
    finally:
        for h in hooks:
            h.remove()
    hs = out.hidden_states
    n = len(layers)
    return {i: (hs[i + 1][0] if i < n - 1 else None, hooked[i]) for i in range(n)}


def tensor_sha256(t):
    return hashlib.sha256(t.contiguous().view(torch.uint8).numpy().tobytes()).hexdigest()


ST_DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16, "I64": torch.int64}


def within(got, ref, dtype):
    """(ok, max|Δ|/max|ref|) under the dump dtype's bound."""
    g, r = got.float(), ref.float()
    scale = r.abs().max().item() or 1.0
    d = (g - r).abs()
    rel = d.max().item() / scale
    if dtype == torch.float32:
        return rel <= 1e-5, rel
    return bool((d <= 2.0 ** -8 * r.abs() + 1e-5 * scale).all()), rel


def check_dump(dump, model, results):
    with open(os.path.join(dump, "manifest.json")) as f:
        man = json.load(f)
    name = os.path.basename(dump)
    ok = man.get("complete") is True and man.get("format") == "hsdb-capture-dump/1"
    if not ok:
        log(f"FAIL {name}: manifest not complete or wrong format: {man.get('format')}, complete={man.get('complete')}")
    layers = man["capture"]["layers"]
    worst = {l: 0.0 for l in layers}
    bad = []
    for rec in man["sequences"]:
        path = os.path.join(dump, rec["file"])
        ts = load_file(path)
        if sorted(ts) != sorted(rec["tensors"]):
            bad.append(f"{rec['file']}: tensors {sorted(ts)}, manifest {sorted(rec['tensors'])}")
            continue
        for k, t in ts.items():
            want = rec["tensors"][k]
            if list(t.shape) != want["shape"] or t.dtype != ST_DTYPES[want["dtype"]] or tensor_sha256(t) != want["sha256"]:
                bad.append(f"{rec['file']} {k}: {t.dtype} {list(t.shape)} differs from the manifest's {want['dtype']} {want['shape']} or sha256")
        ids = ts["input_ids"].tolist()
        if len(ids) != rec["length"]:
            bad.append(f"{rec['file']}: {len(ids)} input_ids, manifest length {rec['length']}")
        ref = hf_layers(model, ids)
        for l in layers:
            t = ts[f"hidden_states.{l}"]
            hs, hooked = ref[l]
            for what, r in (("output_hidden_states[%d]" % (l + 1), hs), ("layer output (hook)", hooked)):
                if r is None:
                    continue
                good, rel = within(t, r, t.dtype)
                worst[l] = max(worst[l], rel)
                if not good:
                    bad.append(f"{rec['file']} hidden_states.{l} vs HF {what}: {rel:.3g} of max|HF|")
    for l in layers:
        log(f"  {name}: hidden_states.{l}: worst max|Δ|/max|HF| over {len(man['sequences'])} sequences = {worst[l]:.3g}")
    for b in bad[:20]:
        log(f"  FAIL {b}")
    passed = ok and not bad
    log(f"{'PASS' if passed else 'FAIL'} {name}: {len(man['sequences'])} files loaded with safetensors.torch.load_file, "
        f"dtype {man['capture']['dtype']}, tp {man['model']['world_size']}")
    results[name] = {"pass": passed, "sequences": len(man["sequences"]), "dtype": man["capture"]["dtype"],
                     "world_size": man["model"]["world_size"], "worst_rel": worst, "problems": bad[:20]}
    return passed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hsdb", default="bin/hsdb", help="the hsdb binary (go build -o bin/hsdb ./cmd/hsdb)")
    ap.add_argument("--work", default=None, help="where the dumps go (default: a temporary directory)")
    ap.add_argument("--out", default=os.environ.get("OUT"), help="folder for check_dump.json")
    args = ap.parse_args()
    torch.set_num_threads(min(8, os.cpu_count() or 1))
    work = args.work or tempfile.mkdtemp(prefix="hsdb-dumps-")
    log(f"torch {torch.__version__}, dumps in {work}")

    seqs = [",".join(str(x) for x in s) for s in fixture_sequences("testdata/hf/llama/reference.safetensors")]
    dumps = []
    for tp in (1, 2):
        for dt in ("f32", "bf16"):
            d = os.path.join(work, f"llama_tp{tp}_{dt}")
            run([args.hsdb, "capture", "--model", "testdata/hf/llama", "--tp", str(tp), "--layers", "0,1,2",
                 "--ids", ";".join(seqs), "--save-dtype", dt, "--out", d, "--force"])
            dumps.append(("testdata/hf/llama", d))
    d = os.path.join(work, "stories200")
    run([args.hsdb, "capture", "--layers", "1,2,4", "--data", "testdata/stories260K/stories200.jsonl", "--out", d, "--force"])
    dumps.append(("engine/stories/model", d))

    results, models, allok = {}, {}, True
    for mpath, d in dumps:
        if mpath not in models:
            models[mpath] = load_hf(mpath)
        allok = check_dump(d, models[mpath], results) and allok
    log("summary: " + ", ".join(f"{k} {'pass' if v['pass'] else 'FAIL'}" for k, v in results.items()))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "check_dump.json"), "w") as f:
            json.dump({"torch": torch.__version__, "results": results}, f, indent=2)
    sys.exit(0 if allok else 1)


if __name__ == "__main__":
    main()
