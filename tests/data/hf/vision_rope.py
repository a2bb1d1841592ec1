"""Writes vision_rope.json: which transformers families have a rotary position module outside the
text decoder (vision, video, audio and other non-text encoders), and golden rotations for the
"axial" vision ones, all computed by transformers' own modeling code.

Part 1, the survey. Every model_type of `CONFIG_MAPPING` is built from its default config on the
meta device (base class from `MODEL_MAPPING`, else the first auto mapping holding the config) and
its modules are walked. A module is kept when its class is in `KEEP` below (read from the code:
its forward makes cos/sin or complex rotations that a non-text attention applies) and, for
classes shared with a text model, its path matches. JSON keys:
  families[]    model_type, config_class, model_class, config_key (dotted sub-config key the
                module is built from; null = top level; a list when modules differ), modules[]
                (path, class, config_key, rope_type of that sub-config, apply = the function the
                consuming attention calls), form {class: one sentence on what it computes},
                modalities, notes (why a doubtful module was kept), case (model_type of the case
                holding its numbers, or null), config (CONFIG_MAPPING[mt]().to_dict(), JSON-safe).
  unbuildable[] model_type, stage (config | model_class | model), error (first line); a model
                that fails as a whole also names the KEEP classes its modeling file defines.
  excluded[]    rotary-named classes left out on purpose, with the reason.
  unclassified[] rotary-named modules under a non-text PreTrainedModel that no table explains
                (empty when the tables are complete).
  not_instantiated[] KEEP or encoder-looking rotary classes no default config builds.

Part 2, the cases. For each family whose module is `forward(x, position_ids) -> (cos, sin)` fed
integer ids built from an image grid (the Qwen2-VL-style vision towers, Pixtral, Gemma 4, ...),
the module is built on the CPU from the family's default sub-config, fed the family's own
position ids for a 48 x 64 patch grid (grid_thw = (1, 48, 64); MiniMax-M3-VL: two frames), and
the family's own apply function is called exactly as its vision attention calls it, on a random
q with k = q. Recorded: the sampled tokens' position rows ([row][token], row names in the
module's own order), q and out ([token][head][lane]), cos and sin ([token][lane]), inv_freq,
rope_theta, head_dim, heads (min(config heads, 2)). A case whose numbers equal an earlier one's
(same code, config values and positions) is written as {model_type, module, config_key, same_as}.
The SAM 2 / SAM 3 / EdgeTAM modules have the same forward but read a precomputed buffer of
(w, h) ids over a fixed grid (and SAM 3's global layers scale it to fractions); as asked, they get
a `form` and no case.

Floats: inputs and outputs are float32; each is written as the shortest decimal that reads back
to the same float32 (parse as f64, then cast to f32). q is drawn with torch.randn in float64 after
torch.manual_seed(0) (reseeded per case), rounded to 2 decimals and cast to float32: short
decimals keep the file small, and every value is still exactly what was passed in.

Rerun (about a minute on 2 CPU cores, deterministic, no Hub access needed):

    /path/to/python tests/data/hf/vision_rope.py

It needs transformers 5.24.0 and torch 2.x (the CPU is enough); README.md in this folder says how
the environment was made. Other transformers versions will find other families.
"""

import json
import math
import os
import platform
import re
import sys
import warnings

import numpy as np
import torch
import transformers
from transformers import PreTrainedConfig
from transformers.models.auto import modeling_auto
from transformers.models.auto.configuration_auto import CONFIG_MAPPING
from transformers.vision_utils import get_vision_position_ids

GRID = (1, 48, 64)  # (t, h, w) patches: 3072 tokens, every merge size up to 16 divides it
N_SAMPLE = 24
MAX_HEADS = 1  # q gets min(num_attention_heads, 1) heads; head_dim stays the config's
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vision_rope.json")
NAME_RE = re.compile(r"Rotary|Rope|RoPE|PosEmbed|PositionEmbedding")

# ---------------------------------------------------------------------------------------------
# What the modules compute, read from the modeling code of transformers 5.24.0.
# ---------------------------------------------------------------------------------------------

# The Qwen2-VL axial module and its copies: inv_freq over head_dim/2 (f_i = theta^(-4i/hd)),
# cos = [h*f, w*f, h*f, w*f], applied half-split (rotate_half).
QWEN_AXIAL = ("axial 2-D: positions (N, 2) = (h, w); f_i = theta^(-4i/head_dim), i < head_dim/4; "
              "cos/sin lanes = [h*f | w*f | h*f | w*f], applied half-split (rotate_half)")
AUDIO_1D = ("1-D RoPE over the frame index (Llama style): cos/sin = cat(t*f, t*f), "
            "f_i = theta^(-2i/rotary_dim), applied half-split (rotate_half)")
MUSE_POSITIONS = "; the vision model flips positions to (w, h) and adds 1"
PARTIAL = "; partial: only the first rotary_dim lanes turn"
PE_1D = ("1-D over the sequence: the first half of cos/sin (t*f) applied as 2x2 rotations on "
         "interleaved (2i, 2i+1) pairs (stack_freqs)")
