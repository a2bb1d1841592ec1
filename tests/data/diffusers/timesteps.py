#!/usr/bin/env python3
"""diffusers' timestep projection on the CPU, and the real-number values it approximates.

Run:    python3 tests/data/diffusers/timesteps.py > tests/data/diffusers/timesteps.json
Needs:  torch (CPU), diffusers, mpmath. Python is only for this script; the Rust tests read
        its committed output.

What it records
---------------
For each case, the `Timesteps` module (or `get_timestep_embedding` with the parameters) that
the named pipelines build, run by diffusers itself on f32 timesteps:

    emb[n, :] = get_timestep_embedding(t, dim, flip_sin_to_cos, downscale_freq_shift,
                                       scale, max_period)          (diffusers, f32)

and beside it the real-number value of the same formula at the same f32 timesteps, with
mpmath at 50 digits:

    w_k = exp(-ln(max_period) k / (dim // 2 - shift)),   a = scale * t * w_k   (exact reals)
    [sin a | cos a] (or flipped), a zero appended when dim is odd.

The `Timesteps` modules are taken from diffusers' own model classes where a small instance
builds quickly (`module` names the attribute), so their parameters are diffusers' own.
Timesteps: random floats in [0, 1000) (random.Random("timesteps-<case>")), the ends 0 and
999, FLUX's `t * 1000` of random sigmas in [0, 1) (rounded to f32 as FLUX does), a
guidance of 3.5 * 1000, and a negative and a fractional value (case "wide_range": positions
from the smallest subnormal to the largest f32 below 2^32, both signs); with scale 1000 (Qwen-Image,
AuraFlow) each divided by 1000, as those pipelines pass sigmas. Every written number is a
float64 repr (round-trips exactly); diffusers' values are its f32 outputs.

Output (stdout, JSON):
  {"generator": ..., "diffusers": version, "torch": version, "mpmath": version,
   "cases": [{"name", "models", "module", "dim", "flip_sin_to_cos", "downscale_freq_shift",
              "scale", "max_period", "timesteps": [f32 as float], "diffusers": [[dim]],
              "exact": [[dim]], "max_diffusers_error": float, "worst_timestep": float}]}
"""

import json
import random
import sys

import diffusers
import mpmath
import torch
from diffusers.models.embeddings import Timesteps, get_timestep_embedding

mpmath.mp.dps = 50


def timesteps_for(name, scale):
    rng = random.Random(f"timesteps-{name}")
    if name == "wide_range":
        # f32 positions across the range the kernels take (|p| < 2^32): the smallest
        # subnormal, tiny and fractional values, large ones with fractions, the largest f32
        # below 2^32, negatives.
        ts = [2.0**-149, 2.0**-126, 1e-30, 2.0**-20, 0.1, 1.5, 1000.25, 123456.789,
              2.0**24 + 2, 2.0**31 + 512, 4294967040.0, -0.75, -3e9]
        ts += [rng.uniform(-2.0**32, 2.0**32) for _ in range(3)]
        return [float(torch.tensor(t, dtype=torch.float32)) for t in ts]
    ts = [rng.uniform(0.0, 1000.0) for _ in range(6)]
    ts += [0.0, 999.0, 3500.0, -17.25, 0.5]
    # FLUX: sigma in [0, 1), then `timestep.to(dtype) * 1000` in f32.
    sig = torch.tensor([rng.random() for _ in range(3)], dtype=torch.float32)
    ts += (sig * 1000).tolist()
    if scale != 1.0:
        # Qwen-Image and AuraFlow pass `timestep / 1000` with scale 1000: sigmas in [0, 1].
        ts = [t / scale for t in ts]
    return [float(torch.tensor(t, dtype=torch.float32)) for t in ts]


def exact_row(t, dim, flip, shift, scale, max_period):
    half = dim // 2
    t = mpmath.mpf(t)
    lnp = mpmath.log(max_period)
    angles = [
        mpmath.mpf(scale) * t * mpmath.exp(-lnp * k / (mpmath.mpf(half) - mpmath.mpf(shift)))
        for k in range(half)
    ]
    sins = [float(mpmath.sin(a)) for a in angles]
    coss = [float(mpmath.cos(a)) for a in angles]
    row = coss + sins if flip else sins + coss
    if dim % 2 == 1:
        row.append(0.0)
    return row


def module_case(name, models, module, proj: Timesteps, max_period=10000):
    return dict(
        name=name,
        models=models,
        module=module,
        dim=proj.num_channels,
        flip_sin_to_cos=bool(proj.flip_sin_to_cos),
        downscale_freq_shift=float(proj.downscale_freq_shift),
        scale=float(proj.scale),
        max_period=max_period,
    )


