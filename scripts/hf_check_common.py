"""Helpers shared by scripts/check_dump.py and scripts/check_formats.py.

Both run an hsdb binary, then compare what it wrote with HF transformers
run in float32 with eager attention on the same ids. torch, transformers
and safetensors are imported by the functions that need them, so importing
this module needs none of them.
"""
import subprocess
import sys


def log(*a):
    print(*a, flush=True)


def load_hf(path):
    """The HF model at path in float32 with eager attention, in eval mode."""
    import torch
    from transformers import AutoModelForCausalLM
    try:
        m = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="eager")
    except TypeError:  # transformers 4.x spells it torch_dtype
        m = AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float32, attn_implementation="eager")
    m.eval()
    return m


def first(o):
    """A module's first output (decoder layers return a tuple in some versions)."""
    return o[0] if isinstance(o, (tuple, list)) else o


def run(cmd):
    """Runs cmd, echoing it and its stdout; exits with its stderr when it fails."""
    log("$ " + " ".join(cmd))
    p = subprocess.run(cmd, capture_output=True, text=True)
    sys.stdout.write(p.stdout)
    if p.returncode != 0:
        sys.stdout.write(p.stderr)
        raise SystemExit(f"hsdb exited {p.returncode}")
    return p.stdout


def fixture_sequences(reference):
    """The token sequences of an HF fixture's reference.safetensors: input_ids
    split by seq_lens (testdata/README.md: concatenated in order)."""
    from safetensors.torch import load_file
    ref = load_file(reference)
    ids, lens = ref["input_ids"].tolist(), ref["seq_lens"].tolist()
    if sum(lens) != len(ids):
        raise SystemExit(f"{reference}: seq_lens sum to {sum(lens)}, input_ids has {len(ids)}")
    out, off = [], 0
    for n in lens:
        out.append(ids[off:off + n])
        off += n
    return out