SAM_MEMORY = ("axial 2-D over the fixed memory_attention_rope_feat_sizes grid, precomputed "
              "(N, 2) = (w, h) buffer (row 0 is named freq_h in the code but holds w); "
              "cos/sin = repeat_interleave([p0*f | p1*f], 2), applied to interleaved pairs "
              "(rotate_pairwise); q is [B, heads, N, hd], head_dim = memory_attention_hidden_size "
              "// (downsample_rate * heads)")


def info(apply, form, modality="vision", path=None, note=None):
    """One KEEP entry; `path`, when given, is a regex the module path must match."""
    return {"apply": apply, "form": form, "modality": modality, "path": path, "note": note}


KEEP = {
    **{name: info("apply_rotary_pos_emb_vision", QWEN_AXIAL) for name in [
        "Qwen2VLVisionRotaryEmbedding", "Qwen2_5_VLVisionRotaryEmbedding", "Qwen3VLVisionRotaryEmbedding",
        "Qwen3VLMoeVisionRotaryEmbedding", "Qwen3_5VisionRotaryEmbedding", "Qwen3_5MoeVisionRotaryEmbedding",
        "Qwen2_5OmniVisionRotaryEmbedding", "Qwen3OmniMoeVisionRotaryEmbedding", "Qwen4ExpVisionRotaryEmbedding",
        "Glm4vVisionRotaryEmbedding", "Glm4vMoeVisionRotaryEmbedding", "Glm5NextVisionRotaryEmbedding",
        "GlmOcrVisionRotaryEmbedding", "Ernie4_5_VLMoeVisionRotaryEmbedding", "Exaone4_5_VisionRotaryEmbedding",
        "PaddleOCRVisionRotaryEmbedding", "VideoLlama3VisionRotaryEmbedding", "CohereCompassVisionRotaryEmbedding",
        "Dots3NoteVisionRotaryEmbedding", "Lfm3VlVisionRotaryEmbedding", "MLCDRotaryEmbedding"]},
    **{name: info("apply_rotary_pos_emb_vision", QWEN_AXIAL + MUSE_POSITIONS)
       for name in ["MuseGlimmerVisionRotaryEmbedding", "MuseSparkVisionRotaryEmbedding"]},
    "Kimi_K25VisionRotaryEmbedding": info(
        "apply_rotary_pos_emb_vision",
        "axial 2-D: positions (N, 2) = (h, w); f_i = theta^(-4i/hd); cos/sin lanes = "
        "[w*f0, h*f0, w*f1, h*f1, ...] twice (per-frequency (w, h) interleave), applied half-split"),
    "Step3p7VisionRotaryEmbedding": info(
        "apply_rotary_pos_emb_vision",
        "axial 2-D: positions (N, 2) = (h, w); f_i = theta^(-4i/hd); cos/sin lanes = "
        "[w*f | h*f | w*f | h*f], applied half-split"),
    "Inkling2VisionRotaryEmbedding": info(
        "apply_rotary_pos_emb_vision",
        "axial 2-D: positions (N, 2) = (h+1, w+1), class token at (0, 0); f_i = theta^(-4i/hd); "
        "cos/sin = repeat_interleave([w*f | h*f], 2), applied to interleaved pairs (rotate_pairwise)"),
    "MiniMaxM3VLVisionRotaryEmbedding": info(
        "apply_rotary_pos_emb_vision",
        "partial axial 3-D: positions (N, 3) = (t, h, w); spatial_dim = 2*((hd//3)//2), "
        "f_i = theta^(-2i/spatial_dim); cos/sin = [t*f | h*f | w*f] twice over the first "
        "3*spatial_dim lanes, the rest pass through; half-split"),
    "Gemma4VisionRotaryEmbedding": info(
        "apply_multidimensional_rope",
        "axial 2-D: positions (B, N, 2) = (x, y) = (w, h) from the image processor; f_i = theta^(-4i/hd); "
        "cos/sin = [p0*f | p0*f | p1*f | p1*f]; the apply function splits q into two halves and "
        "rotates each half-split (rotate_half) with its own axis"),
    "PixtralVisionRotaryEmbedding": info(
        "apply_rotary_pos_emb",
        "axial 2-D: positions (N, 2) = (h, w); inv_freq over the full head_dim reordered as "
        "[even | odd]: h takes theta^(-4i/hd), w takes theta^(-(4i+2)/hd); cos/sin = "
        "[h*f_even | w*f_odd] twice, applied half-split with unsqueeze_dim=0"),
    "Sam3ViTRotaryEmbedding": info(
        "apply_rotary_pos_emb_2d",
        "axial 2-D, one module per ViT layer: precomputed (N, 2) = (w, h) buffer over the 24 x 24 "
        "window or, for global layers, the full image_size/patch_size grid scaled by "
        "window_size/grid_w (fractional positions); f_i = theta^(-4i/hd); cos/sin = "
        "repeat_interleave([w*f | h*f], 2), applied to interleaved pairs (rotate_pairwise)"),
    "Sam2VideoVisionRotaryEmbedding": info("apply_rotary_pos_emb_2d", SAM_MEMORY, "video"),
    "Sam3TrackerVideoVisionRotaryEmbedding": info("apply_rotary_pos_emb_2d", SAM_MEMORY, "video"),
    "EdgeTamVideoVisionRotaryEmbedding": info(
        "apply_rotary_pos_emb_2d_self_attn",
        SAM_MEMORY + "; EdgeTAM also builds a key grid (position_ids_k) for "
        "apply_rotary_pos_emb_2d_cross_attn, which skips the temporal key tokens",
        "video"),
    "Llama4VisionRotaryEmbedding": info(
        "vision_apply_rotary_emb",
        "complex freqs_ci table over the fixed (image_size/patch_size)^2 grid plus a trailing CLS "
        "row: interleaved pair j < hd/4 turns by (column+1)*f_j, pair hd/4 + j by (row+1)*f_j, "
        "f_j = theta^(-4j/hd); CLS row zeroed (angle 0); applied as a complex multiply on "
        "(2i, 2i+1) pairs"),
    "DINOv3ViTRopePositionEmbedding": info(
        "apply_rotary_pos_emb",
        "2-D over patch-centre coordinates in [-1, 1] (c = 2*(i+0.5)/n - 1 for h and w): "
        "angles = 2*pi*c*f, f_i = theta^(-4i/hd), lanes [h*f | w*f] tiled twice, half-split; "
        "prefix tokens (CLS, registers) are not rotated; training adds shift/jitter/rescale "
        "augmentation"),
    "Sapiens2RopePositionEmbedding": info(
        "apply_rotary_pos_emb",
        "same as DINOv3: 2-D over patch-centre coordinates in [-1, 1], angles "
        "2*pi*c*theta^(-4i/hd), lanes [h | w] tiled twice, half-split, prefix tokens not rotated"),
    "VJEPA2RopeAttention": info(
        "rotate_queries_or_keys",
        "3-D RoPE computed inside the attention from the token index: (frame, row, column) of a "
        "crop_size/patch_size square grid, frames_per_clip/tubelet_size deep; three blocks of "
        "D = 2*((hd//3)//2) lanes (d, h, w) plus a pass-through tail; per block "
        "omega_i = 10000^(-i/(D/2)) with cos/sin tiled [omega | omega] but the rotation partner is "
        "the interleaved neighbour, so lane l turns by pos*omega_(l mod D/2)",
        "video"),
    "EfficientLoFTRRotaryEmbedding": info(
        "apply_rotary_pos_emb",
        "2-D over the aggregated coarse feature map, applied to the whole hidden_size before the "
        "head split (unsqueeze_dim=2): interleaved pair 2k turns by (row+1)*f_k and pair 2k+1 by "
        "(column+1)*f_k, f_k = theta^(-2k/(partial_rotary_factor*head_dim)), partial_rotary_factor 4"),
    # Audio (and audio-video) encoders and codecs: 1-D RoPE over frames.
    "GlmAsrRotaryEmbedding": info("apply_rotary_pos_emb", AUDIO_1D + PARTIAL, "audio"),
    "LasrEncoderRotaryEmbedding": info("apply_rotary_pos_emb", AUDIO_1D, "audio"),
    "VoxtralRealtimeRotaryEmbedding": info(
        "apply_rotary_pos_emb", AUDIO_1D, "audio", path=r"^(audio_tower\.)?rotary_emb$",
        note="the same class also serves the text model (language_model.rotary_emb, excluded)"),
    "Nemotron3_5TranscribeRotaryEmbedding": info("apply_rotary_pos_emb", AUDIO_1D + PARTIAL, "audio"),
    "Nemotron3DiarizationRotaryEmbedding": info("apply_rotary_pos_emb", AUDIO_1D + PARTIAL, "audio"),
    "Dots3NoteAudioRotaryEmbedding": info("apply_rotary_pos_emb", AUDIO_1D + PARTIAL, "audio"),
    "MoonshineRotaryEmbedding": info(
        "apply_rotary_pos_emb",
        "1-D over frames: the first half of cos/sin (t*f) repeat_interleaved by 2 and applied to "
        "interleaved pairs over the first rotary_dim lanes (partial_rotary_factor), rest pass through",
        "audio", path=r"^encoder\.",
        note="the decoder's rotary (decoder.rotary_emb) is the text decoder's and is excluded"),
    "ClvpRotaryPositionalEmbedding": info(
        "apply_rotary_pos_emb",
        "1-D table cat(t*f, t*f) over the sequence, dim = max(projection_dim // (2*heads), 32), "
        "theta 10000; applied half-split to the first rotary lanes of q, k and v",
        "audio", path=r"^speech_encoder_model\.",
        note="unsure: the speech encoder reads discrete speech tokens; the text encoder's copy is excluded"),
    "MimiRotaryEmbedding": info("apply_rotary_pos_emb", AUDIO_1D, "audio",
                                note="transformer inside the audio codec (encoder and decoder sides)"),
    "PocketTTSAudioTokenizerRotaryEmbedding": info("apply_rotary_pos_emb", AUDIO_1D, "audio",
                                                   note="transformer inside the audio tokenizer (codec)"),
    "NeuCodecRotaryEmbedding": info("apply_rotary_pos_emb", AUDIO_1D, "audio",
                                    note="unsure: acoustic decoder of the codec, not an encoder"),
    "Xcodec2RotaryEmbedding": info("apply_rotary_pos_emb", AUDIO_1D, "audio",
                                   note="unsure: acoustic decoder of the codec, not an encoder"),
    "PeAudioEncoderRotaryEmbedding": info("apply_rotary_pos_emb", PE_1D, "audio"),
    "PeVideoEncoderRotaryEmbedding": info("apply_rotary_pos_emb", PE_1D, "video"),
    "PeAudioVideoEncoderRotaryEmbedding": info("apply_rotary_pos_emb", PE_1D, "audio"),
    "Qwen2_5OmniDiTRotaryEmbedding": info(
        "apply_rotary_pos_emb",
        AUDIO_1D + "; applied only to head 0, after deinterleave_head_dim (the checkpoint is interleaved)",
        "audio", note="token2wav DiT over mel frames (speech synthesis), not an encoder"),
    "MusicFlamingoRotaryEmbedding": info(
        "apply_rotary_time_emb",
        "rotary time embedding on the audio encoder's output hidden states (not q/k): axial over "
        "(window index, time index), both scaled by -2*pi*timestamp seconds, interleaved pairs, "
        "computed in float64",
        "audio"),
    # Other non-text sequences.
    "DeepseekOcr2VisionRotaryEmbedding": info(
        "apply_rotary_pos_emb",
        "1-D RoPE (Llama style, half-split) over the vision encoder's token sequence, "
        "position_ids = arange(N)"),
    "EvollaSaProtRotaryEmbedding": info(
        "apply_rotary_pos_emb", "1-D RoPE over residues (Llama style), half-split", "protein",
        note="unsure: protein-sequence encoder inside a multimodal model; kept as non-text"),
    "EsmcRotaryEmbedding": info(
        "apply_rotary_pos_emb", "1-D RoPE over residues (Llama style), half-split", "protein",
        note="unsure: protein language model's own 1-D rotary; kept as non-text"),
    "TimesFm2_5RotaryEmbedding": info(
        "apply_rotary_pos_emb",
        "1-D RoPE over time-series patches (Llama style), positions shifted by the masked count, half-split",
        "time", note="unsure: time-series decoder, not an encoder"),
    "GemmaRotaryEmbedding": info(
        "apply_rotary_pos_emb", "1-D Gemma RoPE over the action-expert tokens, half-split", "action",
        path=r"^dit\.",
        note="unsure: PI0's action expert (dit) is a Gemma decoder over state/action tokens; "
             "the VLM's copy is excluded"),
}

