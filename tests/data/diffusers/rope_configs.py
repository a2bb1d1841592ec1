#!/usr/bin/env python3
"""Every diffusers transformer's rotary module, built from the class's own config, run on the CPU.

Run:    python3 tests/data/diffusers/rope_configs.py > tests/data/diffusers/rope_configs.json
Needs:  torch (CPU), diffusers.

What it records
---------------
Each class diffusers exports whose name says transformer or DiT is built on the meta device
from its default config (or the keys `timestep_configs.PUBLISHED` gives it), with the
constructors of every rotary module class recorded as they are called, so the module can be
built again on the CPU with the same arguments the transformer gave it. For each build:

  - `config`: the `config.json` `save_pretrained` would write (`_class_name` added);
  - `rope`: each rotary module's path and class;
  - `golden` (where every rotary module's forward is one of the forms below; else empty):
    each module run on the CPU, and for sampled tokens (random.Random("rope-configs-<label>"), first and last
    included) their positions and the cos and sin of each pair's angle as the module makes
    them, in the layout its table has (`interleaved`: a complex table, 2 x 2 rotation
    matrices, or cos/sin repeated per pair; `half`: cos/sin concatenated twice).

The two forms of forward:
  - `ids`: the module takes position ids `[tokens, axes]` (FLUX's `FluxPosEmbed` and its
    copies, the `EmbedND`s, Z-Image's `RopeEmbedder`): the ids given are the pipelines' kind,
    8 text tokens of zeros, then a 1 x 24 x 40 image grid `(0, row, column)` (a fourth axis,
    FLUX.2's, is zero), and 8 tokens at the grid's far corner + 5 on every axis (ERNIE-Image's
    angles, a lane each, `[t0, t0, t1, t1, ..]` under `rotate_half`, recorded as a cos and a
    sin a lane, `table` "interleaved");
  - `grid`: the module takes the latent (`hidden_states`, `[1, C, F, H, W]` or `[1, C, H,
    W]`) and makes the positions itself, a patch grid of 21 x 30 x 52 tokens (Wan 480p's) or
    64 x 64 (a 1024 x 1024 image); the positions written are the grid's indices as the
    module's code makes them (CogView4: `index * rope_axes_dim // tokens`), and the test
    checks them with the module's angles.
  - others: Kandinsky's 3-D modules at `(t, h, w) / scale_factor` and its 1-D text module,
    the 1-D audio modules (Stable Audio 3, LongCat Audio, MiniMax Music 3) at `0..300`,
    MiniMax H3's at float position ids, Ideogram 4's and Cosmos 3's interleaved M-RoPE at
    text ids on the diagonal and an image grid past their offsets, Qwen-Image's family at
    its centered grids with text on the diagonal, Cosmos' at a 30 fps video's frame times,
    Lumina 2's caption and image ids, AnyFlow's full-resolution grid, AnyFlow-FAR's causal
    module at a six-frame video with its first three frames compressed (positions
    `k b + (k - 1) / 2` for a downscale `k`), Helios' and HunyuanVideo FramePack's modules at
    a three-level history (4x, 2x and full resolution frames) pooled by their own pooling
    code into the token order of their pipelines (`pool` 4: each token's positions are four
    sets of axes whose cos and sin the module averages), EasyAnimate's float
    crop coordinates, OmniGen's 1-D LongRoPE at positions 4 000 to 4 299
    (past its original 4 096: the long factors; the build takes factors of its own, see
    `main`), SANA-WM's at Wan 480p's grid, and its camera branch (`rope[camera]`) as
    `_slice_rope_for_cam` re-slices that table for the second half of each head (`lead` the
    first half) (see `run_other`); LTX-Video's, LTX-2's and SANA-WM's LTX-2 refiner's modules at
    their pipelines' coordinates, the positions recorded as `2 g - 1` of each coordinate's
    fraction `g` of the base size, and their leading lanes (`lead`, cos 1 and sin 0) cut
    from the rows (see `run_ltx`); LTX-2 also with `rope_type` `split` (`#split`: its cos and
    sin per head, `heads` recorded, half-split within each head). HiDream is built with the published HiDream-I1's
    `axes_dims_rope` (64, 32, 32), on which its forward runs (see `main`).
Classes of other forms are listed with their rotary modules and no golden.

Output (stdout, JSON): {"generator", "diffusers", "torch", "builds": {label: {"config",
"rope": [{"path", "module"}], "golden": [{"path", "module", "form", "layout", "pairs",
"rows", "positions", "cos", "sin", "lead"}], "error"?}}}
"""

