#!/usr/bin/env python3
"""Check that hsdb's speculators and SpecForge files load as the trainers load them and hold HF's hidden states.

Run from the repository root on a machine with Python 3, torch, transformers
(5.x) and safetensors; no Go needed. Build the hsdb binary first:

    go build -o bin/hsdb ./cmd/hsdb
    python3 scripts/check_formats.py --hsdb bin/hsdb [--out "$OUT"] [--device cpu|cuda]

For the HF fixtures testdata/hf/llama (3 decoder layers) and
testdata/hf/deepseek_v3 (4, MLA + MoE) at --tp 1 and 2 it runs, on the
fixture's own sequences (reference.safetensors: input_ids, seq_lens):

  1. hsdb capture --format speculators --layers 0,1,...,L (every position of
     the residual stream: id 0 the embeddings, id L the last layer's output),
     bf16 (the default). Each hs_{idx}.safetensors is loaded with
     safetensors.torch.load_file and read as speculators' ArrowDataset does
     (src/speculators/train/data.py): hidden_states[:, :-1].flatten(1) is the
     auxiliary input, hidden_states[:, -1] the verifier's last hidden state;
     token_ids must equal the sequence.
  2. hsdb capture --format specforge --layers A,B,C, three SGLang ids (decoder
     layers' outputs; SpecForge trains on exactly three), 0,1,2 and, where
     the model has more layers, L-3,L-2,L-1, so every layer is read; plain
     and --compress. Each
     rows_0-2000/data_{idx}.ckpt is loaded with torch.load(weights_only=True)
     (data_{idx}.ckpt.gz through gzip as SpecForge's OfflineEagle3Dataset
     opens it) and read as its process_data does: aux_hidden_state.squeeze(0),
     hidden_state.squeeze(0), input_ids, loss_mask.

References: HF transformers on the same ids, one sequence at a time,
float32, eager attention. Speculators id k is the residual stream entering
decoder layer k: output_hidden_states[k] for k < L, and for k = L the output
of model.model.layers[L-1] (a forward hook; HF's last output_hidden_states
entry has the final norm applied). SGLang id s is decoder layer s's output
(= speculators id s+1). SpecForge's hidden_state is the final norm's output:
HF's last output_hidden_states entry.

Pass: every element within one bf16 rounding of HF plus hsdb's float32
parity bound: |got - ref| <= 2^-8 |ref| + 1e-5 max|ref|, per layer block.
Prints the worst max|Δ| / max|HF| per layer and run; writes
check_formats.json to --out. Exit status 0 when everything passes.
"""
import argparse
import gzip
import io
import json
import os
import sys
import tempfile

import torch
from safetensors.torch import load_file

from hf_check_common import first, fixture_sequences, load_hf, log, run


def hf_ref(model, ids):
    """(output_hidden_states tuple [L+1] of [len, hidden], last decoder layer's raw output [len, hidden])."""
    layers = model.model.layers
    hooked = {}
    h = layers[-1].register_forward_hook(lambda m, a, o: hooked.__setitem__("last", first(o)[0].detach().clone()))
    try:
        with torch.no_grad():
            out = model(input_ids=torch.tensor(ids, dtype=torch.int64)[None, :], use_cache=False, output_hidden_states=True)
    finally:
        h.remove()
    return [x[0] for x in out.hidden_states], hooked["last"]


def within(got, ref):
    """(ok, max|Δ|/max|ref|) under one bf16 rounding plus 1e-5 of max|ref|; fails on NaN."""
    g, r = got.float(), ref.float()
    if g.shape != r.shape:
        return False, float("inf")
    scale = r.abs().max().item()
    if not scale > 0:
        return False, float("inf")
    d = (g - r).abs()
    ok = bool((d <= 2.0 ** -8 * r.abs() + 1e-5 * scale).all()) and not bool(torch.isnan(g).any())
    return ok, d.max().item() / scale


def sequences(fixture):
    return fixture_sequences(os.path.join(fixture, "reference.safetensors"))


def check_speculators(d, seqs, refs, L, name, results):
    worst, bad = [0.0] * (L + 1), []
    for i, ids in enumerate(seqs):
        ts = load_file(os.path.join(d, f"hs_{i}.safetensors"))
        if sorted(ts) != ["hidden_states", "token_ids"]:
            bad.append(f"hs_{i}: keys {sorted(ts)}")
            continue
        hs, tok = ts["hidden_states"], ts["token_ids"]
        if tok.dtype != torch.int64 or tok.tolist() != ids or hs.dtype != torch.bfloat16 or tuple(hs.shape) != (len(ids), L + 1, hs.shape[2]):
            bad.append(f"hs_{i}: token_ids {tok.dtype} {tok.tolist()[:4]}.., hidden_states {hs.dtype} {tuple(hs.shape)}")
            continue
        # speculators' read (ArrowDataset._get_raw_data)
        aux = hs[:, :-1].flatten(1)  # [seq, L * hidden]: ids 0..L-1
        last = hs[:, -1]  # [seq, hidden]: id L
        H = hs.shape[2]
        hf, raw_last = refs[i]
        for k in range(L + 1):
            got = aux[:, k * H:(k + 1) * H] if k < L else last
            want = hf[k] if k < L else raw_last
            ok, rel = within(got, want)
            worst[k] = max(worst[k], rel)
            if not ok:
                bad.append(f"hs_{i} id {k}: {rel:.3g} of max|HF|")
    for k in range(L + 1):
        what = "embeddings" if k == 0 else (f"layer {L - 1} output (pre-norm, hook)" if k == L else f"output_hidden_states[{k}]")
        log(f"  {name}: speculators id {k} vs HF {what}: worst max|Δ|/max|HF| = {worst[k]:.3g}")
    for b in bad[:10]:
        log(f"  FAIL {b}")
    results[name] = {"pass": not bad, "worst_rel_per_id": worst, "problems": bad[:10]}
    log(f"{'PASS' if not bad else 'FAIL'} {name}: {len(seqs)} files via safetensors.torch.load_file")
    return not bad