# Modules a reader might expect here, left out on purpose (checked against the walk below).
EXCLUDED = {
    "Sam2VideoRoPEAttention": "consumer attention: applies memory_attention.rotary_emb's cos/sin, makes none",
    "Sam3TrackerVideoRoPEAttention": "consumer attention: applies memory_attention.rotary_emb's cos/sin, makes none",
    "EdgeTamVideoRoPESelfAttention": "consumer attention: applies memory_attention.rotary_emb's cos/sin, makes none",
    "EdgeTamVideoRoPECrossAttention": "consumer attention: applies memory_attention.rotary_emb's cos/sin, makes none",
    "Sam3ViTRoPEAttention": "consumer attention: applies the layer's rotary_emb cos/sin, makes none",
    "MoonshineRotaryEmbedding": "decoder.rotary_emb belongs to the text decoder",
    "ClvpRotaryPositionalEmbedding": "text_encoder_model.rotary_pos_emb encodes text",
    "VoxtralRealtimeRotaryEmbedding": "language_model.rotary_emb is the text decoder's",
    "GemmaRotaryEmbedding": "language model copies are text decoders",
    "CsmRotaryEmbedding": "backbone and depth decoder are LMs over text and audio-codebook tokens",
    "MoshiRotaryEmbedding": "decoder LM over text and audio-codebook tokens",
    "KyutaiSpeechToTextRotaryEmbedding": "decoder LM over text and audio-codebook tokens",
    "DiaRotaryEmbedding": "the encoder reads text, the decoder is an LM over audio-codebook tokens",
    "HiggsAudioV2RotaryEmbedding": "decoder LM over text and audio tokens",
    "GradiumPhononTTSRotaryEmbedding": "causal LM over one stream of voice-prompt latents, text and audio latents",
    "PocketTTSRotaryEmbedding": "causal LM backbone of the TTS model",
    "BltRotaryEmbedding": "byte-level text model",
}