import inspect
import json
import random
import sys
import warnings

import diffusers
import torch
from diffusers.models import ModelMixin

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
from transformers_matrix import labelled  # noqa: E402

warnings.filterwarnings("ignore")

# Rotary module classes whose forward takes position ids `[tokens, axes]`.
IDS = {"FluxPosEmbed", "Flux2PosEmbed", "Flux3PosEmbed", "Krea2RotaryPosEmbed",
       "LongCatImagePosEmbed", "OvisImagePosEmbed", "BriaEmbedND", "BriaPosEmbed",
       "BriaFiboEmbedND", "PRXEmbedND", "ErnieImageEmbedND3", "HiDreamImageEmbedND",
       "RopeEmbedder"}
# Rotary module classes whose forward takes the latent and makes a grid of its patches.
GRID = {"WanRotaryPosEmbed", "SkyReelsV2RotaryPosEmbed", "HunyuanVideoRotaryPosEmbed",
        "HunyuanVideo15RotaryPosEmbed", "MotifVideoRotaryPosEmbed", "HunyuanImageRotaryPosEmbed",
        "CogView4RotaryPosEmbed", "GlmImageRotaryPosEmbed", "ChronoEditRotaryPosEmbed"}
SAMPLES = 32
# The suffix of SANA-WM's camera branch, which re-slices its `rope` module's table.
CAMERA = "[camera]"


def rotary_classes():
    """Every class in diffusers' transformer modules whose name says it is a rotary or
    position embedding."""
    import pkgutil
    import importlib
    import diffusers.models.transformers as pkg
    found = []
    for info in pkgutil.iter_modules(pkg.__path__):
        mod = importlib.import_module(f"{pkg.__name__}.{info.name}")
        for name, obj in vars(mod).items():
            if inspect.isclass(obj) and obj.__module__ == mod.__name__ and any(
                    k in name for k in ("Rotary", "PosEmbed", "Rope", "EmbedND", "RoPE")):
                found.append(obj)
    return found


def record_constructors(classes):
    """Wraps each class's `__init__` so that each instance keeps its arguments."""
    for cls in classes:
        init = cls.__init__

        def wrapped(self, *args, __init=init, **kwargs):
            __init(self, *args, **kwargs)
            self._posenc_args = (args, kwargs)
        cls.__init__ = wrapped


