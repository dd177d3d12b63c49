#!/usr/bin/env python3
"""Reference token ids from OpenAI tiktoken for hsdb's Tiktoken tokenizer.

Usage (from the repository root, no network needed; tiktoken >= 0.8):

    python3 scripts/tiktoken_reference.py --out engine/tokenizer/testdata/tiktoken.expected.json \
        [--o200k PATH/o200k_base.tiktoken] [--bench-json FILE]
    python3 scripts/tiktoken_reference.py --convert-js RANKS_JS OUT

The rank files come from the npm package js-tiktoken (1.0.21): `npm pack
js-tiktoken@1.0.21`, unpack, then --convert-js
package/dist/ranks/cl100k_base.js cl100k_base.tiktoken (likewise o200k_base);
the results are byte-identical to OpenAI's files (sha256 223921b7... and
446a9538...). Nothing else is needed; tiktoken itself runs on the GPU
machine (`scripts/tiktoken_reference.py` is run there with the files
carried along).

Strings: engine/tokenizer/testdata/strings.txt and tiktoken_strings.txt (one
JSON string per line), plus, for the "kimi" runs, a few long texts described as
recipes ([[piece, repeat], ...]) whose ids are stored as a count and the
sha256 of the ids joined by commas.

Rank files (the `base64-token rank` format of tiktoken.model):
  engine/tokenizer/testdata/cl100k_base.tiktoken.gz   cl100k_base, from the
      npm package js-tiktoken 1.0.21 (byte-identical to OpenAI's file:
      sha256 223921b7...)
  --o200k PATH                                        o200k_base (optional;
      too large for git, js-tiktoken's as well)
  testdata/tiktoken/kimi_tiny/tiktoken.model          the first 320 ranks of
      cl100k_base, with its tokenizer_config.json in Kimi's format

Runs (each a tiktoken.Encoding(name, pat_str, mergeable_ranks,
special_tokens)):
  mode "tiktoken": enc.encode(text, allowed_special="all"), with the
      encoding's own special tokens (cl100k/o200k as tiktoken_ext defines
      them; the loader is patched to read the local file);
  mode "kimi": Kimi's TikTokenTokenizer.encode(text) with its defaults, as
      moonshotai Kimi-K2 tokenization_kimi.py does it: special tokens are
      the 256 ids after the ranks, named by tokenizer_config.json's
      added_tokens_decoder (else "<|reserved_token_{id}|>"; without a
      config [BOS] and [EOS] first, hsdb's default); the text is cut into
      400,000-character chunks, each where a run of str.isspace() or of
      non-space characters exceeds 25,000, and each piece is encoded with
      allowed_special="all".
Patterns: the encoding's own (read from tiktoken_ext at run time), Meta
Llama 3's (tiktoken's cl100k before its possessive rewrite) and Kimi's.

Every case stores the ids and, for non-ASCII text, "half":
enc.decode(ids[:len(ids)//2]) (UTF-8 with errors="replace", checking
partial sequences). The file records tiktoken's version and each rank
file's sha256. With --bench-json, also times enc.encode on the strings
joined by newlines and repeated to 1 MiB (best of 5, one thread), the text
the Go benchmark BenchmarkTiktokenEncode builds, and writes tokens/s.
Exit status 0 when everything was written.
"""

import argparse
import base64
import gzip
import hashlib
import json
import os
import platform
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTDATA = os.path.join(ROOT, "engine", "tokenizer", "testdata")
FIXTURE = os.path.join(ROOT, "testdata", "tiktoken", "kimi_tiny")