# ---------------------------------------------------------------------------------------------
# Part 1: the survey.
# ---------------------------------------------------------------------------------------------

def first_line(exc):
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


def model_class_for(config):
    """The base model class for a config: MODEL_MAPPING, else the first auto mapping holding it."""
    names = ["MODEL_MAPPING"] + sorted(
        n for n in dir(modeling_auto)
        if n.startswith("MODEL_") and n.endswith("_MAPPING") and n != "MODEL_MAPPING")
    for name in names:
        try:
            cls = getattr(modeling_auto, name)[type(config)]
        except Exception:  # noqa: BLE001 - not in this mapping (or its module fails to import)
            continue
        return cls[0] if isinstance(cls, (tuple, list)) else cls
    return None


def build_meta(model_type):
    """(config, model) built on the meta device, or raises with the stage in the message."""
    try:
        config = CONFIG_MAPPING[model_type]()
    except Exception as exc:  # noqa: BLE001
        raise RuntimeError("config", first_line(exc)) from exc
    cls = model_class_for(config)
    if cls is None:
        raise RuntimeError("model_class", "no auto mapping holds " + type(config).__name__)
    try:
        with torch.device("meta"):
            model = cls._from_config(config)
    except Exception as exc:  # noqa: BLE001
        raise RuntimeError("model", f"{cls.__name__}: {first_line(exc)}") from exc
    return config, model


