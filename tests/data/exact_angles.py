#!/usr/bin/env python3
"""High-precision reference values of the real-number RoPE / sinusoidal angles for wgpu-posenc.

Run:    python3 tests/data/exact_angles.py > tests/data/exact_angles.json
Needs:  Python 3.11 and mpmath (`pip install mpmath`); nothing else.

What it computes
----------------
The "true value" the GPU kernels' cos/sin are tested against (tolerance 1.5e-7 at every u32
position). For base b, rotary dim r (even) and pair j in 0..r/2:

    f_j = b^(-2j/r)          the real-number angular frequency (radians per position), in exact
                             real arithmetic -- NOT rounded to binary64 (or f32) first;
    a   = p * f_j            the angle at integer position p (any u32, 0 ..= 2^32 - 1);
    cos(a), sin(a)           the true values.

Everything is evaluated with mpmath at mp.dps = 60 decimal digits (at p ~ 2^32 the angle is
~4e9 rad, so argument reduction still leaves ~50 correct digits), then rounded once to binary64
(`float(...)`) and written with repr, so each JSON number round-trips exactly. The script re-runs
the whole computation at 80 digits and asserts that every written float is identical.

The sinusoidal table (d_model = 4096) uses f_i = 10000^(-2i/d_model), the same form, so it is the
case base 10000, rotary_dim 4096.

Cases (base, rotary_dim): (10000, 64), (10000, 128), (500000, 64), (500000, 128),
(1000000, 64), (1000000, 128), (10000, 4096).
Pairs per case: 0, 1, 2, r/8, r/4, r/2 - 1 and 3 further distinct pairs drawn with
random.Random("exact_angles-pairs-<base>-<r>") (string seeds are deterministic in CPython 3.11).
Positions (shared by all cases): 0, 1, 2, 3, 1000, 4095, 65535, 65536, 2^20, 2^24 + 1, 2^31 - 1,
2^31, 2^32 - 2, 2^32 - 1, then 24 distinct values floor(2^U), log-uniform over [1, 2^32):
stratified, U_k ~ uniform[k, k + 1) * 32/24 for k in 0..24, drawn with
random.Random("exact_angles-positions"), clamped to [1, 2^32 - 1]; a value already taken is
replaced by the next free integer above it (this happens only in the lowest slices); sorted.

Output (stdout, JSON):
  {"generator": "tests/data/exact_angles.py", "mpmath": "<version>", "dps": 60,
   "cases": [{"base": float, "rotary_dim": int, "pairs": [int], "positions": [int],
              "cos": [[...]], "sin": [[...]], "rev_frac": [[...]]}]}
  cos[k][i] / sin[k][i] belong to pair pairs[k] at position positions[i]; rev_frac[k][i] is
  frac(a / (2 pi)) in [0, 1) as a float, for diagnostics only (which part of the circle).

Stderr (information only): the largest |p * (f64(f_j) - f_j)| over all cases, pairs and
positions, i.e. the angle error caused solely by rounding f_j to binary64 before multiplying by
the position -- the reason the reference must not start from a rounded frequency.
"""

import json
import random
import sys

import mpmath
from mpmath import mp, mpf

DPS = 60
CHECK_DPS = 80

CASES = [(10000, 64), (10000, 128), (500000, 64), (500000, 128),
         (1000000, 64), (1000000, 128), (10000, 4096)]

FIXED_POSITIONS = [0, 1, 2, 3, 1000, 4095, 65535, 65536, 2**20, 2**24 + 1,
                   2**31 - 1, 2**31, 2**32 - 2, 2**32 - 1]
N_RANDOM_POSITIONS = 24
N_RANDOM_PAIRS = 3


def make_positions():
    rng = random.Random("exact_angles-positions")
    taken = set(FIXED_POSITIONS)
    extra = []
    width = 32.0 / N_RANDOM_POSITIONS
    for k in range(N_RANDOM_POSITIONS):
        # Stratified log-uniform: one draw of U in each slice [k, k + 1) * 32 / 24 of [0, 32),
        # so the values spread over every octave range; on a collision (only possible in the
        # lowest slices) step up to the next free integer.
        p = int(2.0 ** ((k + rng.random()) * width))
        p = min(max(p, 1), 2**32 - 1)
        while p in taken:
            p += 1
        taken.add(p)
        extra.append(p)
    return FIXED_POSITIONS + sorted(extra)