# Kimi-K2's pat_str (tokenization_kimi.py, TikTokenTokenizer.pat_str).
KIMI_PAT = "|".join([
    r"""[\p{Han}]+""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])
# Meta Llama 3 tokenizer.py pat_str (= tiktoken's cl100k before 0.8).
LLAMA3_PAT = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
KIMI_RESERVED = 256
KIMI_MAX_CHUNK = 400_000
KIMI_MAX_RUN = 25_000

# Long texts for the "kimi" runs, whose cutting they exercise: runs of
# 25,000+ non-space, space and tab characters (one mixing 3-byte Han
# characters, so characters and bytes differ) and a text crossing the
# 400,000-character chunk boundary mid-word.
LONG_RECIPES = [
    [["a", 25001]],
    [[" ", 25001], ["x", 1]],
    [["中a", 12501]],
    [["hello ", 66668]],
    [["x", 5], ["\t", 25003], ["<|endoftext|>", 1], ["[EOS]", 1]],
]


def sha256_bytes(b):
    return hashlib.sha256(b).hexdigest()


def read_bytes(path):
    with open(path, "rb") as f:
        data = f.read()
    return gzip.decompress(data) if path.endswith(".gz") else data


def parse_ranks(data):
    """The rank file format, read as tiktoken.load.load_tiktoken_bpe does."""
    return {base64.b64decode(tok): int(rank) for tok, rank in (line.split() for line in data.splitlines() if line)}


def read_strings():
    out = []
    for name in ("strings.txt", "tiktoken_strings.txt"):
        with open(os.path.join(TESTDATA, name), encoding="utf-8") as f:
            for line in f:
                line = line.rstrip("\n")
                if line:
                    out.append(json.loads(line))
    return out


def strings_sha():
    h = hashlib.sha256()
    for name in ("strings.txt", "tiktoken_strings.txt"):
        with open(os.path.join(TESTDATA, name), "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def own_encoding(name, ranks):
    """tiktoken_ext's definition of name (pat_str, special tokens), with its
    rank loader patched to return the local ranks instead of downloading."""
    import tiktoken_ext.openai_public as pub

    saved = pub.load_tiktoken_bpe
    pub.load_tiktoken_bpe = lambda *a, **k: ranks
    try:
        return getattr(pub, name)()
    finally:
        pub.load_tiktoken_bpe = saved


def kimi_specials(n, config_path):
    names = {n: "[BOS]", n + 1: "[EOS]"}
    bos, eos = "[BOS]", "[EOS]"
    if config_path:
        with open(config_path, encoding="utf-8") as f:
            cfg = json.load(f)
        names = {int(k): v["content"] for k, v in cfg.get("added_tokens_decoder", {}).items()}
        bos = cfg.get("bos_token") or bos
        eos = cfg.get("eos_token") or eos
        bos = bos["content"] if isinstance(bos, dict) else bos
        eos = eos["content"] if isinstance(eos, dict) else eos
    specials = {names.get(i, f"<|reserved_token_{i}|>"): i for i in range(n, n + KIMI_RESERVED)}
    return specials, specials[bos], specials[eos]


def kimi_cut(text):
    """Kimi's chunking and _split_whitespaces_or_nonwhitespaces."""
    for i in range(0, len(text), KIMI_MAX_CHUNK):
        s = text[i:i + KIMI_MAX_CHUNK]
        run, in_space, start = 0, s[0].isspace(), 0
        for j, ch in enumerate(s):
            sp = ch.isspace()
            if sp != in_space:
                in_space, run = sp, 1
            else:
                run += 1
                if run > KIMI_MAX_RUN:
                    yield s[start:j]
                    start, run = j, 1
        yield s[start:]


def make_encoder(enc, mode):
    if mode == "tiktoken":
        return lambda s: enc.encode(s, allowed_special="all")
    return lambda s: [t for piece in kimi_cut(s) for t in enc.encode(piece, allowed_special="all")]


def ids_sha(ids):
    return sha256_bytes(",".join(map(str, ids)).encode())


def run_one(spec, strings):
    import tiktoken

    enc = tiktoken.Encoding(name=spec["name"], pat_str=spec["pattern"], mergeable_ranks=spec["ranks"], special_tokens=spec["specials"])
    encode = make_encoder(enc, spec["mode"])
    cases = []
    for s in strings:
        ids = encode(s)
        c = {"ids": ids}
        if not s.isascii():
            c["half"] = enc.decode(ids[: len(ids) // 2])
        cases.append(c)
    long = []
    for recipe in LONG_RECIPES if spec["mode"] == "kimi" else []:
        text = "".join(p * n for p, n in recipe)
        ids = encode(text)
        long.append({"recipe": recipe, "n_ids": len(ids), "ids_sha256": ids_sha(ids)})
    return enc, {
        "name": spec["name"],
        "ranks_file": spec["ranks_file"],
        "ranks_sha256": spec["ranks_sha256"],
        "pattern": spec["pattern"],
        "mode": spec["mode"],
        "specials": spec["specials"],
        "bos": spec.get("bos", -1),
        "eos": spec.get("eos", -1),
        "cases": cases,
        "long": long,
    }


def specs(o200k_path):
    out = []
    files = [("cl100k_base", os.path.join(TESTDATA, "cl100k_base.tiktoken.gz"), "engine/tokenizer/testdata/cl100k_base.tiktoken.gz")]
    if o200k_path:
        files.append(("o200k_base", o200k_path, "o200k_base.tiktoken"))
    for name, path, rel in files:
        data = read_bytes(path)
        ranks = parse_ranks(data)
        own = own_encoding(name, ranks)
        common = {"ranks": ranks, "ranks_file": rel, "ranks_sha256": sha256_bytes(data)}
        eot = own["special_tokens"]["<|endoftext|>"]
        out.append({**common, "name": name, "pattern": own["pat_str"], "mode": "tiktoken", "specials": own["special_tokens"], "eos": eot})
        if name == "cl100k_base":
            out.append({**common, "name": name + "+llama3_pattern", "pattern": LLAMA3_PAT, "mode": "tiktoken", "specials": own["special_tokens"], "eos": eot})
        sp, bos, eos = kimi_specials(len(ranks), None)
        out.append({**common, "name": name + "+kimi", "pattern": KIMI_PAT, "mode": "kimi", "specials": sp, "bos": bos, "eos": eos})
    data = read_bytes(os.path.join(FIXTURE, "tiktoken.model"))
    ranks = parse_ranks(data)
    sp, bos, eos = kimi_specials(len(ranks), os.path.join(FIXTURE, "tokenizer_config.json"))
    out.append({"ranks": ranks, "ranks_file": "testdata/tiktoken/kimi_tiny/tiktoken.model", "ranks_sha256": sha256_bytes(data),
                "name": "kimi_tiny", "pattern": KIMI_PAT, "mode": "kimi", "specials": sp, "bos": bos, "eos": eos})
    return out


def convert_js(src, dst):
    """Writes the rank file of a js-tiktoken ranks module (npm package
    js-tiktoken, dist/ranks/<name>.js: one JSON object whose "bpe_ranks"
    holds lines "<key> <first rank> <base64 token> <base64 token> ...", the
    tokens having consecutive ranks) as `base64 rank` lines in rank order."""
    with open(src, encoding="utf-8") as f:
        text = f.read()
    obj = json.loads(text[text.index("{"): text.rindex("}") + 1])
    ranks = {}
    for line in obj["bpe_ranks"].split("\n"):
        if not line:
            continue
        fields = line.split(" ")
        for i, tok in enumerate(fields[2:]):
            base64.b64decode(tok, validate=True)
            ranks[tok] = int(fields[1]) + i
    items = sorted(ranks.items(), key=lambda kv: kv[1])
    if [r for _, r in items] != list(range(len(items))):
        raise ValueError(f"{src}: ranks are not 0..{len(items) - 1}")
    with open(dst + ".tmp", "w") as f:
        f.writelines(f"{tok} {rank}\n" for tok, rank in items)
    os.replace(dst + ".tmp", dst)
    with open(dst, "rb") as f:
        print(f"{dst}: {len(items)} ranks, sha256 {sha256_bytes(f.read())}")


def bench_text(strings):
    one = "\n".join(strings)
    k = (1 << 20) // len(one.encode()) + 1
    return (one + "\n") * k


def bench(enc, text):
    best = float("inf")
    n = 0
    for _ in range(5):
        t0 = time.perf_counter()
        n = len(enc.encode(text, allowed_special="all"))
        best = min(best, time.perf_counter() - t0)
    return {"tokens": n, "bytes": len(text.encode()), "seconds": best, "tokens_per_s": n / best}


def dumps(doc):
    """JSON with one line per case, for readable diffs."""
    lines = ["{"]
    for k, v in doc.items():
        if k != "runs":
            lines.append(json.dumps(k) + ": " + json.dumps(v, ensure_ascii=False) + ",")
    lines.append('"runs": [')
    for ri, r in enumerate(doc["runs"]):
        lines.append("{")
        for k, v in r.items():
            if k in ("cases", "long"):
                continue
            lines.append(json.dumps(k) + ": " + json.dumps(v, ensure_ascii=False) + ",")
        lines.append('"long": [\n' + ",\n".join(json.dumps(c, ensure_ascii=False) for c in r["long"]) + "\n],")
        lines.append('"cases": [\n' + ",\n".join(json.dumps(c, ensure_ascii=False) for c in r["cases"]) + "\n]")
        lines.append("}" + ("," if ri + 1 < len(doc["runs"]) else ""))
    lines.append("]\n}\n")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="the expected-ids JSON file to write")
    ap.add_argument("--convert-js", nargs=2, metavar=("RANKS_JS", "OUT"),
                    help="only convert js-tiktoken's dist/ranks/NAME.js to a rank file")
    ap.add_argument("--o200k", help="o200k_base.tiktoken (optional)")
    ap.add_argument("--bench-json", help="also time tiktoken and write tokens/s here")
    ap.add_argument("--no-long", action="store_true", help="leave out the long texts (quick checks)")
    args = ap.parse_args()
    if args.convert_js:
        convert_js(*args.convert_js)
        return 0
    if not args.out:
        ap.error("--out is required")
    import tiktoken

    strings = read_strings()
    doc = {
        "library": "tiktoken",
        "version": tiktoken.__version__,
        "python": platform.python_version(),
        "strings_sha256": strings_sha(),
        "texts": strings,
        "runs": [],
    }
    benches, own_specials = {}, {}
    if args.no_long:
        LONG_RECIPES.clear()
    for spec in specs(args.o200k):
        t0 = time.perf_counter()
        enc, run = run_one(spec, strings)
        doc["runs"].append(run)
        print(f"{run['name']:28s} {run['mode']:8s} {len(run['cases'])} strings, "
              f"{sum(len(c['ids']) for c in run['cases'])} ids, {len(run['long'])} long texts, {time.perf_counter() - t0:.1f}s")
        if run["name"] == "o200k_base":
            own_specials = run["specials"]
        if args.bench_json and run["name"] in ("cl100k_base", "o200k_base"):
            benches[run["name"]] = bench(enc, bench_text(strings))
        if args.bench_json and run["name"] == "o200k_base+kimi":
            plain = tiktoken.Encoding(name="kimi", pat_str=KIMI_PAT, mergeable_ranks=spec["ranks"], special_tokens=own_specials)
            benches["o200k_base+kimi"] = bench(plain, bench_text(strings))
    with open(args.out + ".tmp", "w", encoding="utf-8") as f:
        f.write(dumps(doc))
    os.replace(args.out + ".tmp", args.out)
    print(f"wrote {args.out}: tiktoken {tiktoken.__version__}, {len(strings)} strings, {len(doc['runs'])} runs")
    if args.bench_json:
        with open(args.bench_json, "w") as f:
            json.dump(benches, f, indent=1)
        for k, v in benches.items():
            print(f"bench tiktoken {k}: {v['tokens']} tokens in {v['seconds']*1e3:.1f} ms = {v['tokens_per_s']/1e6:.2f} M tokens/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