def config_key(model, modules, path):
    """Dotted key from model.config to the config the module (or its nearest ancestor) holds."""
    parts = path.split(".")
    target = None
    for i in range(len(parts), -1, -1):
        mod = modules[".".join(parts[:i])] if i else model
        if isinstance(getattr(mod, "config", None), PreTrainedConfig):
            target = mod.config
            break
    stack = [(model.config, None)]
    while stack:
        cfg, key = stack.pop()
        if cfg is target:
            return key, target
        for name, value in sorted(vars(cfg).items(), reverse=True):
            if isinstance(value, PreTrainedConfig):
                stack.append((value, name if key is None else f"{key}.{name}"))
    return None, target


def rope_type_of(cfg):
    params = getattr(cfg, "rope_parameters", None) if cfg is not None else None
    if isinstance(params, dict) and "rope_type" in params:
        return params["rope_type"]
    if isinstance(params, dict) and all(isinstance(v, dict) for v in params.values()) and params:
        return {k: v.get("rope_type") for k, v in params.items()}  # per layer type
    return None


def modalities_of(model, modules, path):
    """input_modalities of the nearest PreTrainedModel holding the module (for the safety net)."""
    parts = path.split(".")
    for i in range(len(parts) - 1, -1, -1):
        mod = modules[".".join(parts[:i])] if i else model
        if isinstance(mod, transformers.PreTrainedModel):
            value = getattr(mod, "input_modalities", None)
            return [value] if isinstance(value, str) else list(value or [])
    return []


def kept(name, path):
    entry = KEEP.get(name)
    return entry is not None and (entry["path"] is None or re.search(entry["path"], path))


def walk(model_type, config, model):
    """Kept modules, plus rotary-named ones outside text models that no table explains."""
    modules = dict(model.named_modules())
    found, unclassified = [], []
    for path, module in modules.items():
        name = type(module).__name__
        if not NAME_RE.search(name):
            continue
        if kept(name, path):
            key, cfg = config_key(model, modules, path)
            entry = KEEP[name]
            found.append({"path": path, "class": name, "config_key": key, "rope_type": rope_type_of(cfg),
                          "apply": entry["apply"], "modality": entry["modality"], "form": entry["form"],
                          "cls": type(module)})
            if entry["note"]:
                found[-1]["note"] = entry["note"]
        elif (re.search(r"Rotary|Rope|RoPE", name) and name not in EXCLUDED
              and "text" not in modalities_of(model, modules, path)):
            unclassified.append({"model_type": model_type, "path": path, "class": name})
    return found, unclassified


def keep_classes_in_file(config_cls):
    """KEEP classes defined in the modeling file next to a config class (hint for unbuildable)."""
    mod_name = config_cls.__module__.replace(".configuration_", ".modeling_")
    try:
        module = __import__(mod_name, fromlist=["_"])
    except Exception:  # noqa: BLE001
        return []
    return sorted(n for n in KEEP if isinstance(getattr(module, n, None), type)
                  and getattr(module, n).__module__ == mod_name)


def survey():
    """Walk every model_type's meta-built model: families, unbuildable, unclassified, seen classes."""
    families, unbuildable, unclassified = [], [], []
    seen_classes = set()
    for model_type in sorted(CONFIG_MAPPING.keys()):
        try:
            config, model = build_meta(model_type)
        except RuntimeError as exc:
            stage, error = exc.args
            entry = {"model_type": model_type, "stage": stage, "error": error}
            # A whole model that fails to build may hide an encoder rotary: name the candidates.
            hint = keep_classes_in_file(CONFIG_MAPPING[model_type]) if stage != "model_class" else []
            if hint:
                entry["rotary_classes_in_modeling_file"] = hint
            unbuildable.append(entry)
            continue
        seen_classes.update(type(m).__name__ for m in model.modules())
        found, odd = walk(model_type, config, model)
        unclassified += odd
        if found:
            families.append(family_entry(model_type, config, model, found))
        del model
    return families, unbuildable, unclassified, seen_classes


def family_entry(model_type, config, model, found):
    keys = sorted({m["config_key"] or "" for m in found})
    return {
        "model_type": model_type,
        "config_class": type(config).__name__,
        "model_class": type(model).__name__,
        # the sub-config the encoder's rotary is built from (null: the top-level config)
        "config_key": (keys[0] or None) if len(keys) == 1 else [k or None for k in keys],
        "modules": [{k: m[k] for k in ("path", "class", "config_key", "rope_type", "apply")} for m in found],
        "form": {m["class"]: m["form"] for m in found},
        "modalities": sorted({m["modality"] for m in found}),
        "notes": sorted({m["note"] for m in found if "note" in m}),
        "config": json_safe(CONFIG_MAPPING[model_type]().to_dict()),
        "_classes": {m["class"]: m["cls"] for m in found},  # for part 2; not written
    }


