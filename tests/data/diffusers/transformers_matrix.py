#!/usr/bin/env python3
"""Every diffusers transformer: which sinusoids it computes, read from diffusers' own modules.

Run:    python3 tests/data/diffusers/transformers_matrix.py > tests/data/diffusers/transformers_matrix.json
        python3 tests/data/diffusers/transformers_matrix.py --markdown \
            tests/data/diffusers/transformers_matrix.json \
            tests/data/diffusers/timestep_configs.json > tests/data/diffusers/TRANSFORMERS.md
Needs:  torch (CPU), diffusers, mpmath.

What it records
---------------
Every class diffusers exports whose name says transformer or DiT (a `ModelMixin`), built
from its default config on the meta device (no weights, no memory), or, where that does not
build, from the keys `timestep_configs.py` gives it (`PUBLISHED`: the legacy
`Transformer2DModel` twice, as DiT's and PixArt's published configs name it); the classes
that still do not build are listed with diffusers' error. In each model, from its
modules:

  - every `Timesteps` module (the timestep and guidance projections): its path and
    parameters (`num_channels`, `flip_sin_to_cos`, `downscale_freq_shift`, `scale`);
  - every sin-cos table of patch tokens: `PatchEmbed` with a sincos `pos_embed` (tokens per
    side, `base_size`, `interpolation_scale`, `pos_embed_max_size`, width), and
    `CogVideoXPatchEmbed` with fixed sincos embeddings (sample size, frames, scales, text
    rows);
  - CogView3Plus' patch embedding (a `pos_embed_max_size` table whose top-left corner the
    forward takes) and OmniGen's (a table at base size 64 whose center it takes);
  - Latte's temporal table (`temp_pos_embed`, over `video_length` frames);
  - other modules holding a fixed position table in a buffer, listed, not read;
  - the names of its rotary / position-embedding modules (for the RoPE matrix of the N-D
    work).
And the transformer source files that call the sinusoid functions directly (not modules,
so not in the scan).

Golden values, from diffusers' own code on the CPU, once per distinct parameter set:
  - each `Timesteps` parameter set: the module run on f32 timesteps 0.5, 999 and 3500 (each
    divided by `scale` where it is not 1, as those pipelines pass sigmas);
  - each table: the module built on the CPU with the same arguments, four sampled rows
    (random.Random("matrix-<key>"), first row included).
Beside each, the real-number values (mpmath, 40 digits) at the same f32 inputs. f32 outputs
are written as their shortest decimal.

Output (stdout, JSON):
  {"generator", "diffusers", "torch", "mpmath",
   "classes": {name: {"error"} | {"timesteps": [...], "tables": [{"key", "path"}], "rope": [...],
                                  "config" (classes with a table: their default config.json)}},
   "timesteps": [{"dim", "flip_sin_to_cos", "downscale_freq_shift", "scale", "used_by",
                  "timesteps", "diffusers", "exact", "max_diffusers_error"}],
   "tables": [{"key", "kind": "patch" | "cogvideox", parameters, "used_by", "rows",
               "diffusers", "exact", "max_diffusers_error"}]}
"""

import inspect
import json
import random
import sys
import warnings

import diffusers
import mpmath
import numpy
import torch
from diffusers.models import ModelMixin
from diffusers.models.embeddings import (
    CogVideoXPatchEmbed,
    CogView3PlusPatchEmbed,
    PatchEmbed,
    Timesteps,
    get_timestep_embedding,
)
from diffusers.models.transformers.transformer_omnigen import OmniGenPatchEmbed

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
from timestep_configs import PUBLISHED  # noqa: E402  (the keys that make some classes build)

mpmath.mp.dps = 40
warnings.filterwarnings("ignore")


def short(values):
    return [float(str(numpy.float32(v))) for v in values]


def exact_timesteps(t, dim, flip, shift, scale):
    half = dim // 2
    t = mpmath.mpf(t)
    w = [mpmath.exp(-mpmath.log(10000) * k / (mpmath.mpf(half) - mpmath.mpf(shift))) for k in range(half)]
    a = [mpmath.mpf(scale) * t * x for x in w]
    s, c = [float(mpmath.sin(x)) for x in a], [float(mpmath.cos(x)) for x in a]
    row = c + s if flip else s + c
    return row + [0.0] if dim % 2 else row


