#!/usr/bin/env python3
"""High-precision cos and sin of RoPE angles at f32 positions, for wgpu-posenc.

Run:    python3 tests/data/exact_angles_f32.py > tests/data/exact_angles_f32.json
Needs:  Python 3.11 and mpmath (`pip install mpmath`); nothing else.

What it computes
----------------
The "true value" the kernels' cos and sin at f32 positions are tested against (tolerance
1.5e-7): for a spec (base b, rotary dim r, unit, linear factor c) and pair j in 0..r/2,

    f_j = b^(-2j/r) / c        the real-number frequency (c = 1 in every spec here: the crate's
                               exact scalings take factors of at least 1), in radians per
                               position, or in revolutions per position where unit is
                               "revolutions" (angle 2 pi p f_j);
    a   = p * f_j (* 2 pi)     at the f32 position p, taken as the exact rational it is
                               (revolutions: cospi and sinpi of 2 p f_j, exact at exact
                               quarter turns);
    cos(a), sin(a)             the true values.

Specs: text RoPE (10000, 64 and 500000, 16, radians); DINOv3's periods (100, 32,
revolutions: the first pair exactly one revolution per unit coordinate) and (10000, 128,
revolutions).

Positions (shared, f32 values): 0, +-0.5, 1/3 and -0.9285714 (DINOv3's first coordinate on
a 14-patch side) rounded to f32, +-0.95, +-1, 7.25, 1000.5, -4095.75, 65535.5, 2^23 + 0.5
(rounded to f32), 2^24 + 2, -2^31, 2^32 - 256 (the largest f32 below 2^32), then 24 values
drawn with random.Random("exact_angles_f32"): sign +-, magnitude 2^U with U uniform in
[-8, 32), rounded to f32; sorted by value.

Everything is evaluated with mpmath at 60 digits (an angle of 2^32 * 2 pi rad still keeps ~50
correct digits), rounded once to binary64 and written with repr; the script redoes
it at 80 digits and asserts that every value is identical.

Output (stdout, JSON): {"generator", "mpmath", "dps", "positions": [f32 values as decimals
that read back exactly], "specs": [{"base", "rotary_dim", "unit", "linear_factor", "pairs",
"cos": [[pair][position]], "sin": [[pair][position]]}]}
"""

import json
import random
import struct
import sys

import mpmath
from mpmath import mp, mpf

DPS = 60
CHECK_DPS = 80

SPECS = [(10000, 64, "radians", 1.0), (500000, 16, "radians", 1.0), (100, 32, "revolutions", 1.0),
         (10000, 128, "revolutions", 1.0)]


def f32(x):
    """x rounded to the nearest float32, as a Python float (exact)."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def make_positions():
    fixed = [0.0, 0.5, -0.5, 1 / 3, -0.9285714, 0.95, -0.95, 1.0, -1.0, 7.25, 1000.5, -4095.75,
             65535.5, 2.0**23 + 0.5, 2.0**24 + 2, -(2.0**31), 2.0**32 - 256]
    rng = random.Random("exact_angles_f32")
    drawn = [rng.choice([-1.0, 1.0]) * 2.0 ** rng.uniform(-8, 32) for _ in range(24)]
    values = sorted({f32(x) for x in fixed + drawn})
    assert all(abs(v) < 2.0**32 for v in values)
    return values


def pairs_of(r):
    half = r // 2
    return sorted({0, 1, 2, half // 4, half // 2, half - 1})


def compute(dps, positions):
    mp.dps = dps
    out = []
    for base, r, unit, factor in SPECS:
        pairs = pairs_of(r)
        cos_rows, sin_rows = [], []
        for j in pairs:
            f = mpmath.power(mpf(base), mpf(-2 * j) / r) / mpf(factor)
            if unit == "revolutions":
                # cos(2 pi t) as cospi(2 t): exact zeros at exact quarter turns (t = p * 1 at
                # the first pair), where cos(2 pi t) would leave ~10^-dps.
                turns = [2 * mpf(p) * f for p in positions]
                cos_rows.append([float(mpmath.cospi(t)) for t in turns])
                sin_rows.append([float(mpmath.sinpi(t)) for t in turns])
            else:
                angles = [mpf(p) * f for p in positions]
                cos_rows.append([float(mpmath.cos(a)) for a in angles])
                sin_rows.append([float(mpmath.sin(a)) for a in angles])
        out.append({"base": float(base), "rotary_dim": r, "unit": unit, "linear_factor": factor,
                    "pairs": pairs, "cos": cos_rows, "sin": sin_rows})
    return out


def main():
    positions = make_positions()
    specs = compute(DPS, positions)
    if compute(CHECK_DPS, positions) != specs:
        raise SystemExit(f"precision check failed: values differ between {DPS} and {CHECK_DPS} digits")
    doc = {"generator": "tests/data/exact_angles_f32.py", "mpmath": mpmath.__version__, "dps": DPS,
           "positions": positions, "specs": specs}
    text = json.dumps(doc, indent=1)
    assert json.loads(text) == doc
    sys.stdout.write(text + "\n")
    print(f"exact_angles_f32: {len(specs)} specs, {len(positions)} positions; identical at "
          f"{DPS} and {CHECK_DPS} digits", file=sys.stderr)


if __name__ == "__main__":
    main()
