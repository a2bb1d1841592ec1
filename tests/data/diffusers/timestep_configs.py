#!/usr/bin/env python3
"""The timestep projections of every diffusers transformer, as its config.json sets them.

Run:    python3 tests/data/diffusers/timestep_configs.py > tests/data/diffusers/timestep_configs.json
Needs:  torch (CPU), diffusers, mpmath.

Each class diffusers exports whose name says transformer or DiT is built on the meta device
(no weights) from its default config, and again with each number of that config changed on
its own (doubled; zero becomes one, one two) and each flag flipped (and with the null keys of
`EXTRA` set), so that every key a projection's width or scale depends
on shows in the data. Classes whose default config does not build are built from the keys a
published checkpoint's config.json sets (`PUBLISHED` below: the keys that make them build).
In each model every sinusoidal projection module is recorded with its path and parameters:

  - diffusers' `Timesteps` (`num_channels`, `flip_sin_to_cos`, `downscale_freq_shift`,
    `scale`; max period 10000);
  - the wrappers of `get_timestep_embedding` that also set the max period
    (`BriaTimesteps`, `BriaFiboTimesteps`: `time_theta`);
  - `SkyReelsV2Timesteps` (`get_1d_sincos_pos_embed_from_grid`: `[sin | cos]` or flipped,
    shift 0, period 10000, in float64);
  - `QwenImage21TemporalTimesteps` (`[cos | sin]`, shift 0, its period in `freqs`, the
    timestep multiplied by `time_factor` in f32 first).

Golden values: each distinct projection of the default configs run by diffusers' own module
(built alone on the CPU) on three f32 timesteps, beside the real numbers (mpmath, 40 digits)
at the same inputs, to 12 significant digits.

Output (stdout, JSON):
  {"generator", "diffusers", "torch",
   "classes": {name: {"config": the default config.json (with `_class_name`),
                      "variants": [{"set": {key: value}, "projections": [...]}]}},
   "refused": {name: diffusers' error on the default config},
   "golden": [{projection parameters, "used_by", "timesteps", "diffusers", "exact",
               "max_diffusers_error"}]}
Each projection: {"path", "module", "dim", "flip_sin_to_cos", "downscale_freq_shift",
"scale", "max_period", "time_factor"}. The first variant of each class sets nothing; a variant
whose modules are those of the first says `"same_as_default": true` instead of listing them.
f32 outputs are written as their shortest decimal (SkyReels-V2's are f64).
"""

import inspect
import json
import sys
import warnings

import diffusers
import mpmath
import numpy
import torch
from diffusers.models import ModelMixin
from diffusers.models.embeddings import Timesteps, get_timestep_embedding

mpmath.mp.dps = 40

warnings.filterwarnings("ignore")

# Classes whose default config does not build: the keys that make them build, with the values
# of their published checkpoints' config.json where these are known (DiT-XL-2-256 and
# PixArt-XL-2-1024-MS name the legacy `Transformer2DModel`, which diffusers remaps by
# `norm_type`). Only keys the projections do not depend on are guessed.
PUBLISHED = {
    "Transformer2DModel": [
        dict(norm_type="ada_norm_zero", num_embeds_ada_norm=1000, in_channels=4, out_channels=8,
             patch_size=2, sample_size=32, num_layers=28, num_attention_heads=16,
             attention_head_dim=72, activation_fn="gelu-approximate"),
        dict(norm_type="ada_norm_single", in_channels=4, out_channels=8, patch_size=2,
             sample_size=128, num_layers=28, num_attention_heads=16, attention_head_dim=72,
             cross_attention_dim=1152, caption_channels=4096, activation_fn="gelu-approximate",
             norm_elementwise_affine=False, norm_eps=1e-6, use_additional_conditions=None),
    ],
    "EasyAnimateTransformer3DModel": [dict(in_channels=16, out_channels=16, patch_size=2,
                                           text_embed_dim_t5=4096)],
    "HiDreamImageTransformer2DModel": [dict(patch_size=2, out_channels=16,
                                            caption_channels=[4096, 4096],
                                            llama_layers=list(range(48)))],
    "HunyuanDiT2DModel": [dict(in_channels=4, patch_size=2)],
    "HunyuanDiT2DControlNetModel": [dict(in_channels=4, patch_size=2)],
    "LuminaNextDiT2DModel": [dict(num_kv_heads=8)],
    "LatteTransformer3DModel": [
        dict(in_channels=4, out_channels=8, cross_attention_dim=1152, patch_size=2,
             num_embeds_ada_norm=1000, caption_channels=4096, norm_type="ada_norm_single",
             sample_size=64, video_length=16),
        dict(in_channels=4, out_channels=8, cross_attention_dim=1152, patch_size=2,
             num_embeds_ada_norm=1000, caption_channels=4096, norm_type="ada_norm_zero",
             sample_size=64, video_length=16),
    ],
    "OmniGenTransformer2DModel": [dict(rope_scaling=dict(type="su", long_factor=[1.0] * 48,
                                                         short_factor=[1.0] * 48))],
    "DreamLiteTransformer2DModel": [
        dict(in_channels=32, out_channels=32, cross_attention_dim=1024),
        dict(in_channels=32, out_channels=32, cross_attention_dim=1024, norm_type="ada_norm_zero",
             num_embeds_ada_norm=1000),
    ],
    "TransformerTemporalModel": [dict(in_channels=320)],
}


