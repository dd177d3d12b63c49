#!/usr/bin/env python3
"""capture_sizes.py DIR N: bytes on disk of a speculators capture of N
sequences of 1,024 tokens (scripts/gpu-capture.sh, gpu-formats.sh): files,
total bytes, bytes per token, and tensor bytes per token (each file's
safetensors header — 8-byte length + JSON — taken off) against issue 14's
4 x 4096 x 2 + 8."""
import os
import struct
import sys

d, n = sys.argv[1], int(sys.argv[2])
files = [f for f in os.listdir(d) if f.startswith("hs_")]
if not files:
    sys.exit(f"capture_sizes.py: no hs_* files in {d}")
size = sum(os.path.getsize(os.path.join(d, f)) for f in files)
hdr = 0
for f in files:
    with open(os.path.join(d, f), "rb") as fh:
        hdr += 8 + struct.unpack("<Q", fh.read(8))[0]
tokens = 1024 * len(files)
print(f"bytes on disk: {len(files)} files of {n} asked, {size} bytes, {size / tokens:.2f} per token; "
      f"tensor bytes per token {(size - hdr) / tokens:.2f} (4 x 4096 x 2 + 8 = {4 * 4096 * 2 + 8}); header {hdr / len(files):.0f} bytes per file")
