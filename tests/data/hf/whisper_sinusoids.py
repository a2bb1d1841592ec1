#!/usr/bin/env python3
"""Whisper's encoder positions as transformers builds them, and the real-number table.

Run:    python3 tests/data/hf/whisper_sinusoids.py > tests/data/hf/whisper_sinusoids.json
Needs:  torch (CPU), transformers, mpmath.

What it records
---------------
`WhisperModel` made from `WhisperConfig` with whisper-tiny's and whisper-large-v3's encoder
widths (384 and 1280 channels, 1500 positions, the vocabulary of 51 866; the other sizes
small) and a fixed seed: the
encoder's `embed_positions.weight`, which transformers fills with `sinusoids(1500, d_model)`
(the tensor2tensor form: `inv_k = exp(-ln(10000) k / (d/2 - 1))`, `[sin | cos]`, f32). Rows
sampled with random.Random("whisper-<d>"), first and last included; beside them the
real-number rows (mpmath, 40 digits) at the same integer positions.

Output (stdout, JSON):
  {"generator", "transformers", "torch", "mpmath",
   "cases": [{"d_model", "positions", "rows": [int], "transformers": [[d]], "exact": [[d]],
              "max_transformers_error"}]}
"""

import json
import random
import sys

import mpmath
import numpy
import torch
import transformers
from transformers import WhisperConfig, WhisperModel

mpmath.mp.dps = 40


def case(d):
    torch.manual_seed(0)
    config = WhisperConfig(d_model=d, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
                           decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
                           vocab_size=51866, max_source_positions=1500, max_target_positions=32,
                           num_mel_bins=8)
    table = WhisperModel(config).encoder.embed_positions.weight.detach()
    n = table.shape[0]
    rng = random.Random(f"whisper-{d}")
    rows = sorted({0, 1, n - 1, *(rng.randrange(n) for _ in range(9))})
    half = d // 2
    inc = mpmath.log(10000) / (half - 1)
    exact = []
    for p in rows:
        angles = [p * mpmath.exp(-inc * k) for k in range(half)]
        exact.append([float(mpmath.sin(a)) for a in angles] + [float(mpmath.cos(a)) for a in angles])
    theirs = table[rows].double().tolist()
    err = max(abs(a - b) for r, e in zip(theirs, exact) for a, b in zip(r, e))
    theirs = [[float(str(numpy.float32(v))) for v in r] for r in theirs]
    return dict(d_model=d, positions=n, rows=rows, transformers=theirs, exact=exact,
                max_transformers_error=err)


def main():
    cases = [case(384), case(1280)]
    json.dump(dict(generator="tests/data/hf/whisper_sinusoids.py",
                   transformers=transformers.__version__, torch=torch.__version__,
                   mpmath=mpmath.__version__, cases=cases), sys.stdout)
    for c in cases:
        print(f"d_model {c['d_model']}: transformers within {c['max_transformers_error']:.3g} "
              "of the real number", file=sys.stderr)


if __name__ == "__main__":
    main()