def to_pairs(out):
    """The cos and sin of each pair's angle `[tokens, pairs]` (float64) and the table's layout."""
    if isinstance(out, (tuple, list)) and len(out) == 2:
        c, s = (t.detach().double() for t in out)
        c, s = c.reshape(-1, c.shape[-1]), s.reshape(-1, s.shape[-1])
        d = c.shape[-1]
        if torch.equal(c[:, 0::2], c[:, 1::2]) and torch.equal(s[:, 0::2], s[:, 1::2]):
            return c[:, 0::2], s[:, 0::2], "interleaved"
        if torch.equal(c[:, : d // 2], c[:, d // 2:]) and torch.equal(s[:, : d // 2], s[:, d // 2:]):
            return c[:, : d // 2], s[:, : d // 2], "half"
        raise ValueError("a cos/sin table of neither layout")
    if torch.is_tensor(out) and out.is_complex():
        z = out.detach().to(torch.complex128)
        z = z.reshape(-1, z.shape[-1])
        return z.real, z.imag, "interleaved"
    if torch.is_tensor(out) and out.shape[-2:] == (2, 2):
        m = out.detach().double()
        m = m.reshape(-1, m.shape[-3], 2, 2)
        return m[..., 0, 0], m[..., 1, 0], "interleaved"
    raise ValueError(f"an output of type {type(out).__name__}")


def ids_positions(axes):
    """8 text tokens of zeros, a 24 x 40 image grid `(0, row, column)`, 8 tokens past its
    far corner (a fourth axis, where there is one, zero then `k`)."""
    text = [[0.0] * axes for _ in range(8)]
    image = [[0.0, float(r), float(c)] + [0.0] * (axes - 3) for r in range(24) for c in range(40)]
    far = [[5.0 + k, 28.0 + k, 44.0 + k] + [float(k)] * (axes - 3) for k in range(8)]
    return torch.tensor(text + image + far, dtype=torch.float32)


def run_ids(module):
    axes = len(getattr(module, "axes_dim", None) or getattr(module, "axes_dims"))
    if axes == 2 and type(module).__name__ == "PRXEmbedND":
        # PRX's ids are `[batch, tokens, (row, column)]`: a 24 x 40 grid, 8 tokens past it.
        ids = torch.tensor([[float(r), float(c)] for r in range(24) for c in range(40)]
                           + [[30.0 + k, 45.0 + k] for k in range(8)])
        return ids.tolist(), module(ids[None])
    if axes < 3:
        raise ValueError(f"{axes} axes")
    ids = ids_positions(axes)
    # Z-Image's `RopeEmbedder` indexes its tables by integer ids; HiDream's takes a batch.
    given = ids.long() if type(module).__name__ == "RopeEmbedder" else ids
    if type(module).__name__ in ("HiDreamImageEmbedND", "ErnieImageEmbedND3"):
        given = ids[None]
    return ids.tolist(), module(given)


def run_grid(module, name):
    """The latent the module is given and the positions its code makes."""
    image = name in ("CogView4RotaryPosEmbed", "GlmImageRotaryPosEmbed") or (
        name == "HunyuanImageRotaryPosEmbed" and len(module.rope_dim) == 2)
    if image:
        p = module.patch_size if isinstance(module.patch_size, int) else module.patch_size[-1]
        h = w = 64
        out = module(torch.empty(1, 4, h * p, w * p))
        if name == "CogView4RotaryPosEmbed":
            rows = [r * module.rope_axes_dim[0] // h for r in range(h)]
            cols = [c * module.rope_axes_dim[1] // w for c in range(w)]
        else:
            rows, cols = list(range(h)), list(range(w))
        return [[float(r), float(c)] for r in rows for c in cols], out
    f, h, w = 21, 30, 52
    ps = getattr(module, "patch_size", None)
    if isinstance(ps, (tuple, list)):
        pt, ph, pw = ps
    else:
        pt, ph, pw = getattr(module, "patch_size_t", 1), ps, ps
    out = module(torch.empty(1, 4, f * pt, h * ph, w * pw))
    return [[float(a), float(b), float(c)] for a in range(f) for b in range(h)
            for c in range(w)], out


# Rotary module classes of other forms, each run by a function of its own below.
OTHER = {"Kandinsky5RoPE3D", "Kandinsky6SRRoPE3D", "Kandinsky6RoPE3D", "Kandinsky5RoPE1D",
         "Kandinsky6RoPE1D", "StableAudio3RotaryEmbedding",
         "AudioDiTRotaryEmbedding", "MiniMaxMusic3RotaryEmbedding", "MiniMaxH3RotaryPosEmbed",
         "Ideogram4MRoPE", "Cosmos3VLTextRotaryEmbedding", "QwenEmbedRope", "NucleusMoEEmbedRope",
         "QwenImage21Rope", "CosmosRotaryPosEmbed", "Lumina2RotaryPosEmbed",
         "OmniGenSuScaledRotaryEmbedding", "AnyFlowRotaryPosEmbed", "EasyAnimateRotaryPosEmbed",
         "AnyFlowCausalRotaryPosEmbed", "HeliosRotaryPosEmbed", "HunyuanVideoFramepackRotaryPosEmbed",
         "SanaWMRotaryPosEmbed"}

# Modules whose history tokens take cos and sin averaged over blocks (the positions of each
# token written as POOL sets, see `pooled_sets`).
POOLED = {"HeliosRotaryPosEmbed", "HunyuanVideoFramepackRotaryPosEmbed"}
POOL = 4


def pooled_sets(frames, h, w, k):
    """The tokens of the k x k x k blocks of a `len(frames) x h x w` grid, row-major, as
    `pad_for_3d_conv` and `avg_pool3d` make them (the last frame, row and column replicated
    to fill the edge blocks): each token's POOL position sets `(t, row, column)`, set `j`
    at offset `j mod k` of the block on every axis (a pair reads one axis, so the mean over
    the block's k^3 cells is the mean over its axis's k values). k = 1: the grid itself,
    each token's one position repeated."""
    n = len(frames)
    out = []
    for bt in range(-(-n // k)):
        for bh in range(-(-h // k)):
            for bw in range(-(-w // k)):
                sets = []
                for j in range(POOL):
                    o = j % k
                    sets += [float(frames[min(k * bt + o, n - 1)]), float(min(k * bh + o, h - 1)),
                             float(min(k * bw + o, w - 1))]
                out.append(sets)
    return out


def run_pooled(module, name):
    """Helios' and FramePack's history: 4x tokens of 6 frames (0..5) and 2x tokens of 3 frames
    (6..8) of a 15 x 26 patch grid, each pooled by its transformer's own code (Helios'
    `pad_for_3d_conv` and `center_down_sample_3d`, FramePack's `_pad_rotary_emb`), then the
    full-resolution tokens of 3 frames (9..11), in the transformers' order (4x, 2x, full)."""
    from diffusers.models.transformers import transformer_helios as helios
    from diffusers.models.transformers import transformer_hunyuan_video_framepack as framepack
    cpu = torch.device("cpu")
    h, w = 15, 26
    parts = [(list(range(0, 6)), 4), (list(range(6, 9)), 2), (list(range(9, 12)), 1)]
    cos, sin, positions = [], [], []
    for frames, k in parts:
        idx = torch.tensor([frames])
        if name == "HeliosRotaryPosEmbed":
            emb = module(frame_indices=idx, height=h, width=w, device=cpu)
            if k > 1:
                emb = helios.center_down_sample_3d(helios.pad_for_3d_conv(emb, (k,) * 3), (k,) * 3)
            table = emb.flatten(2).transpose(1, 2)[0]
            c, s = table.chunk(2, dim=-1)
        else:
            p = module.patch_size
            emb = module(frame_indices=idx[0], height=h * p, width=w * p, device=cpu)
            if k > 1:
                emb = framepack.HunyuanVideoFramepackTransformer3DModel._pad_rotary_emb(
                    None, emb, h, w, (k,) * 3)
            c, s = emb
        cos.append(c)
        sin.append(s)
        positions += pooled_sets(frames, h, w, k)
    return positions, (torch.cat(cos), torch.cat(sin))


def run_far(module):
    """AnyFlow-FAR's causal module on 6 frames of a 30 x 52 patch grid, the first 3 frames
    compressed (its `compressed_frame_shape`, the grid over the downscale
    `compressed_patch_size / patch_size`), the forward's own `far_cfg` path. Positions: a
    compressed token of block `b` on an axis of downscale `k` at the block's centre `k b +
    (k - 1) / 2` (the angle of the normalized mean of `e^(i f p)` over the block when every
    `sin(k f / 2) / sin(f / 2) > 0`); the full tokens at their grid's."""
    f, h, w, compressed = 6, 30, 52, 3
    k = [c // p for c, p in zip(module.compressed_patch_size, module.patch_size)]
    ch, cw = -(-h // k[1]), -(-w // k[2])
    cfg = dict(total_frames=f, full_frame_shape=(h, w), compressed_frame_shape=(ch, cw),
               num_compressed_frames=compressed)
    out = module(cfg, torch.device("cpu"))["query"][0, 0]
    centre = [(kk - 1) / 2 for kk in k]
    positions = [[t * k[0] + centre[0], a * k[1] + centre[1], b * k[2] + centre[2]]
                 for t in range(compressed) for a in range(ch) for b in range(cw)]
    positions += [[float(t), float(a), float(b)] for t in range(compressed, f) for a in range(h)
                  for b in range(w)]
    return positions, out


# LTX's modules: rising frequencies over the inner dimension, `dim % (2 axes)` leading lanes.
LTX = {"LTXVideoRotaryPosEmbed", "LTX2AudioVideoRotaryPosEmbed",
       "SanaWMLTX2AudioVideoRotaryPosEmbed"}


def run_ltx(module, name, path):
    """LTX's modules at their pipelines' coordinates, and the positions the crate takes: each
    coordinate as a fraction `g` of the base size, `2 g - 1`, in f32 as the module computes it.
    LTX-Video: a 9 x 24 x 40 latent grid (65 frames of 768 x 1280) at the pipeline's
    `rope_interpolation_scale` (8 / 25 fps, 32, 32), the grid from the module's own
    `_prepare_video_coords`. LTX-2: the module's `prepare_video_coords` (7 x 16 x 24, 24 fps)
    or `prepare_audio_coords` (40 frames), the midpoint of each patch's bounds; the
    cross-attention modules at the time axis of those (`coords[:, 0:1]`, as the transformer
    passes them)."""
    cpu = torch.device("cpu")
    if name == "LTXVideoRotaryPosEmbed":
        f, h, w = 9, 24, 40
        scale = (8 / 25, 32.0, 32.0)
        grid = module._prepare_video_coords(1, f, h, w, scale, cpu)
        out = module(torch.empty(1, f * h * w, module.dim), f, h, w, scale)
        return (grid[0] * 2 - 1).tolist(), out
    audio = module.modality == "audio"
    coords = (module.prepare_audio_coords(1, 40, cpu) if audio
              else module.prepare_video_coords(1, 7, 16, 24, cpu, fps=24.0))
    if path.startswith("cross_attn"):
        coords = coords[:, 0:1]
    out = module(coords, cpu)
    base = (module.base_num_frames, module.base_height, module.base_width)
    start, end = coords.float().chunk(2, dim=-1)
    mid = ((start + end) / 2.0).squeeze(-1)
    grid = torch.stack([mid[:, i] / base[i] for i in range(mid.shape[1])], dim=-1)
    return (grid[0] * 2 - 1).tolist(), out


def run_other(module, name, config):
    """Kandinsky's 3-D module at `(t, h, w) / scale_factor` (the config's scale factor, or
    (1, 2, 2) as Kandinsky 5's pipeline passes) and its 1-D text module at `0..S`; the 1-D audio
    modules at `0..S`; MiniMaxH3's at position ids `(t, h, w)` of a 5 x 12 x 20 grid, offset by
    7 on the spatial axes (its pipeline's ids are floats)."""
    if name in ("Kandinsky5RoPE3D", "Kandinsky6SRRoPE3D", "Kandinsky6RoPE3D"):
        f, h, w = 9, 24, 40
        scale = tuple(config.get("scale_factor") or (1.0, 2.0, 2.0))
        pos = (torch.arange(f), torch.arange(h), torch.arange(w))
        out = module((1, f, h, w), pos, scale) if name == "Kandinsky5RoPE3D" else module(pos, scale)
        positions = [[a / scale[0], b / scale[1], c / scale[2]]
                     for a in range(f) for b in range(h) for c in range(w)]
        return positions, out
    n = 300
    if name in ("Kandinsky5RoPE1D", "Kandinsky6RoPE1D"):
        return [[float(i)] for i in range(n)], module(torch.arange(n))
    if name == "StableAudio3RotaryEmbedding":
        angles = module(n, "cpu")
        return [[float(i)] for i in range(n)], (angles.cos(), angles.sin())
    if name == "AudioDiTRotaryEmbedding":
        return [[float(i)] for i in range(n)], module(torch.empty(1, n, 4), n)
    if name == "MiniMaxMusic3RotaryEmbedding":
        return [[float(i)] for i in range(n)], module(n, "cpu")
    if name == "MiniMaxH3RotaryPosEmbed":
        ids = torch.tensor([[a, 7.0 + b, 7.0 + c] for a in range(5) for b in range(12)
                            for c in range(20)], dtype=torch.float32)
        return ids.tolist(), module(ids)
    if name in ("Ideogram4MRoPE", "Cosmos3VLTextRotaryEmbedding"):
        # Text tokens on the diagonal, then an image grid: Ideogram 4's at its offset 65 536
        # on every axis, Cosmos 3's two frames after its 15 000 temporal margin.
        ideogram = name == "Ideogram4MRoPE"
        text = [[float(i)] * 3 for i in range(8)]
        frames = 1 if ideogram else 2
        image = [[65536.0 + 0 * t, 65536.0 + h, 65536.0 + w] if ideogram
                 else [15008.0 + t, float(h), float(w)]
                 for t in range(frames) for h in range(12) for w in range(20)]
        ids = torch.tensor(text + image)
        if ideogram:
            out = module(ids.long()[None])
        else:
            out = module(ids.long().T[:, None, :], "cpu", torch.float32)
        return ids.tolist(), out
    if name in ("QwenEmbedRope", "NucleusMoEEmbedRope"):
        # 8 text tokens after a 24 x 40 image: rows and columns centered, text on the
        # diagonal from max(h / 2, w / 2) (the module's own rule).
        h, w, text = 24, 40, 8
        vid, txt = module([(1, h, w)], device=torch.device("cpu"), max_txt_seq_len=text)
        m = max(h // 2, w // 2)
        pos = [[float(m + k)] * 3 for k in range(text)]
        pos += [[0.0, float(a), float(b)] for a in range(-(h - h // 2), h // 2)
                for b in range(-(w - w // 2), w // 2)]
        return pos, torch.cat([txt, vid])
    if name == "CosmosRotaryPosEmbed":
        # A 30 fps video: frame t at t / fps * base_fps, in f32 as the module computes it.
        f, h, w = 9, 24, 40
        pt, ph, pw = module.patch_size
        out = module(torch.empty(1, 4, f * pt, h * ph, w * pw), fps=30)
        t = (torch.arange(f, dtype=torch.float32) / 30 * module.base_fps).tolist()
        return [[t[a], float(b), float(c)] for a in range(f) for b in range(h)
                for c in range(w)], out
    if name == "EasyAnimateRotaryPosEmbed":
        # A 9 x 24 x 40 latent grid: its float coordinates, the linspace of the crop region
        # its forward computes (the same calls, in f32), frames 0..8.
        f, h, w = 9, 24, 40
        p = module.patch_size
        out = module(torch.empty(1, 4, f, h * p, w * p))
        (top, left), (bottom, right) = module.get_resize_crop_region_for_grid(
            (h, w), 90 // p, 60 // p)
        rows = torch.linspace(top, bottom * (h - 1) / h, h, dtype=torch.float32).tolist()
        cols = torch.linspace(left, right * (w - 1) / w, w, dtype=torch.float32).tolist()
        t = torch.linspace(0, f * (f - 1) / f, f, dtype=torch.float32).tolist()
        return [[t[a], rows[b], cols[c]] for a in range(f) for b in range(h)
                for c in range(w)], out
    if name == "AnyFlowRotaryPosEmbed":
        # Its full-resolution grid (the path its forward takes), Wan 480p's.
        f, h, w = 21, 30, 52
        out = module._forward_full_frame(f, h, w, torch.device("cpu"))
        return [[float(a), float(b), float(c)] for a in range(f) for b in range(h)
                for c in range(w)], out
    if name == "SanaWMRotaryPosEmbed":
        # Wan 480p's latent grid, (frames, rows, columns) as its forward takes them.
        f, h, w = 21, 30, 52
        return [[float(a), float(b), float(c)] for a in range(f) for b in range(h)
                for c in range(w)], module((f, h, w))
    if name in POOLED:
        return run_pooled(module, name)
    if name == "AnyFlowCausalRotaryPosEmbed":
        return run_far(module)
    if name == "OmniGenSuScaledRotaryEmbedding":
        ids = torch.arange(4000, 4300)[None]
        return [[float(i)] for i in range(4000, 4300)], module(torch.empty(1, 300, 4), ids)
    if name == "Lumina2RotaryPosEmbed":
        # 8 caption tokens (k, 0, 0), then a 24 x 40 image (8, row, column): the module's ids.
        h, w, cap = 24, 40, 8
        p = module.patch_size
        out = module(torch.empty(1, 4, h * p, w * p), torch.ones(1, cap, dtype=torch.bool))
        pos = [[float(k), 0.0, 0.0] for k in range(cap)]
        pos += [[float(cap), float(r), float(c)] for r in range(h) for c in range(w)]
        return pos, out[3]
    if name == "QwenImage21Rope":
        # 8 text tokens, a 24 x 40 image, 4 text tokens: the module's running counter.
        h, w, before, after = 24, 40, 8, 4
        mask = torch.tensor([False] * before + [True] * (h * w) + [False] * after)
        out = module([(1, h, w)], mask, torch.device("cpu"))
        pos = [[float(k)] * 3 for k in range(before)]
        pos += [[float(before), float(a), float(b)] for a in range(-(h - h // 2), h // 2)
                for b in range(-(w - w // 2), w // 2)]
        start = before + max(h, w)
        pos += [[float(start + k)] * 3 for k in range(after)]
        return pos, out
    raise ValueError(name)


def golden(label, path, module, config):
    name = type(module).__name__
    args, kwargs = module._posenc_args
    cpu = type(module)(*args, **kwargs)
    if name in IDS:
        form, (positions, out) = "ids", run_ids(cpu)
    elif name in GRID:
        form, (positions, out) = "grid", run_grid(cpu, name)
    elif name in OTHER:
        form, (positions, out) = "other", run_other(cpu, name, config)
    elif name in LTX:
        form, (positions, out) = "other", run_ltx(cpu, name, path)
    else:
        return None
    # SANA-WM's camera branch: the table re-sliced for the second half of each head
    # (_slice_rope_for_cam), the first half left to its ray matrices.
    camera = path.endswith(CAMERA)
    if camera:
        from diffusers.models.transformers import transformer_sana_wm
        d = cpu.attention_head_dim
        out = transformer_sana_wm._slice_rope_for_cam(out, d, d // 2)
    per_head = name in LTX and getattr(cpu, "rope_type", "interleaved") == "split"
    # ERNIE-Image's angles `[1, tokens, 1, head_dim]`, `[t0, t0, t1, t1, ..]`, which its
    # attention processor applies with `rotate_half`: a cos and a sin a lane (`table`), as
    # the processor computes them (f32).
    lanes = name == "ErnieImageEmbedND3"
    if lanes:
        out = out.reshape(len(positions), -1)
        cos, sin, layout = torch.cos(out).double(), torch.sin(out).double(), "half"
    elif per_head:
        # LTX-2's split tables: [batch, heads, tokens, pairs], half-split within each head.
        out = tuple(t[0].transpose(0, 1) for t in out)
        cos, sin, layout = out[0].double(), out[1].double(), "half"
    else:
        cos, sin, layout = to_pairs(out)
    # LTX's leading lanes (cos 1, sin 0), before the rotated pairs.
    lead = cpu.dim % (2 * len(positions[0])) if name in LTX and not per_head else 0
    if lead and not camera:
        assert layout == "interleaved" and bool((cos[:, : lead // 2] == 1).all())
        assert bool((sin[:, : lead // 2] == 0).all())
        cos, sin = cos[:, lead // 2:], sin[:, lead // 2:]
    if camera:
        lead = cpu.attention_head_dim // 2
    if cos.shape[0] != len(positions):
        raise ValueError(f"{cos.shape[0]} rows for {len(positions)} tokens")
    rng = random.Random(f"rope-configs-{label}-{path}")
    s = len(positions)
    rows = sorted({0, s - 1} | {rng.randrange(s) for _ in range(SAMPLES - 2)})
    pooled = name in POOLED
    if pooled or name == "AnyFlowCausalRotaryPosEmbed":
        # As many again among the history (or compressed) tokens, the first 264 or 1170.
        rows = sorted(set(rows) | {rng.randrange(264 if pooled else 1170) for _ in range(SAMPLES)})
    pairs = cos.shape[-1] // 2 if lanes else cos.shape[-1]
    return dict(path=path, module=name, form=form, layout=layout, lead=lead, pairs=pairs,
                **({"heads": cos.shape[1]} if per_head else {}),
                **({"table": "interleaved"} if lanes else {}),
                **({"pool": POOL} if pooled else {}),
                rows=rows, positions=[positions[r] for r in rows],
                cos=[cos[r].tolist() for r in rows], sin=[sin[r].tolist() for r in rows])


def build(cls, kwargs, label):
    with torch.device("meta"):
        model = cls(**kwargs)
    config = dict(model.config)
    config["_class_name"] = cls.__name__
    # A set in diffusers' config: sorted so that the output is the same from run to run.
    if "_use_default_values" in config:
        config["_use_default_values"] = sorted(config["_use_default_values"])
    mods = [(p, m) for p, m in model.named_modules() if hasattr(m, "_posenc_args")]
    # Rotary embedders that are plain objects, not modules (Z-Image's `RopeEmbedder`).
    mods += [(p, m) for p, m in vars(model).items()
             if not isinstance(m, torch.nn.Module) and hasattr(m, "_posenc_args")]
    # SANA-WM's camera branch rotates with its `rope`'s table re-sliced: a module of its own here.
    mods += [(p + CAMERA, m) for p, m in mods if type(m).__name__ == "SanaWMRotaryPosEmbed"]
    entry = dict(config=json.loads(json.dumps(config, default=str)),
                 rope=[dict(path=p, module=type(m).__name__) for p, m in mods], golden=[])
    for p, m in mods:
        try:
            g = golden(label, p, m, config)
        except Exception as e:  # noqa: BLE001 (the form is not one of those run)
            g, entry["golden_error"] = None, f"{type(e).__name__}: {str(e)[:160]}"
        if g is None:
            # Every module of the class run, or none.
            entry["golden"] = []
            break
        entry["golden"].append(g)
    return entry


def main():
    record_constructors(rotary_classes())
    names = sorted(n for n in dir(diffusers)
                   if inspect.isclass(getattr(diffusers, n, None))
                   and issubclass(getattr(diffusers, n), ModelMixin)
                   and ("Transformer" in n or "DiT" in n))
    builds = {}
    for name in names:
        for label, kwargs in labelled(name):
            if name == "OmniGenTransformer2DModel":
                # LongRoPE factors of their own (the matrix's build takes ones), so that the
                # golden tells the short list from the long one and both from none.
                kwargs = dict(rope_scaling=dict(
                    type="su", short_factor=[1.0 + 0.02 * k for k in range(48)],
                    long_factor=[1.0 + 0.25 * k for k in range(48)]))
            if name == "HiDreamImageTransformer2DModel":
                # The published HiDream-I1's axes (its config.json): the class's default
                # (32, 32) covers two of the three id columns its forward passes, and
                # diffusers' own module fails on it (IndexError).
                kwargs = dict(kwargs, axes_dims_rope=(64, 32, 32))
            if name == "LTX2VideoTransformer3DModel":
                # Its other rope_type: one list across the heads, each head a slice of it.
                split = f"{label}#split"
                builds[split] = build(getattr(diffusers, name), dict(kwargs, rope_type="split"), split)
            try:
                builds[label] = build(getattr(diffusers, name), kwargs, label)
            except Exception as e:  # noqa: BLE001 (the config does not build)
                builds[label] = dict(error=f"{type(e).__name__}: {str(e)[:160]}")
    out = dict(generator="tests/data/diffusers/rope_configs.py", diffusers=diffusers.__version__,
               torch=torch.__version__, builds=builds)
    json.dump(out, sys.stdout)
    n = sum(1 for b in builds.values() if b.get("golden"))
    print(f"{len(builds)} builds, {sum(1 for b in builds.values() if b.get('rope'))} with a "
          f"rotary module, {n} run", file=sys.stderr)
    for k, b in builds.items():
        if b.get("rope") and not b.get("golden"):
            print(k, [r["module"] for r in b["rope"]], b.get("golden_error", ""), file=sys.stderr)


if __name__ == "__main__":
    main()