def exact_block(width, c):
    half = width // 2
    c = mpmath.mpf(c)
    a = [c * mpmath.power(10000, -mpmath.mpf(2 * k) / width) for k in range(half)]
    return [float(mpmath.sin(x)) for x in a] + [float(mpmath.cos(x)) for x in a]


def scan(cls, kwargs):
    with torch.device("meta"):
        model = cls(**kwargs)
    steps, tables = [], []
    for path, mod in model.named_modules():
        if isinstance(mod, Timesteps):
            steps.append(dict(path=path, dim=mod.num_channels, flip_sin_to_cos=bool(mod.flip_sin_to_cos),
                              downscale_freq_shift=float(mod.downscale_freq_shift), scale=float(mod.scale)))
        if isinstance(mod, PatchEmbed) and getattr(mod, "pos_embed", None) is not None:
            side = mod.pos_embed_max_size or int(mod.pos_embed.shape[1] ** 0.5)
            tables.append(dict(path=path, kind="patch", side=side, base_size=mod.base_size,
                               interpolation_scale=float(mod.interpolation_scale),
                               max_size=mod.pos_embed_max_size, patch_size=mod.patch_size,
                               embed_dim=mod.proj.out_channels, height=mod.height, width=mod.width))
        if isinstance(mod, CogView3PlusPatchEmbed):
            # The whole table; the forward crops its top-left corner.
            tables.append(dict(path=path, kind="top_left", side=mod.pos_embed_max_size,
                               embed_dim=mod.hidden_size, patch_size=mod.patch_size))
        if isinstance(mod, OmniGenPatchEmbed):
            # The whole table; the forward crops its center. Its base size is the
            # constructor's default (OmniGen does not pass one; the golden rows check it).
            base = inspect.signature(OmniGenPatchEmbed.__init__).parameters["base_size"].default
            tables.append(dict(path=path, kind="center", side=mod.pos_embed_max_size,
                               base_size=base, interpolation_scale=float(mod.interpolation_scale),
                               embed_dim=mod.output_image_proj.out_channels,
                               patch_size=mod.patch_size))
        if isinstance(mod, CogVideoXPatchEmbed) and mod.use_positional_embeddings \
                and not mod.use_learned_positional_embeddings:
            tables.append(dict(path=path, kind="cogvideox", embed_dim=mod.embed_dim,
                               patch_size=mod.patch_size, sample_height=mod.sample_height,
                               sample_width=mod.sample_width, sample_frames=mod.sample_frames,
                               temporal_compression_ratio=mod.temporal_compression_ratio,
                               max_text_seq_length=mod.max_text_seq_length,
                               spatial_interpolation_scale=float(mod.spatial_interpolation_scale),
                               temporal_interpolation_scale=float(mod.temporal_interpolation_scale)))
    temporal = model._buffers.get("temp_pos_embed")
    if temporal is not None:
        # Latte's 1-D table over `video_length` frames (`get_1d_sincos_pos_embed_from_grid`).
        tables.append(dict(path="temp_pos_embed", kind="temporal", length=temporal.shape[1],
                           embed_dim=temporal.shape[2]))
    # Other modules holding a fixed position table (a buffer, not a parameter).
    others = [dict(path=path, module=type(mod).__name__)
              for path, mod in model.named_modules()
              if not isinstance(mod, (PatchEmbed, CogVideoXPatchEmbed, CogView3PlusPatchEmbed,
                                      OmniGenPatchEmbed))
              and any("pos_embed" in b and v is not None and not (mod is model and b == "temp_pos_embed")
                      for b, v in mod._buffers.items())]
    rope = sorted({type(m).__name__ for _, m in model.named_modules()
                   if any(k in type(m).__name__ for k in ("Rot", "Rope", "PosEmbed"))})
    return steps, tables, others, rope


def timestep_golden(key, used_by):
    dim, flip, shift, scale = key
    ts = [0.5, 999.0, 3500.0]
    if scale != 1.0:
        ts = [t / scale for t in ts]
    ts = [float(torch.tensor(t, dtype=torch.float32)) for t in ts]
    got = Timesteps(dim, flip, shift, scale)(torch.tensor(ts, dtype=torch.float32)).double().tolist()
    exact = [exact_timesteps(t, dim, flip, shift, scale) for t in ts]
    err = max(abs(a - b) for r, e in zip(got, exact) for a, b in zip(r, e))
    return dict(dim=dim, flip_sin_to_cos=flip, downscale_freq_shift=shift, scale=scale,
                used_by=used_by, timesteps=ts, diffusers=[short(r) for r in got], exact=exact,
                max_diffusers_error=err)


