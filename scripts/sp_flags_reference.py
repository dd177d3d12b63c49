#!/usr/bin/env python3
"""What HF transformers does with a bare SentencePiece tokenizer.model.

hsdb's reference for a model directory that holds tokenizer.model (no
tokenizer.json) and a tokenizer_config.json (engine/tokenizer/sp_hf.go,
TestSentencePieceHFFlags). For each case below, the script copies
engine/tokenizer/testdata/tok512.model as tokenizer.model into a fresh
temporary directory, writes the case's tokenizer_config.json (and
config.json where given), loads it with AutoTokenizer.from_pretrained and
records tok("Hello world").input_ids, bos_token_id, eos_token_id, the
class transformers picked, and the ids of five more strings ("more":
repeated and leading spaces, a newline, non-ASCII letters and digits, the
empty string).

Run it on the GPU machine (transformers 5.17.0, no network needed), from
the repository root:

    python3 scripts/sp_flags_reference.py > engine/tokenizer/testdata/sp_flags.expected.json

It prints one JSON object on stdout (the run time goes to stderr). The
recorded run (transformers 5.17.0, the same cases and calls, 2 December
2026; the testdata file is its output re-indented) gave for "Hello world":

    class_only          LlamaTokenizer     [346, 306, 414, 263, 304, 341]
    add_eos             LlamaTokenizer     [346, 306, 414, 263, 304, 341, 2]
    no_bos              LlamaTokenizer     [346, 306, 414, 263, 304, 341]
    both                LlamaTokenizer     [1, 346, 306, 414, 263, 304, 341, 2]
    null_bos            LlamaTokenizer     [346, 306, 414, 263, 304, 341]
    no_bos_add_eos      LlamaTokenizer     [346, 306, 414, 263, 304, 341, 2]
    model_type_only     TokenizersBackend  [440, 411, 306, 414, 263, 304, 341]
    model_type_add_eos  TokenizersBackend  [440, 411, 306, 414, 263, 304, 341, 2]
    class_and_model_type       LlamaTokenizer  [346, 306, 414, 263, 304, 341]
    class_and_model_type_both  LlamaTokenizer  [1, 346, 306, 414, 263, 304, 341, 2]
    legacy_false_bos           LlamaTokenizer  [1, 346, 306, 414, 263, 304, 341]

with bos 1 and eos 2 throughout.
"""

import json
import os
import shutil
import sys
import tempfile
import time

t0 = time.time()
import transformers
from transformers import AutoTokenizer

res = {"transformers": transformers.__version__}
# (name, tokenizer_config.json, config.json or None)
cases = [
    ("class_only", {"tokenizer_class": "LlamaTokenizer"}, None),
    ("add_eos", {"tokenizer_class": "LlamaTokenizer", "add_eos_token": True}, None),
    ("no_bos", {"tokenizer_class": "LlamaTokenizer", "add_bos_token": False}, None),
    ("both", {"tokenizer_class": "LlamaTokenizer", "add_bos_token": True, "add_eos_token": True}, None),
    ("null_bos", {"tokenizer_class": "LlamaTokenizer", "add_bos_token": None}, None),
    ("no_bos_add_eos", {"tokenizer_class": "LlamaTokenizer", "add_bos_token": False, "add_eos_token": True}, None),
    ("model_type_only", {}, {"model_type": "llama"}),
    ("model_type_add_eos", {"add_eos_token": True}, {"model_type": "llama"}),
    ("class_and_model_type", {"tokenizer_class": "LlamaTokenizer"}, {"model_type": "llama"}),
    ("class_and_model_type_both", {"tokenizer_class": "LlamaTokenizer", "add_bos_token": True, "add_eos_token": True}, {"model_type": "llama"}),
    ("legacy_false_bos", {"tokenizer_class": "LlamaTokenizer", "legacy": False, "add_bos_token": True}, None),
]
for name, cfg, mcfg in cases:
    d = tempfile.mkdtemp()
    shutil.copy("engine/tokenizer/testdata/tok512.model", os.path.join(d, "tokenizer.model"))
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump(cfg, f)
    if mcfg is not None:
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(mcfg, f)
    try:
        tok = AutoTokenizer.from_pretrained(d)
        res[name] = {"ids": tok("Hello world").input_ids, "bos": tok.bos_token_id, "eos": tok.eos_token_id, "class": type(tok).__name__,
                     "more": {t: tok(t).input_ids for t in ["  Hello  world", " x", "a\nb c", "héllo wörld 123", ""]}}
    except Exception as e:
        res[name] = {"error": repr(e)[:300]}
    shutil.rmtree(d, ignore_errors=True)
print(json.dumps(res))
print("secs", time.time() - t0, file=sys.stderr)