# Keys that are null by default and add a module when set.
EXTRA = {"CogVideoXTransformer3DModel": [dict(ofs_embed_dim=512)]}


def first_linear(mod):
    return next(m for m in mod.modules() if isinstance(m, torch.nn.Linear))


def describe(mod):
    """The projection a module computes, `None` for other modules: width, order, shift,
    scale, max period, and the f32 factor its input is multiplied by first."""
    kind = type(mod).__name__
    g = dict(flip_sin_to_cos=True, downscale_freq_shift=0.0, scale=1.0, max_period=10000.0,
             time_factor=1.0)
    if isinstance(mod, Timesteps):
        return dict(g, dim=mod.num_channels, flip_sin_to_cos=bool(mod.flip_sin_to_cos),
                    downscale_freq_shift=float(mod.downscale_freq_shift), scale=float(mod.scale))
    if kind in ("BriaTimesteps", "BriaFiboTimesteps"):
        return dict(g, dim=mod.num_channels, flip_sin_to_cos=bool(mod.flip_sin_to_cos),
                    downscale_freq_shift=float(mod.downscale_freq_shift), scale=float(mod.scale),
                    max_period=float(mod.time_theta))
    if kind == "SkyReelsV2Timesteps":
        return dict(g, dim=mod.num_channels, flip_sin_to_cos=bool(mod.flip_sin_to_cos))
    if kind == "QwenImage21TemporalTimesteps":
        # Its period is a constructor default (the frequencies are not readable on the meta
        # device); the golden values below run the module itself.
        period = inspect.signature(type(mod).__init__).parameters["max_period"].default
        return dict(g, dim=mod.timestep_dim, max_period=float(period),
                    time_factor=float(mod.time_factor))
    if kind == "Kandinsky5TimeEmbeddings":
        return dict(g, dim=mod.model_dim, max_period=float(mod.max_period))
    if kind == "Krea2TimestepEmbedding":
        return dict(g, dim=mod.embed_dim, time_factor=1000.0)
    if kind == "AudioDiTSinusPositionEmbedding":
        # `scale * timesteps * freqs`, left to right: the timestep times 1000 first; the
        # exponent's denominator is half - 1.
        return dict(g, dim=mod.dim, flip_sin_to_cos=False, downscale_freq_shift=1.0,
                    time_factor=1000.0)
    if kind == "Ideogram4EmbedScalar" and (mod.range_min, mod.range_max) == (0.0, 1.0):
        return dict(g, dim=mod.dim, flip_sin_to_cos=False, downscale_freq_shift=1.0,
                    time_factor=1e4)
    if kind == "TimestepEmbedder" and hasattr(type(mod), "timestep_embedding"):
        # Z-Image's and FIBO 2's embedder: [cos | sin], shift 0.
        return dict(g, dim=first_linear(mod).in_features)
    return None