def make_pairs(base, r):
    half = r // 2
    fixed = [0, 1, 2, r // 8, r // 4, half - 1]
    out = []
    for j in fixed:
        if j not in out:
            out.append(j)
    rng = random.Random(f"exact_angles-pairs-{base}-{r}")
    extra = []
    while len(extra) < N_RANDOM_PAIRS:
        j = rng.randrange(half)
        if j not in out and j not in extra:
            extra.append(j)
    return out + sorted(extra)


def freq(base, r, j):
    """f_j = base^(-2j/r) at the current working precision."""
    return mpmath.power(mpf(base), mpf(-2 * j) / r)


def compute(dps, positions):
    """Return (cases, max_f64_freq_angle_error, where) at `dps` digits."""
    mp.dps = dps
    two_pi = 2 * mp.pi
    cases = []
    worst = mpf(0)
    worst_at = None
    for base, r in CASES:
        pairs = make_pairs(base, r)
        cos_rows, sin_rows, rev_rows = [], [], []
        for j in pairs:
            f = freq(base, r, j)
            f64_err = abs(mpf(float(f)) - f)  # exact: float(f) is a binary64 value
            crow, srow, rrow = [], [], []
            for p in positions:
                a = p * f
                crow.append(float(mpmath.cos(a)))
                srow.append(float(mpmath.sin(a)))
                rev = a / two_pi
                rrow.append(float(rev - mpmath.floor(rev)))
                e = p * f64_err
                if e > worst:
                    worst, worst_at = e, (base, r, j, p)
            cos_rows.append(crow)
            sin_rows.append(srow)
            rev_rows.append(rrow)
        cases.append({"base": float(base), "rotary_dim": r, "pairs": pairs,
                      "positions": list(positions), "cos": cos_rows, "sin": sin_rows,
                      "rev_frac": rev_rows})
    return cases, worst, worst_at


def dump_row(xs):
    return "[" + ", ".join(json.dumps(x) for x in xs) + "]"


def dump(doc):
    """JSON with one matrix row per line (json.dumps writes floats with repr)."""
    lines = ["{"]
    for key in ("generator", "mpmath", "dps"):
        lines.append(f' {json.dumps(key)}: {json.dumps(doc[key])},')
    lines.append(' "cases": [')
    for ci, c in enumerate(doc["cases"]):
        lines.append("  {")
        lines.append(f'   "base": {json.dumps(c["base"])},')
        lines.append(f'   "rotary_dim": {c["rotary_dim"]},')
        lines.append(f'   "pairs": {dump_row(c["pairs"])},')
        lines.append(f'   "positions": {dump_row(c["positions"])},')
        for mi, key in enumerate(("cos", "sin", "rev_frac")):
            lines.append(f'   {json.dumps(key)}: [')
            rows = c[key]
            for ri, row in enumerate(rows):
                lines.append("    " + dump_row(row) + ("," if ri + 1 < len(rows) else ""))
            lines.append("   ]" + ("," if mi < 2 else ""))
        lines.append("  }" + ("," if ci + 1 < len(doc["cases"]) else ""))
    lines.append(" ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    positions = make_positions()
    cases, worst, worst_at = compute(DPS, positions)

    check, _, _ = compute(CHECK_DPS, positions)
    for c, k in zip(cases, check):
        for key in ("cos", "sin", "rev_frac"):
            if c[key] != k[key]:
                raise SystemExit(f"precision check failed: base {c['base']} r {c['rotary_dim']}"
                                 f" {key} differs between {DPS} and {CHECK_DPS} digits")
    mp.dps = DPS

    doc = {"generator": "tests/data/exact_angles.py", "mpmath": mpmath.__version__,
           "dps": DPS, "cases": cases}
    text = dump(doc)
    assert json.loads(text) == doc
    sys.stdout.write(text)

    base, r, j, p = worst_at
    print(f"exact_angles: {len(cases)} cases, {len(positions)} positions; values identical at "
          f"{DPS} and {CHECK_DPS} digits", file=sys.stderr)
    print(f"exact_angles: max |p * (f64(f_j) - f_j)| = {mpmath.nstr(worst, 6)} rad "
          f"(base {base}, r {r}, j {j}, p {p})", file=sys.stderr)


if __name__ == "__main__":
    main()