def table_golden(key, t, used_by):
    """The table the module holds, rebuilt on the CPU; rows sampled; coordinates as diffusers
    computes them."""
    if t["kind"] == "temporal":
        # Latte's own line: get_1d_sincos_pos_embed_from_grid(inner_dim, arange(0,
        # video_length).unsqueeze(1), output_type="pt").float()
        from diffusers.models.embeddings import get_1d_sincos_pos_embed_from_grid
        n = t["length"]
        table = get_1d_sincos_pos_embed_from_grid(
            t["embed_dim"], torch.arange(0, n).unsqueeze(1), output_type="pt").float()
        coords = [(float(i),) for i in range(n)]
        widths = [t["embed_dim"]]
        zero = 0
    elif t["kind"] in ("top_left", "center"):
        side = t["side"]
        if t["kind"] == "top_left":
            pe = CogView3PlusPatchEmbed(in_channels=1, hidden_size=t["embed_dim"],
                                        patch_size=t["patch_size"], text_hidden_size=8,
                                        pos_embed_max_size=side)
            table, base, scale = pe.pos_embed.reshape(side * side, -1), side, 1.0
        else:
            pe = OmniGenPatchEmbed(patch_size=t["patch_size"], in_channels=1,
                                   embed_dim=t["embed_dim"],
                                   interpolation_scale=t["interpolation_scale"],
                                   pos_embed_max_size=side)
            table, base, scale = pe.pos_embed[0], t["base_size"], t["interpolation_scale"]
        g = torch.arange(side, dtype=torch.float32) / (side / base) / scale
        coords = [(float(g[n % side]), float(g[n // side])) for n in range(side * side)]
        widths = [t["embed_dim"] // 2] * 2
        zero = 0
    elif t["kind"] == "patch":
        side = t["side"]
        pe = PatchEmbed(height=t["height"] * t["patch_size"], width=t["width"] * t["patch_size"],
                        patch_size=t["patch_size"], in_channels=1, embed_dim=t["embed_dim"],
                        interpolation_scale=t["interpolation_scale"],
                        pos_embed_max_size=t["max_size"])
        table = pe.pos_embed[0]
        g = torch.arange(side, dtype=torch.float32) / (side / t["base_size"]) / t["interpolation_scale"]
        coords = [(float(g[n % side]), float(g[n // side])) for n in range(side * side)]
        widths = [t["embed_dim"] // 2] * 2
        zero = 0
    else:
        pe = CogVideoXPatchEmbed(patch_size=t["patch_size"], in_channels=16, embed_dim=t["embed_dim"],
                                 text_embed_dim=64, sample_width=t["sample_width"],
                                 sample_height=t["sample_height"], sample_frames=t["sample_frames"],
                                 temporal_compression_ratio=t["temporal_compression_ratio"],
                                 max_text_seq_length=t["max_text_seq_length"],
                                 spatial_interpolation_scale=t["spatial_interpolation_scale"],
                                 temporal_interpolation_scale=t["temporal_interpolation_scale"],
                                 use_positional_embeddings=True)
        table = pe.pos_embedding[0]
        frames = (t["sample_frames"] - 1) // t["temporal_compression_ratio"] + 1
        h, w = t["sample_height"] // t["patch_size"], t["sample_width"] // t["patch_size"]
        s = t["spatial_interpolation_scale"]
        gt = torch.arange(frames, dtype=torch.float32) / t["temporal_interpolation_scale"]
        gh = torch.arange(h, dtype=torch.float32) / s
        gw = torch.arange(w, dtype=torch.float32) / s
        coords = [(float(gt[n // (h * w)]), float(gw[n % w]), float(gh[(n // w) % h]))
                  for n in range(frames * h * w)]
        d = t["embed_dim"]
        widths = [d // 4, 3 * d // 8, 3 * d // 8]
        zero = t["max_text_seq_length"]
    rng = random.Random(f"matrix-{key}")
    n = table.shape[0]
    rows = sorted({0, n - 1, *(rng.randrange(zero, n) for _ in range(2))})
    exact = []
    for r in rows:
        if r < zero:
            exact.append([0.0] * table.shape[1])
        else:
            exact.append([v for wd, c in zip(widths, coords[r - zero]) for v in exact_block(wd, c)])
    got = table[rows].double().tolist()
    err = max(abs(a - b) for r, e in zip(got, exact) for a, b in zip(r, e))
    params = {k: v for k, v in t.items() if k != "path"}
    return dict(params, key=key, used_by=used_by, rows=rows, diffusers=[short(r) for r in got],
                exact=exact, max_diffusers_error=err)


def projection_text(ps):
    """The projections of a class, a per-block module once with its count."""
    seen = {}
    for p in ps:
        path = __import__("re").sub(r"\.\d+\.", ".{i}.", p["path"])
        extra = [("cos-first" if p["flip_sin_to_cos"] else "sin-first")]
        if p["downscale_freq_shift"]:
            extra.append(f"shift {p['downscale_freq_shift']:g}")
        if p["scale"] != 1:
            extra.append(f"scale {p['scale']:g}")
        if p["max_period"] != 10000:
            extra.append(f"period {p['max_period']:g}")
        if p["time_factor"] != 1:
            extra.append(f"input x{p['time_factor']:g}")
        text = f"`{path}` {p['module']}({p['dim']}, {', '.join(extra)})"
        seen[text] = seen.get(text, 0) + 1
    return ", ".join(t if n == 1 else f"{t} x{n}" for t, n in seen.items())


def markdown(path, steps_path):
    """The matrix as a table, one row a class, from the JSON this script wrote and the one
    `timestep_configs.py` wrote."""
    d, st = json.load(open(path)), json.load(open(steps_path))
    classes = d["classes"]
    built = [n for n, c in classes.items() if "error" not in c]
    with_steps = [n for n in built
                  if st["classes"].get(n, {}).get("variants", [{}])[0].get("projections")]
    with_tables = [n for n in built if classes[n]["tables"]]
    print(f"# diffusers {d['diffusers']} transformers: their sinusoids\n")
    print("Generated by `tests/data/diffusers/transformers_matrix.py` (the tables, from diffusers' "
          "own modules: each class on its default config, or the keys that make it build, on "
          "the meta device) and `tests/data/diffusers/timestep_configs.py` (the projections of "
          "a scalar, from the same builds and from each config with each key changed); checked "
          "by `tests/diffusers_matrix.rs` and `tests/diffusers_timesteps.rs`.\n")
    print(f"- {len(classes)} builds of the classes whose name says transformer or DiT "
          f"(`Transformer2DModel` twice, as DiT's and PixArt's published configs name it); "
          f"{len(built)} build.")
    print(f"- {len(with_steps)} of the builds hold a sinusoidal projection of the timestep (or guidance, or a "
          "size): every one is read from `config.json` by `TimestepProjection::"
          "from_diffusers_config` into the modules diffusers builds, and computed by the crate "
          "within 1.5e-7 of the real number.")
    print(f"- {len(with_tables)} of the builds add a sin-cos table to their tokens: every one is read by "
          "`SincosGrid::from_diffusers_config` into the table the module holds.")
    print("- Projections of a scalar that are not sinusoids of this form: MiniMax Music 3 "
          "(learned Fourier weights), Stable Audio and Stable Audio 3 (random or increasing "
          "Fourier features); RFD4-Proteina computes one inline in a function (listed, not "
          "read). Chroma's `mod_proj` buffer (a table of modulation indices) is not a position "
          "or timestep embedding.\n")
    print("Transformer files that call the sinusoid functions directly (a source search); "
          "each is covered above except where said:\n")
    for f, calls in d["direct_calls"].items():
        print(f"- `{f}`: " + ", ".join(f"`{c}`" for c in calls))
    print("\n(`t5_film_transformer.py` is the `T5FilmDecoder` of spectrogram diffusion, not a "
          "transformer class by name: not read. Chroma's call builds `mod_proj`.)\n")
    print("| class | projections of a scalar (read from `config.json`) | sin-cos tables | "
          "rotary / position modules |")
    print("|---|---|---|---|")
    for name, c in sorted(classes.items()):
        if "error" in c:
            print(f"| `{name}` | not built: {c['error'][:100]} | | |")
            continue
        ps = st["classes"].get(name, {}).get("variants", [{}])[0].get("projections", [])
        tables = ", ".join([f"`{t['path']}`" for t in c["tables"]]
                           + [f"`{t['path']}` (`{t['module']}`, not read)" for t in c["other_tables"]])
        rope = ", ".join(f"`{r}`" for r in c["rope"])
        print(f"| `{name}` | {projection_text(ps) or '—'} | {tables or '—'} | {rope or '—'} |")


def direct_calls():
    """Sinusoids computed by calls in a model's code rather than by a module (not in the
    module scan): each transformer file of diffusers that calls one of the functions."""
    import pathlib
    import re

    root = pathlib.Path(diffusers.__file__).parent / "models" / "transformers"
    names = ("get_timestep_embedding", "get_1d_sincos_pos_embed_from_grid",
             "get_2d_sincos_pos_embed", "get_3d_sincos_pos_embed")
    found = {}
    for f in sorted(root.glob("*.py")):
        text = f.read_text()
        calls = sorted({n for n in names if re.search(rf"(?<!def ){n}\(", text)})
        if calls:
            found[f.name] = calls
    return found


def labelled(name):
    """`(label, keyword arguments)` of each build of a class: its defaults, or the keys of
    `PUBLISHED` (`Transformer2DModel#0` and `#1` for the two legacy configs)."""
    builds = PUBLISHED.get(name, [{}])
    if len(builds) == 1:
        return [(name, builds[0])]
    return [(f"{name}#{i}", kw) for i, kw in enumerate(builds)]


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--markdown":
        return markdown(sys.argv[2], sys.argv[3])
    names = sorted(n for n in dir(diffusers)
                   if inspect.isclass(getattr(diffusers, n, None))
                   and issubclass(getattr(diffusers, n), ModelMixin)
                   and ("Transformer" in n or "DiT" in n))
    classes, step_users, table_users, table_params = {}, {}, {}, {}
    builds = [(name, label, kwargs) for name in names
              for label, kwargs in labelled(name)]
    for name, label, kwargs in builds:
        try:
            steps, tables, others, rope = scan(getattr(diffusers, name), kwargs)
        except Exception as e:  # the config does not build
            classes[label] = dict(error=f"{type(e).__name__}: {str(e)[:160]}")
            continue
        for s in steps:
            key = (s["dim"], s["flip_sin_to_cos"], s["downscale_freq_shift"], s["scale"])
            step_users.setdefault(key, []).append(f"{label}.{s['path']}")
        refs = []
        for t in tables:
            params = {k: v for k, v in t.items() if k != "path"}
            key = json.dumps(params, sort_keys=True)
            table_params[key] = t
            table_users.setdefault(key, []).append(f"{label}.{t['path']}")
            refs.append(dict(key=key, path=t["path"]))
        classes[label] = dict(timesteps=steps, tables=refs, other_tables=others, rope=rope)
        if tables or kwargs:
            # The config.json save_pretrained would write, for the config readers' test.
            with torch.device("meta"):
                config = dict(getattr(diffusers, name)(**kwargs).config)
            config["_class_name"] = name
            classes[label]["config"] = json.loads(json.dumps(config, default=str))
    out = dict(generator="tests/data/diffusers/transformers_matrix.py",
               direct_calls=direct_calls(),
               diffusers=diffusers.__version__, torch=torch.__version__, mpmath=mpmath.__version__,
               classes=classes,
               timesteps=[timestep_golden(k, u) for k, u in sorted(step_users.items())],
               tables=[table_golden(k, table_params[k], u) for k, u in sorted(table_users.items())])
    json.dump(out, sys.stdout)
    n_err = sum("error" in c for c in classes.values())
    print(f"{len(classes)} classes ({n_err} do not build on their defaults), "
          f"{sum(len(v) for v in step_users.values())} Timesteps modules in "
          f"{len(step_users)} parameter sets, {sum(len(v) for v in table_users.values())} "
          f"sin-cos tables in {len(table_users)}", file=sys.stderr)


if __name__ == "__main__":
    main()