def projections(model):
    out = []
    for path, mod in model.named_modules():
        row = describe(mod)
        if row is not None:
            out.append(dict(row, path=path, module=type(mod).__name__))
    if type(model).__name__ == "PRXTransformer2DModel":
        # Computed inline by the model (`get_timestep_embedding`) and read by `time_in`.
        out.append(dict(path="time_in", module="get_timestep_embedding", dim=256,
                        flip_sin_to_cos=True, downscale_freq_shift=0.0,
                        scale=float(model.time_factor), max_period=float(model.time_max_period),
                        time_factor=1.0))
    return out


def captured(mod, consumer, *args):
    """The input of `consumer` (the first layer after the sinusoid) when `mod` runs."""
    seen = []
    consumer.register_forward_pre_hook(lambda m, a: seen.append(a[0]))
    mod(*args)
    return seen[0]


def run_module(p, ts):
    """The projection of f32 timesteps `ts`, by diffusers' own module of kind `p["module"]`
    built alone on the CPU with the parameters recorded (its own code; only the sinusoid is
    kept, captured where the module goes on to an MLP)."""
    from diffusers.models import transformers as tr
    t = torch.tensor(ts, dtype=torch.float32)
    kind, dim = p["module"], p["dim"]
    if kind == "Timesteps":
        return Timesteps(dim, p["flip_sin_to_cos"], p["downscale_freq_shift"], p["scale"])(t)
    if kind in ("BriaTimesteps", "BriaFiboTimesteps"):
        mod = getattr(tr.transformer_bria if kind == "BriaTimesteps" else tr.transformer_bria_fibo, kind)
        return mod(dim, p["flip_sin_to_cos"], p["downscale_freq_shift"], p["scale"], p["max_period"])(t)
    if kind == "SkyReelsV2Timesteps":
        return tr.transformer_skyreels_v2.SkyReelsV2Timesteps(dim, p["flip_sin_to_cos"])(t)
    if kind == "QwenImage21TemporalTimesteps":
        return tr.transformer_qwenimage21.QwenImage21TemporalTimesteps(
            dim, int(p["max_period"]), p["time_factor"])(t)
    if kind == "Kandinsky5TimeEmbeddings":
        mod = tr.transformer_kandinsky.Kandinsky5TimeEmbeddings(dim, 8, p["max_period"])
        return captured(mod, mod.in_layer, t)
    if kind == "Krea2TimestepEmbedding":
        mod = tr.transformer_krea2.Krea2TimestepEmbedding(dim, 8)
        return captured(mod, mod.linear_1, t, torch.float32)[:, 0]
    if kind == "AudioDiTSinusPositionEmbedding":
        return tr.transformer_longcat_audio_dit.AudioDiTSinusPositionEmbedding(dim)(t)
    if kind == "Ideogram4EmbedScalar":
        mod = tr.transformer_ideogram4.Ideogram4EmbedScalar(dim, (0.0, 1.0))
        return captured(mod, mod.mlp_in, t)
    if kind == "TimestepEmbedder":
        mod = tr.transformer_z_image.TimestepEmbedder(8, frequency_embedding_size=dim)
        return captured(mod, mod.mlp[0], t)
    if kind == "get_timestep_embedding":
        return get_timestep_embedding(t, dim, p["flip_sin_to_cos"], p["downscale_freq_shift"],
                                      p["scale"], p["max_period"])
    raise ValueError(kind)


def exact(p, t):
    """The real-number projection of the f32 input `f32(t * time_factor)` (mpmath)."""
    dim, half = p["dim"], p["dim"] // 2
    x = mpmath.mpf(float(numpy.float32(t) * numpy.float32(p["time_factor"])))
    den = mpmath.mpf(half) - mpmath.mpf(p["downscale_freq_shift"])
    w = [mpmath.exp(-mpmath.log(mpmath.mpf(p["max_period"])) * k / den) for k in range(half)]
    a = [mpmath.mpf(p["scale"]) * x * f for f in w]
    s, c = [float(mpmath.sin(v)) for v in a], [float(mpmath.cos(v)) for v in a]
    row = c + s if p["flip_sin_to_cos"] else s + c
    return row + [0.0] if dim % 2 else row


