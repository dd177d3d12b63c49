#!/usr/bin/env python3
"""Reference token ids for hsdb's engine/tokenizer tests.

Usage (from the repository root, no network needed):

    python3 scripts/tokenizer_reference.py --out DIR

Reads engine/tokenizer/testdata/strings.txt (one JSON string per line, so
newlines, tabs and any Unicode survive) and writes, for each tokenizer:

    DIR/qwen3.expected.json        HF tokenizers, testdata/qwen3.tokenizer.json.gz
    DIR/deepseek_v3.expected.json  HF tokenizers, testdata/deepseek_v3.tokenizer.json.gz
    DIR/tok512.expected.json       sentencepiece, testdata/tok512.model

HF ids are tokenizers.Tokenizer.from_file(path).encode(s,
add_special_tokens=False).ids and "decoded" is tok.decode(ids,
skip_special_tokens=False); SentencePiece ids are sp.encode(s) and "decoded"
is sp.decode(ids). Each file records the library version and the sha256 of
the strings file and of the tokenizer file, so the Go test can tell a stale
reference from a real mismatch. One failing string is recorded as
{"text", "error"}; one failing tokenizer is reported and the others are
still written. Exit status: 0 when every file was written, 1 otherwise.
Tested with Python 3.12, tokenizers 0.23, sentencepiece 0.2.2.
"""

import argparse
import gzip
import hashlib
import json
import os
import platform
import shutil
import sys
import tempfile
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTDATA = os.path.join(ROOT, "engine", "tokenizer", "testdata")
STRINGS = os.path.join(TESTDATA, "strings.txt")

# name -> (kind, file under testdata)
TOKENIZERS = {
    "qwen3": ("hf", "qwen3.tokenizer.json.gz"),
    "deepseek_v3": ("hf", "deepseek_v3.tokenizer.json.gz"),
    "tok512": ("sentencepiece", "tok512.model"),
}


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_strings():
    out = []
    with open(STRINGS, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            s = json.loads(line)
            if not isinstance(s, str):
                raise ValueError(f"{STRINGS}:{n}: not a JSON string")
            out.append(s)
    return out


def hf_encoder(path, tmp):
    import tokenizers

    if path.endswith(".gz"):
        plain = os.path.join(tmp, os.path.basename(path)[: -len(".gz")])
        with gzip.open(path, "rb") as src, open(plain, "wb") as dst:
            shutil.copyfileobj(src, dst)
        path = plain
    tok = tokenizers.Tokenizer.from_file(path)

    def encode(s):
        ids = tok.encode(s, add_special_tokens=False).ids
        return ids, tok.decode(ids, skip_special_tokens=False)

    info = {
        "library": "tokenizers",
        "version": tokenizers.__version__,
        "vocab_size_with_added": tok.get_vocab_size(with_added_tokens=True),
        "tokenizer_sha256": sha256(path),
    }
    return encode, info


def sp_encoder(path, tmp):
    import sentencepiece

    sp = sentencepiece.SentencePieceProcessor(model_file=path)

    def encode(s):
        ids = sp.encode(s)
        return ids, sp.decode(ids)

    info = {
        "library": "sentencepiece",
        "version": sentencepiece.__version__,
        "vocab_size_with_added": sp.get_piece_size(),
        "bos_id": sp.bos_id(),
        "eos_id": sp.eos_id(),
        "tokenizer_sha256": sha256(path),
    }
    return encode, info


def dumps_one_case_per_line(doc):
    """JSON with one line per header field and per case, for readable diffs."""
    head = {k: v for k, v in doc.items() if k != "cases"}
    lines = [json.dumps(k) + ": " + json.dumps(v, ensure_ascii=False) + "," for k, v in head.items()]
    cases = [json.dumps(c, ensure_ascii=False) for c in doc["cases"]]
    return "{\n" + "\n".join(lines) + '\n"cases": [\n' + ",\n".join(cases) + "\n]\n}\n"


def run_one(name, kind, fname, strings, strings_sha, out_dir, tmp):
    src = os.path.join(TESTDATA, fname)
    make = hf_encoder if kind == "hf" else sp_encoder
    encode, info = make(src, tmp)
    cases, failed = [], 0
    for s in strings:
        try:
            ids, decoded = encode(s)
            cases.append({"text": s, "ids": list(ids), "decoded": decoded})
        except Exception as e:  # record it, keep going
            failed += 1
            cases.append({"text": s, "error": f"{type(e).__name__}: {e}"})
    doc = {
        "name": name,
        "kind": kind,
        "source": "engine/tokenizer/testdata/" + fname,
        "strings_sha256": strings_sha,
        "python": platform.python_version(),
        **info,
        "cases": cases,
    }
    dst = os.path.join(out_dir, f"{name}.expected.json")
    with open(dst + ".tmp", "w", encoding="utf-8") as f:
        f.write(dumps_one_case_per_line(doc))
    os.replace(dst + ".tmp", dst)
    ntok = sum(len(c.get("ids", [])) for c in cases)
    print(f"{name:12s} {info['library']} {info['version']}: {len(cases)} strings, "
          f"{ntok} tokens, {failed} failed -> {dst}")
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="directory for <name>.expected.json")
    ap.add_argument("--only", action="append", choices=sorted(TOKENIZERS), help="run only these tokenizers")
    args = ap.parse_args()

    os.makedirs(args.out, exist_ok=True)
    strings = read_strings()
    strings_sha = sha256(STRINGS)
    print(f"{len(strings)} strings from {STRINGS} (sha256 {strings_sha[:12]})")
    broken = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, (kind, fname) in TOKENIZERS.items():
            if args.only and name not in args.only:
                continue
            try:
                run_one(name, kind, fname, strings, strings_sha, args.out, tmp)
            except Exception:
                broken.append(name)
                print(f"{name:12s} FAILED:", file=sys.stderr)
                traceback.print_exc()
    if broken:
        print(f"summary: {len(broken)} tokenizer(s) failed: {', '.join(broken)}")
        return 1
    print(f"summary: all files written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