def json_safe(value):
    """Drop what JSON cannot hold (non-finite floats, dtypes, objects) from a to_dict() tree; sort keys."""
    if isinstance(value, dict):
        out = {}
        # sorted: some configs fill nested dicts in hash order, which would make reruns differ
        for k, v in sorted(value.items(), key=lambda kv: str(kv[0])):
            v = json_safe(v)
            if v is not _DROP:
                out[str(k)] = v
        return out
    if isinstance(value, (list, tuple)):
        return [v for v in (json_safe(v) for v in value) if v is not _DROP]
    if isinstance(value, float) and not math.isfinite(value):
        return _DROP
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return _DROP


_DROP = object()


def not_instantiated(seen_classes):
    """KEEP classes and encoder-looking rotary classes that no default-config model builds."""
    base = os.path.dirname(transformers.models.__file__)
    pattern = re.compile(r"^class (\w*(?:Rotary|Rope|RoPE)\w*)\(", re.M)
    encoderish = re.compile(r"Vision|Audio|Video|Speech|Conformer|ViT|Vit|DiT|Encoder|Image|Protein|SaProt|Positional")
    out = []
    for folder in sorted(os.listdir(base)):
        path = os.path.join(base, folder, f"modeling_{folder}.py")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            for name in pattern.findall(f.read()):
                if name not in seen_classes and (name in KEEP or encoderish.search(name)):
                    out.append({"class": name, "module": f"transformers.models.{folder}.modeling_{folder}"})
    return out


# ---------------------------------------------------------------------------------------------
# Part 2: golden rotations for the axial modules. Positions are made by each family's own code.
# ---------------------------------------------------------------------------------------------

def helper_positions(merge, grid=GRID, include_temporal=False):
    """The vision models' shared position-id helper: (N, 2) = (h, w) in merge-block order."""
    pos = get_vision_position_ids(torch.tensor([grid]), merge, include_temporal=include_temporal)
    extra = ", include_temporal=True" if include_temporal else ""
    return pos, (f"transformers.vision_utils.get_vision_position_ids(grid_thw=[{list(grid)}], "
                 f"spatial_merge_size={merge}{extra})")


def pos_config_merge(sub):
    return (*helper_positions(sub.spatial_merge_size), ["h", "w"])


def pos_merge_one(sub):
    # Kimi-K2.5, Step3p7 and PaddleOCR-VL pass spatial_merge_size=1 themselves; VideoLLaMA3 takes
    # merge_sizes from its image processor, whose default for images is 1.
    return (*helper_positions(1), ["h", "w"])


def pos_row_major(sub):
    # Pixtral and MLCD build (h, w) inline with meshgrid(indexing="ij"): row-major order.
    h, w = torch.meshgrid(torch.arange(GRID[1]), torch.arange(GRID[2]), indexing="ij")
    source = "meshgrid(arange(48), arange(64), indexing='ij') stacked as (h, w), as the vision model does"
    return torch.stack([h.flatten(), w.flatten()], dim=-1), source, ["h", "w"]


def pos_gemma4(sub):
    # Gemma4ImageProcessor: meshgrid(arange(patch_width), arange(patch_height), indexing="xy")
    # stacked as (x, y) = (column, row), row-major, batch dim in front: (1, N, 2).
    x, y = torch.meshgrid(torch.arange(GRID[2]), torch.arange(GRID[1]), indexing="xy")
    pos = torch.stack([x, y], dim=-1).reshape(1, -1, 2)
    source = "Gemma4ImageProcessor's meshgrid(arange(64), arange(48), indexing='xy') as (x, y), shape (1, N, 2)"
    return pos, source, ["w", "h"]


def pos_inkling2(sub):
    # Inkling2VisionModel.forward: helper over the patch grid, +1, a class token at (0, 0) in front.
    pos, src = helper_positions(sub.spatial_merge_size)
    pos = torch.cat([torch.zeros(1, 2, dtype=pos.dtype), pos + 1])
    return pos, f"class token (0, 0), then {src} + 1", ["h", "w"]


def pos_muse(sub):
    # MuseGlimmer/MuseSpark vision: helper with spatial_merge_size=1, flipped to (w, h), +1.
    # (The model then reorders tokens by window_index; a token's angles do not depend on order.)
    pos, src = helper_positions(1)
    return pos.flip(-1) + 1, f"{src}.flip(-1) + 1", ["w", "h"]


def pos_minimax(sub):
    # MiniMax-M3-VL asks the helper for a temporal column; two frames so that t varies.
    pos, src = helper_positions(sub.spatial_merge_size, grid=(2, GRID[1], GRID[2]), include_temporal=True)
    return pos, src, ["t", "h", "w"]


def call_vision(fn, q, cos, sin, pos):
    return fn(q, q.clone(), cos, sin)[0]