def real_modules():
    """Timesteps modules from diffusers' model classes, small instances."""
    from diffusers import FluxTransformer2DModel, QwenImageTransformer2DModel, UNet2DConditionModel

    torch.manual_seed(0)
    flux = FluxTransformer2DModel(
        patch_size=1, in_channels=4, num_layers=1, num_single_layers=1, attention_head_dim=16,
        num_attention_heads=2, joint_attention_dim=32, pooled_projection_dim=32,
        guidance_embeds=True, axes_dims_rope=(4, 6, 6),
    )
    qwen = QwenImageTransformer2DModel(
        patch_size=2, in_channels=16, out_channels=4, num_layers=1, attention_head_dim=16,
        num_attention_heads=2, joint_attention_dim=32, axes_dims_rope=(4, 6, 6),
    )
    unet = UNet2DConditionModel(
        block_out_channels=(32, 64), layers_per_block=1, sample_size=8, in_channels=4,
        out_channels=4, cross_attention_dim=32, norm_num_groups=32,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
    )
    return [
        module_case("flux", "FLUX.1 (t and guidance times 1000 first)",
                    "FluxTransformer2DModel.time_text_embed.time_proj",
                    flux.time_text_embed.time_proj),
        module_case("qwen_image", "Qwen-Image, AuraFlow (scale 1000, timesteps / 1000)",
                    "QwenImageTransformer2DModel.time_text_embed.time_proj",
                    qwen.time_text_embed.time_proj),
        module_case("unet_sd", "Stable Diffusion 1.x/2.x UNet (block_out_channels[0] = 32 here)",
                    "UNet2DConditionModel.time_proj", unet.time_proj),
    ]


def parameter_cases():
    """get_timestep_embedding's parameters as other pipelines and the defaults set them."""
    base = dict(module="get_timestep_embedding", max_period=10000)
    return [
        dict(base, name="flip_256", models="SD3, FLUX, Wan, HunyuanVideo, PixArt, LTX, Lumina 2 "
             "(37 classes: TRANSFORMERS.md)",
             dim=256, flip_sin_to_cos=True, downscale_freq_shift=0.0, scale=1.0),
        dict(base, name="defaults_odd", models="get_timestep_embedding's defaults, odd width",
             dim=255, flip_sin_to_cos=False, downscale_freq_shift=1.0, scale=1.0),
        dict(base, name="shift_1_flip", models="shift 1, flipped (DiT's label-conditioned blocks, "
             "older UNets)",
             dim=320, flip_sin_to_cos=True, downscale_freq_shift=1.0, scale=1.0),
        dict(base, name="period_1e3_odd", models="max_period 1000, odd width",
             dim=33, flip_sin_to_cos=True, downscale_freq_shift=0.0, scale=1.0, max_period=1000),
        dict(base, name="wide_range", models="f32 positions over (-2^32, 2^32), subnormal to large",
             dim=64, flip_sin_to_cos=False, downscale_freq_shift=0.0, scale=1.0),
    ]


def run(case):
    ts = timesteps_for(case["name"], case["scale"])
    t = torch.tensor(ts, dtype=torch.float32)
    got = get_timestep_embedding(
        t, case["dim"], flip_sin_to_cos=case["flip_sin_to_cos"],
        downscale_freq_shift=case["downscale_freq_shift"], scale=case["scale"],
        max_period=case["max_period"],
    )
    exact = [exact_row(x, case["dim"], case["flip_sin_to_cos"], case["downscale_freq_shift"],
                       case["scale"], case["max_period"]) for x in ts]
    ours = got.double().tolist()
    errs = [max(abs(a - b) for a, b in zip(r, e)) for r, e in zip(ours, exact)]
    worst = max(range(len(ts)), key=lambda i: errs[i])
    return dict(case, timesteps=ts, diffusers=ours, exact=exact,
                max_diffusers_error=errs[worst], worst_timestep=ts[worst])


def main():
    cases = [run(c) for c in real_modules() + parameter_cases()]
    out = dict(generator="tests/data/diffusers/timesteps.py", diffusers=diffusers.__version__,
               torch=torch.__version__, mpmath=mpmath.__version__, cases=cases)
    json.dump(out, sys.stdout)
    for c in cases:
        print(f"{c['name']}: dim {c['dim']}, diffusers within {c['max_diffusers_error']:.3g} "
              f"of the real number (worst at t = {c['worst_timestep']})", file=sys.stderr)


if __name__ == "__main__":
    main()