PARAMS = ("module", "dim", "flip_sin_to_cos", "downscale_freq_shift", "scale", "max_period",
          "time_factor")


def golden(classes):
    """Each distinct projection of the default configs, run by diffusers' own module on
    timesteps 0.5, 999 and 3500 (divided by the scale and factor where those are not 1, as
    the pipelines pass sigmas), beside the real number."""
    seen = {}
    for name, c in classes.items():
        for p in c["variants"][0]["projections"]:
            seen.setdefault(tuple(p[k] for k in PARAMS), []).append(f"{name}.{p['path']}")
    out = []
    for key, users in sorted(seen.items(), key=lambda kv: str(kv[0])):
        p = dict(zip(PARAMS, key))
        k = p["scale"] * p["time_factor"]
        ts = [float(numpy.float32(t / k)) for t in (0.5, 999.0, 3500.0)]
        out_t = run_module(p, ts)
        got = out_t.double().tolist()
        ex = [[float(f"{v:.12g}") for v in exact(p, t)] for t in ts]
        err = max(abs(a - b) for r, e in zip(got, ex) for a, b in zip(r, e))
        if out_t.dtype == torch.float32:
            got = [[float(str(numpy.float32(v))) for v in r] for r in got]
        out.append(dict(p, used_by=users, timesteps=ts, diffusers=got, exact=ex,
                        max_diffusers_error=err))
    return out


def build(cls, kwargs):
    with torch.device("meta"):
        return cls(**kwargs)


def config_json(model, name):
    config = dict(model.config)
    config["_class_name"] = name
    return json.loads(json.dumps(config, default=str))


def changed(value):
    """Doubled; zero becomes one and one two (an integer stays an integer)."""
    if value == 0:
        return type(value)(1)
    return type(value)(2) if value == 1 else value * 2


def survey(cls, name, base):
    """Variants of one class from `base` (keyword arguments), `None` where it does not build."""
    model = build(cls, base)
    config = config_json(model, name)
    variants = [dict(set={}, projections=projections(model))]
    if not variants[0]["projections"]:
        return dict(config=config, variants=variants)
    for extra in EXTRA.get(name, []):
        m = build(cls, dict(base, **extra))
        variants.append(dict(set=extra, projections=projections(m)))
    for key, value in sorted(dict(model.config).items()):
        if key.startswith("_"):
            continue
        if isinstance(value, bool):
            new = not value
        elif isinstance(value, (int, float)) and value >= 0:
            new = changed(value)
        else:
            continue
        try:
            m = build(cls, dict(base, **{key: new}))
        except Exception:
            continue
        got = projections(m)
        if got == variants[0]["projections"]:
            variants.append(dict(set={key: new}, same_as_default=True))
        else:
            variants.append(dict(set={key: new}, projections=got))
    return dict(config=config, variants=variants)


def main():
    names = sorted(n for n in dir(diffusers)
                   if inspect.isclass(getattr(diffusers, n, None))
                   and issubclass(getattr(diffusers, n), ModelMixin)
                   and ("Transformer" in n or "DiT" in n))
    classes, refused = {}, {}
    for name in names:
        cls = getattr(diffusers, name)
        for i, base in enumerate(PUBLISHED.get(name, [{}])):
            label = f"{name}#{i}" if len(PUBLISHED.get(name, [])) > 1 else name
            try:
                classes[label] = survey(cls, name, base)
            except Exception as e:
                refused[label] = f"{type(e).__name__}: {str(e)[:160]}"
    out = dict(generator="tests/data/diffusers/timestep_configs.py",
               diffusers=diffusers.__version__, torch=torch.__version__,
               mpmath=mpmath.__version__, classes=classes, refused=refused,
               golden=golden(classes))
    json.dump(out, sys.stdout)
    n = sum(len(c["variants"]) for c in classes.values())
    with_proj = sum(bool(c["variants"][0]["projections"]) for c in classes.values())
    print(f"{len(classes)} classes built ({with_proj} with projections), {n} configs, "
          f"{len(refused)} refused", file=sys.stderr)


if __name__ == "__main__":
    main()