def call_mlcd(fn, q, cos, sin, pos):
    # MLCDAttention unsqueezes the batch dim and casts before the apply function.
    return fn(q, q.clone(), cos.unsqueeze(0).float(), sin.unsqueeze(0).float())[0]


def call_pixtral(fn, q, cos, sin, pos):
    return fn(q, q.clone(), cos, sin, unsqueeze_dim=0)[0]


def call_gemma4(fn, q, cos, sin, pos):
    # Gemma4VisionAttention calls it on q alone (and again on k), after q_norm.
    return fn(q, cos, sin, pos)


def spec(positions, layout="N,H,D", call=call_vision, call_text="apply_rotary_pos_emb_vision(q, k, cos, sin)"):
    return {"positions": positions, "layout": layout, "call": call, "call_text": call_text}


QWEN_CASE = spec(pos_config_merge)
CASES = {
    **{name: QWEN_CASE for name in [
        "Qwen2VLVisionRotaryEmbedding", "Qwen2_5_VLVisionRotaryEmbedding", "Qwen3VLVisionRotaryEmbedding",
        "Qwen3VLMoeVisionRotaryEmbedding", "Qwen3_5VisionRotaryEmbedding", "Qwen3_5MoeVisionRotaryEmbedding",
        "Qwen2_5OmniVisionRotaryEmbedding", "Qwen3OmniMoeVisionRotaryEmbedding", "Qwen4ExpVisionRotaryEmbedding",
        "Glm4vVisionRotaryEmbedding", "Glm4vMoeVisionRotaryEmbedding", "Glm5NextVisionRotaryEmbedding",
        "GlmOcrVisionRotaryEmbedding", "Ernie4_5_VLMoeVisionRotaryEmbedding", "Exaone4_5_VisionRotaryEmbedding",
        "CohereCompassVisionRotaryEmbedding", "Dots3NoteVisionRotaryEmbedding", "Lfm3VlVisionRotaryEmbedding"]},
    "PaddleOCRVisionRotaryEmbedding": spec(pos_merge_one),
    "VideoLlama3VisionRotaryEmbedding": spec(pos_merge_one),
    "Kimi_K25VisionRotaryEmbedding": spec(pos_merge_one, layout="1,N,H,D"),
    "Step3p7VisionRotaryEmbedding": spec(pos_merge_one, layout="1,N,H,D"),
    "MuseGlimmerVisionRotaryEmbedding": spec(pos_muse, layout="1,N,H,D"),
    "MuseSparkVisionRotaryEmbedding": spec(pos_muse, layout="1,N,H,D"),
    "Inkling2VisionRotaryEmbedding": spec(pos_inkling2),
    "MiniMaxM3VLVisionRotaryEmbedding": spec(pos_minimax),
    "MLCDRotaryEmbedding": spec(
        pos_row_major, layout="1,N,H,D", call=call_mlcd,
        call_text="apply_rotary_pos_emb_vision(q, k, cos.unsqueeze(0).float(), sin.unsqueeze(0).float())"),
    "PixtralVisionRotaryEmbedding": spec(pos_row_major, layout="1,H,N,D", call=call_pixtral,
                                         call_text="apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=0)"),
    "Gemma4VisionRotaryEmbedding": spec(pos_gemma4, layout="1,N,H,D", call=call_gemma4,
                                        call_text="apply_multidimensional_rope(q, cos, sin, position_ids)"),
}


def to_layout(q, layout):
    """q is [N, heads, hd]; return it the way the consuming attention holds it."""
    if layout == "1,N,H,D":
        return q[None]
    if layout == "1,H,N,D":
        return q.permute(1, 0, 2)[None]
    return q


def from_layout(x, layout):
    if layout == "1,N,H,D":
        return x[0]
    if layout == "1,H,N,D":
        return x[0].permute(1, 0, 2)
    return x


def sub_config_of(model_type, key):
    cfg = CONFIG_MAPPING[model_type]()
    for name in (key.split(".") if key else []):
        cfg = getattr(cfg, name)
    return cfg


def head_dim_of(sub):
    # What compute_axial_rope_parameters uses (Qwen2-VL's vision config calls its width embed_dim).
    width = sub.embed_dim if type(sub).__name__ == "Qwen2VLVisionConfig" else sub.hidden_size
    return getattr(sub, "head_dim", None) or width // sub.num_attention_heads


def sample_indices(n):
    """N_SAMPLE indices spread evenly over [0, n), first and last included."""
    return sorted({round(i * (n - 1) / (N_SAMPLE - 1)) for i in range(N_SAMPLE)})


def f32(x):
    """float32 tensor -> nested lists of the shortest decimals that read back to the same float32."""
    arr = x.detach().to(torch.float32).cpu().numpy()
    # numpy prints float32 as the shortest round-trip decimal; float() keeps that decimal in repr.
    out = np.vectorize(float, otypes=[np.float64])(arr.astype(str))
    assert np.array_equal(out.astype(np.float32), arr)
    return out.tolist()


