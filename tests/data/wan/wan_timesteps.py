#!/usr/bin/env python3
"""Wan 2.1's original timestep projection (float64), and the real numbers it approximates.

Run:    python3 tests/data/wan/wan_timesteps.py WAN2.1_CHECKOUT [COMMIT] > tests/data/wan/wan_timesteps.json
        (COMMIT: the checkout's commit where it is not a git work tree; 9737cba9 here)
Needs:  torch (CPU), mpmath, and a checkout of github.com/Wan-Video/Wan2.1 (not on PyPI;
        the commit is recorded). Python is only for this script; the Rust test reads its output.

Wan's `WanModel.forward` embeds each timestep with `sinusoidal_embedding_1d(freq_dim, t)`
(`wan/modules/model.py`): the timestep cast to float64, `w_k = 10000^(-k / half)`,
`[cos | sin]` — diffusers' `Timesteps(freq_dim, True, 0)` computed in float64 where diffusers
computes in f32. The function is imported from the checkout as it is (its package's
`__init__` needs the model's dependencies, so the two packages are stood in for by empty
modules pointing at the checkout's folders) and run on f32 timesteps: the scheduler's
ends 0 and 999, a fraction, and random ones in [0, 1000) (random.Random("wan")). Beside
it the real numbers at the same f32 timesteps (mpmath, 50 digits).

Output (stdout, JSON): {"generator", "wan_commit", "torch", "mpmath", "freq_dim",
"timesteps", "wan", "exact", "max_wan_error"}.
"""

import json
import random
import subprocess
import sys
import types
import warnings

import mpmath
import numpy
import torch

mpmath.mp.dps = 50
warnings.filterwarnings("ignore")


def main():
    root = sys.argv[1]
    for name, path in [("wan", f"{root}/wan"), ("wan.modules", f"{root}/wan/modules")]:
        module = types.ModuleType(name)
        module.__path__ = [path]
        sys.modules[name] = module
    from wan.modules.model import sinusoidal_embedding_1d

    try:
        commit = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = sys.argv[2] if len(sys.argv) > 2 else "unknown"
    dim = 256  # WanModel's freq_dim, in every published Wan 2.1 config
    rng = random.Random("wan")
    ts = [0.0, 999.0, 0.5, 1.0 / 3.0] + [rng.uniform(0, 1000) for _ in range(12)]
    ts = [float(numpy.float32(t)) for t in ts]
    got = sinusoidal_embedding_1d(dim, torch.tensor(ts, dtype=torch.float32))
    assert got.dtype == torch.float64
    half = dim // 2
    exact = []
    for t in ts:
        a = [mpmath.mpf(t) * mpmath.power(10000, -mpmath.mpf(k) / half) for k in range(half)]
        exact.append([float(mpmath.cos(x)) for x in a] + [float(mpmath.sin(x)) for x in a])
    got = got.tolist()
    err = max(abs(a - b) for r, e in zip(got, exact) for a, b in zip(r, e))
    json.dump(dict(generator="tests/data/wan/wan_timesteps.py", wan_commit=commit,
                   torch=torch.__version__, mpmath=mpmath.__version__, freq_dim=dim,
                   timesteps=ts, wan=got, exact=exact, max_wan_error=err), sys.stdout)
    print(f"Wan's float64 projection within {err:.2e} of the real number", file=sys.stderr)


if __name__ == "__main__":
    main()