def check_specforge(d, seqs, refs, L, sids, name, gz, results):
    worst, bad = [0.0] * (L + 1), []
    for i, ids in enumerate(seqs):
        path = os.path.join(d, "rows_0-2000", f"data_{i}.ckpt" + (".gz" if gz else ""))
        if gz:
            with gzip.open(path, "rb") as f:
                data = torch.load(io.BytesIO(f.read()), weights_only=True)
        else:
            data = torch.load(path, weights_only=True, mmap=True)
        # SpecForge's read (OfflineEagle3Dataset.process_data)
        aux = data["aux_hidden_state"].squeeze(0)
        last = data["hidden_state"].squeeze(0)
        if data["input_ids"].tolist() != ids or data["loss_mask"].tolist() != [1] * len(ids) or aux.dtype != torch.bfloat16 or aux.shape[0] != len(ids):
            bad.append(f"{path}: input_ids/loss_mask/aux {aux.dtype} {tuple(aux.shape)}")
            continue
        H = last.shape[1]
        hf, raw_last = refs[i]
        for j, s in enumerate(sids):
            want = hf[s + 1] if s + 1 < L else raw_last
            ok, rel = within(aux[:, j * H:(j + 1) * H], want)
            worst[s] = max(worst[s], rel)
            if not ok:
                bad.append(f"{path} SGLang id {s}: {rel:.3g} of max|HF|")
        ok, rel = within(last, hf[L])
        worst[L] = max(worst[L], rel)
        if not ok:
            bad.append(f"{path} hidden_state: {rel:.3g} of max|HF|")
    for s in sids:
        log(f"  {name}: SGLang id {s} vs HF {'output_hidden_states[%d]' % (s + 1) if s + 1 < L else 'layer %d output (hook)' % s}: worst {worst[s]:.3g}")
    log(f"  {name}: hidden_state vs HF output_hidden_states[{L}] (final norm): worst {worst[L]:.3g}")
    for b in bad[:10]:
        log(f"  FAIL {b}")
    results[name] = {"pass": not bad, "worst_rel_per_id": worst, "problems": bad[:10]}
    log(f"{'PASS' if not bad else 'FAIL'} {name}: {len(seqs)} files via torch.load(weights_only=True){' after gzip' if gz else ''}")
    return not bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hsdb", default="bin/hsdb")
    ap.add_argument("--device", default="cpu", help="hsdb's --device")
    ap.add_argument("--work", default=None)
    ap.add_argument("--out", default=os.environ.get("OUT"))
    ap.add_argument("--fixtures", default="testdata/hf/llama,testdata/hf/deepseek_v3", help="comma-separated HF fixture directories")
    ap.add_argument("--json", default="check_formats.json", help="file name of the results under --out")
    args = ap.parse_args()
    torch.set_num_threads(min(8, os.cpu_count() or 1))
    work = args.work or tempfile.mkdtemp(prefix="hsdb-formats-")
    log(f"torch {torch.__version__}, files in {work}")
    results, allok = {}, True
    for fixture in args.fixtures.split(","):
        model = load_hf(fixture)
        L = model.config.num_hidden_layers
        seqs = sequences(fixture)
        refs = [hf_ref(model, s) for s in seqs]
        idarg = ";".join(",".join(str(x) for x in s) for s in seqs)
        fx = os.path.basename(fixture) + ("" if args.device == "cpu" else "_" + args.device)
        for tp in (1, 2):
            base = [args.hsdb, "capture", "--model", fixture, "--tp", str(tp), "--device", args.device, "--ids", idarg, "--force"]
            d = os.path.join(work, f"{fx}_tp{tp}_speculators")
            run(base + ["--format", "speculators", "--layers", ",".join(str(k) for k in range(L + 1)), "--out", d])
            allok = check_speculators(d, seqs, refs, L, f"{fx} tp{tp} speculators", results) and allok
            for gz in (False, True):
                for sids in sorted({(0, 1, 2), (L - 3, L - 2, L - 1)}):
                    tag = "_".join(str(s) for s in sids)
                    d = os.path.join(work, f"{fx}_tp{tp}_specforge_{tag}{'_gz' if gz else ''}")
                    run(base + ["--format", "specforge", "--layers", ",".join(str(s) for s in sids), "--out", d] + (["--compress"] if gz else []))
                    allok = check_specforge(d, seqs, refs, L, list(sids), f"{fx} tp{tp} specforge ids {tag}{' gz' if gz else ''}", gz, results) and allok
    log("summary: " + ", ".join(f"{k} {'pass' if v['pass'] else 'FAIL'}" for k, v in results.items()))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, args.json), "w") as f:
            json.dump({"torch": torch.__version__, "results": results}, f, indent=2)
    sys.exit(0 if allok else 1)


if __name__ == "__main__":
    main()