def make_case(model_type, key, module_cls):
    """Build the module on the CPU from the default sub-config and rotate q as the attention does."""
    name = module_cls.__name__
    case_spec = CASES[name]
    sub = sub_config_of(model_type, key)
    apply_fn = getattr(sys.modules[module_cls.__module__], KEEP[name]["apply"])
    torch.manual_seed(0)
    module = module_cls(sub)
    pos, source, row_names = case_spec["positions"](sub)
    n = pos.shape[-2]
    head_dim, heads = head_dim_of(sub), min(sub.num_attention_heads, MAX_HEADS)
    q = torch.round(torch.randn(n, heads, head_dim, dtype=torch.float64), decimals=2).to(torch.float32)
    # The modules read only x.device and x.dtype; the vision towers run in float32 here.
    cos, sin = module(torch.zeros(n, head_dim, dtype=torch.float32), pos)
    q_in = to_layout(q, case_spec["layout"])
    out = from_layout(case_spec["call"](apply_fn, q_in, cos, sin, pos), case_spec["layout"])
    assert out.dtype == torch.float32 and out.shape == q.shape, (name, out.dtype, out.shape)
    cos, sin = cos.reshape(n, -1), sin.reshape(n, -1)
    # Only MiniMax-M3-VL rotates part of the head; a mismatch elsewhere means a wrong head_dim.
    assert cos.shape[-1] == head_dim or (name.startswith("MiniMax") and cos.shape[-1] < head_dim), name
    idx = sample_indices(n)
    rows = pos.reshape(n, -1).T[:, idx]
    return {
        "model_type": model_type, "module": name, "apply": KEEP[name]["apply"], "config_key": key,
        "head_dim": head_dim, "heads": heads, "config_heads": sub.num_attention_heads,
        "rotary_dim": cos.shape[-1], "q_layout": case_spec["layout"], "call": case_spec["call_text"],
        "rope_theta": float(sub.rope_parameters["rope_theta"]), "attention_scaling": module.attention_scaling,
        "position_source": source, "position_shape": list(pos.shape), "position_row_names": row_names,
        "num_tokens": n, "token_index": idx, "position_rows": rows.tolist(),
        "inv_freq": f32(module.inv_freq), "cos": f32(cos[idx]), "sin": f32(sin[idx]),
        "q": f32(q[idx]), "out": f32(out[idx]),
    }


SAME_AS_IGNORES = ("model_type", "module", "config_key", "position_source")


def build_cases(families):
    """One case per family with an axial module; repeats of an earlier case become `same_as`."""
    cases, signatures = [], {}
    # Families named after the module's own modeling file go first, so that they hold the data
    # and the reusers (colqwen2, cosmos3_omni, sub-model types, ...) point to them.
    def own_file_first(family):
        files = {cls.__module__.split(".")[-2] for cls in family["_classes"].values()}
        return (family["model_type"] not in files, family["model_type"])

    for family in sorted(families, key=own_file_first):
        for name, module_cls in family.pop("_classes").items():
            if name not in CASES:
                continue
            key = next(m["config_key"] for m in family["modules"] if m["class"] == name)
            case = make_case(family["model_type"], key, module_cls)
            # Same numbers (class code, config values, positions) as an earlier case: point to it.
            signature = json.dumps({k: v for k, v in case.items() if k not in SAME_AS_IGNORES}, sort_keys=True)
            if signature in signatures:
                cases.append({"model_type": family["model_type"], "module": name, "config_key": key,
                              "same_as": signatures[signature]})
            else:
                signatures[signature] = family["model_type"]
                cases.append(case)
            family["case"] = cases[-1].get("same_as", family["model_type"])
    return sorted(cases, key=lambda c: c["model_type"])


def dump(value, depth=0, indent_depth=3):
    """JSON with one line per entry down to `indent_depth` levels, compact below (keeps it small)."""
    flat = isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value)
    if depth >= indent_depth or not isinstance(value, (dict, list)) or not value or flat:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    pad, inner = " " * depth, " " * (depth + 1)
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k)}: {dump(v, depth + 1, indent_depth)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    items = [inner + dump(v, depth + 1, indent_depth) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + pad + "]"


def main():
    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    families, unbuildable, unclassified, seen_classes = survey()
    cases = build_cases(families)
    for family in families:
        family.setdefault("case", None)
    out = {
        "transformers": transformers.__version__, "torch": torch.__version__,
        "python": platform.python_version(), "script": "tests/data/hf/vision_rope.py",
        "grid_thw": list(GRID), "n_sample": N_SAMPLE, "max_heads": MAX_HEADS,
        "float_format": "float32 values as the shortest decimal that reads back to the same float32",
        "families": families,
        "cases": cases,
        "unbuildable": unbuildable,
        "excluded": [{"class": k, "why": v} for k, v in sorted(EXCLUDED.items())],
        "unclassified": unclassified,
        "not_instantiated": not_instantiated(seen_classes),
    }
    with open(OUT, "w") as f:
        f.write(dump(out) + "\n")
    print(f"{len(families)} families, {sum('same_as' not in c for c in cases)} cases "
          f"(+{sum('same_as' in c for c in cases)} same_as), {len(unbuildable)} unbuildable, "
          f"{len(unclassified)} unclassified -> {OUT} ({os.path.getsize(OUT)} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
