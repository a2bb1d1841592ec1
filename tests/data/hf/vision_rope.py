"""Writes vision_rope.json: which transformers families have a rotary position module outside the
text decoder (vision, video, audio and other non-text encoders), and golden rotations for the
"axial" vision ones and the 1-D audio / codec / protein / time-series / action ones, all computed
by transformers' own modeling code.

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
                holding its numbers, or null; a list, one per module, when those differ),
                config (CONFIG_MAPPING[mt]().to_dict(), JSON-safe). A sub-model built from a config
                that a property derives (Mimi's encoder_config) gets that property's key.
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
module's own order), q and out ([token][head][lane]), inv_freq (cos and sin are not kept: q and
out carry them, and the crate's package stays small),
rope_theta, head_dim, heads (min(config heads, MAX_HEADS)), path (the module's path in the model).
A case whose numbers equal an earlier one's (same code, config values and positions) is written as
{model_type, module, config_key, path, [form,] same_as, same_as_path}: the numbers are those of
the case with model_type == same_as and path == same_as_path.
The 2-D modules over a fixed grid (Llama 4's vision table, the SAM 2 / SAM 3 tracker / EdgeTAM
memory attention, the SAM 3 ViT layers) are Part 2c.

Part 2b, the 1-D cases: one per module of a family whose class is in `ONE_D` (audio encoders,
codec transformers, protein encoders, TimesFM 2.5, PI0's action expert, the Qwen2.5-Omni token2wav
DiT). The module is built on the CPU from the sub-config its model passes it (`config_key`; the
Moonshine encoder after its layers' config.update), fed the positions the encoder's forward makes
for N = min(3072, the encoder's maximum) tokens (usually arange(N); TimesFM's shift by the padded
patches, PI0's offset after the VLM prefix, NeuCodec/Xcodec2's head index), and the family's apply
function is called as the attention calls it on a random q [1, heads, N, head_dim] with k = q
(CLVP: v = q too; Qwen2.5-Omni DiT: head 0 after deinterleave_head_dim). Recorded as for the axial
cases, without cos/sin, plus rotary_dim, attention_scaling, form (one sentence: pairs, rotated
lanes, theta, scaling, position source), position_axis ("token", or "head" for NeuCodec/Xcodec2:
all heads and the first and last frame, position_rows [row][head]), position_row_names ["p"]. The
script checks each against a float64 rotation of the form it states. MusicFlamingo's time
embedding turns hidden states, not q/k: no case, its family form says so.

Part 2c, the fixed-grid 2-D cases: one per module whose class is in `FIXED`, all of them rotating
interleaved (2i, 2i+1) pairs: pair j < head_dim/4 by w*f_j, pair head_dim/4 + j by h*f_j,
f_j = theta^(-4j/head_dim). The module is built on the CPU from the sub-config its model passes it
and fed the positions the model itself holds: Llama 4's vision rotary derives its complex freqs_ci
table from the fixed (image_size/patch_size)^2 grid plus a trailing CLS row (positions recorded as
the module derives them: (w, h) = (column+1, row+1), the CLS row (0, 0), its angle zeroed);
the SAM 2 video / SAM 3 tracker video / EdgeTAM video memory attention feeds its rotary the
position_ids buffer that its precompute_positions makes over memory_attention_rope_feat_sizes
((N, 2) = (w, h) integers; EdgeTAM: the self-attention's, not the cross-attention's key grid); each
SAM 3 ViT layer feeds its own precompute_positions(config, window_size) buffer, (w, h) integers over
one 24 x 24 window for the windowed layers and, for the global layers (global_attn_indexes), the
full image_size/patch_size grid scaled by window_size/grid: fractional float32 positions, recorded
as the buffer holds them. The family's own apply function is called as the (self-)attention calls
it, on a random q with k = q: Llama 4 [1, N, heads, hd] with vision_apply_rotary_emb(q, k, freqs_ci),
the SAM ones [1, heads, N, hd]. Every module gets an entry (each of the 32 SAM 3 ViT layers of
every family), the repeats as `same_as`. Recorded as for the 1-D cases (no cos/sin), plus pairing,
with position_row_names ["w", "h"] and a `form` sentence; the script checks each against a float64
rotation of the form it states. The tokens are sample_indices(N), except in SAM 3's 24 x 24 window,
where that even spread (step 25) falls on the diagonal (w == h would hide an axis swap): its
interior tokens move one column right.

Part 2d, the period cases: one per module whose class is in `PERIODS` (DINOv3's ViT, inside CHMv2
too, and Sapiens2), whose angles are 2*pi*c*f over patch-centre coordinates c in [-1, 1]: a
frequency of one revolution a coordinate and more than a whole one at the coordinates' ends. The
module is built on the CPU from the sub-config its model passes it and called on a 14 x 20 patch
image (not square, so that an axis swap shows); the coordinates recorded are the model's own
get_patches_center_coordinates (float32); the attention's apply_rotary_pos_emb is called on a
random q [1, heads, prefix + 280, hd] with k = q, which leaves the prefix tokens (CLS and
num_register_tokens registers) unrotated: they are recorded at coordinates (0, 0), where the
crate's angle is exactly 0. Recorded as for the fixed cases, with position_row_names ["h", "w"],
the prefix tokens and the first patch always among the sampled tokens.

Part 2e, the whole-width case: EfficientLoFTR's module (`HIDDEN`), whose attention rotates the whole
hidden_size before the head split: built on the CPU from its config, called on a coarse feature map
that its q_aggregation makes 14 x 20, its cos and sin reshaped as the model reshapes them, and the
attention's apply_rotary_pos_emb(q, q, cos, sin, unsqueeze_dim=2) called on a random q [1, N, 1,
hidden_size]. Recorded as the fixed cases, heads 1, head_dim hidden_size, with position_row_names
["h", "w"] at (row + 1, column + 1), checked against a float64 rotation of the form it states.

Part 2f, V-JEPA 2 (`VJEPA`): its attention rotates q and k itself (rotate_queries_or_keys, cos and
sin tiled [omega | omega] but applied to interleaved pairs). Each of the encoder's and the
predictor's attentions is built on the CPU at the width and heads its stack passes it, fed its own
get_position_ids over the whole clip (masks None: (frame, row, column) of each token index), and
its apply_rotary_embeddings called on a random q [1, heads, N, hd]. Recorded as the fixed cases,
with position_row_names ["t", "h", "w"], checked against a float64 rotation of the form it states;
the repeats (one attention a layer) as `same_as`.

Part 2g, timm's PE ViT (`TIMM_CAT`), the frame encoder of PE Video and PE Audio-Video: a TimmWrapper
config names its architecture (vit_pe_core_large_patch14_336 by default). The timm model is built on
the CPU as TimmWrapperModel builds it, its RotaryEmbeddingCat's own embedding taken at the model's
grid, and q [1, heads, prefix + N, hd] rotated as its AttentionRope rotates it (the prefix tokens
kept). Recorded as the fixed cases, with position_row_names ["h", "w"] from timm's own grid (the
prefix tokens at (0, 0)) and the architecture.

Floats: inputs and outputs are float32; each is written as the shortest decimal that reads back
to the same float32 (parse as f64, then cast to f32). q is drawn with torch.randn in float64 after
torch.manual_seed(0) (reseeded per case), rounded to 2 decimals and cast to float32: short
decimals keep the file small, and every value is still exactly what was passed in.

Rerun (about a minute on 2 CPU cores, deterministic, no Hub access needed):

    /path/to/python tests/data/hf/vision_rope.py

It needs transformers 5.24.0 and torch 2.x (the CPU is enough); README.md in this folder says how
the environment was made. Other transformers versions will find other families.
"""

import copy
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
HEAD_1D = ("1-D RoPE over the attention HEAD index, not the frame: position_ids = "
           "arange(num_attention_heads), cos/sin = cat(h*f, h*f) unsqueezed at dim 2, so head h turns by "
           "h*f at every frame, applied half-split (rotate_half); kept from the original implementation")
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
    "NeuCodecRotaryEmbedding": info("apply_rotary_pos_emb", HEAD_1D, "audio",
                                    note="unsure: acoustic decoder of the codec, not an encoder"),
    "Xcodec2RotaryEmbedding": info("apply_rotary_pos_emb", HEAD_1D, "audio",
                                   note="unsure: acoustic decoder of the codec, not an encoder"),
    "PeAudioEncoderRotaryEmbedding": info("apply_rotary_pos_emb", PE_1D, "audio"),
    "PeVideoEncoderRotaryEmbedding": info("apply_rotary_pos_emb", PE_1D, "video"),
    "PeAudioVideoEncoderRotaryEmbedding": info("apply_rotary_pos_emb", PE_1D, "audio"),
    # PE Video's frame encoder is timm's PE ViT (TimmWrapper, `architecture` vit_pe_*): its rope is
    # built from timm's model definition, which config.json names but does not hold.
    "RotaryEmbeddingCat": info(
        "apply_rot_embed_cat",
        "timm's axial 2-D RoPE of the PE ViT named by the TimmWrapper config's architecture: "
        "sin/cos bands over the patch grid (rope_grid_offset 1, 'xy' indexing, ref_feat_shape), "
        "applied to interleaved pairs after the class token",
        "video", path=r"timm_model\.rope$"),
    "Qwen2_5OmniDiTRotaryEmbedding": info(
        "apply_rotary_pos_emb",
        AUDIO_1D + "; applied only to head 0, after deinterleave_head_dim (the checkpoint is interleaved), "
        "and written back in that deinterleaved lane order",
        "audio", note="token2wav DiT over mel frames (speech synthesis), not an encoder"),
    "MusicFlamingoRotaryEmbedding": info(
        "apply_rotary_time_emb",
        "rotary time embedding on the audio encoder's output hidden states (not q/k): axial over "
        "(window index, time index), both scaled by -2*pi*timestamp seconds, interleaved pairs, "
        "computed in float64; no case: it turns whole hidden states by audio timestamps after the "
        "encoder, not a q/k in an attention, so it does not fit the 1-D cases",
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
    "AttentionRope": "consumer attention (timm's Eva): applies the model's rope embedding, makes none",
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
    # Not held anywhere: a sub-model built from a config that a property derives afresh on each
    # read (Mimi's and PocketTTS's encoder_config / decoder_config). Find an equal one that way.
    stack = [(model.config, None, 0)]
    while stack and target is not None:
        cfg, key, depth = stack.pop()
        if key is not None and type(cfg) is type(target) and cfg.to_dict() == target.to_dict():
            return key, target
        if depth < 4:
            for name, value in sorted(sub_configs(cfg), key=lambda kv: kv[0], reverse=True):
                stack.append((value, name if key is None else f"{key}.{name}", depth + 1))
    return None, target


def sub_configs(cfg):
    """(name, config) for the sub-configs a config holds or derives through a property."""
    out = [(n, v) for n, v in vars(cfg).items() if isinstance(v, PreTrainedConfig)]
    for name in dir(type(cfg)):
        if isinstance(getattr(type(cfg), name, None), property) and name not in vars(cfg):
            try:
                value = getattr(cfg, name)
            except Exception:  # noqa: BLE001 - a property that refuses on this config
                continue
            if isinstance(value, PreTrainedConfig) and value is not cfg:
                out.append((name, value))
    return out


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


def make_case(model_type, key, module_cls, path):
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
        "path": path, "head_dim": head_dim, "heads": heads, "config_heads": sub.num_attention_heads,
        "rotary_dim": cos.shape[-1], "q_layout": case_spec["layout"], "call": case_spec["call_text"],
        "rope_theta": float(sub.rope_parameters["rope_theta"]), "attention_scaling": module.attention_scaling,
        "position_source": source, "position_shape": list(pos.shape), "position_row_names": row_names,
        "num_tokens": n, "token_index": idx, "position_rows": rows.tolist(),
        "inv_freq": f32(module.inv_freq),
        "q": f32(q[idx]), "out": f32(out[idx]),
    }


# ---------------------------------------------------------------------------------------------
# Part 2b: golden rotations for the 1-D modules (audio, codec, protein, time-series, action).
# ---------------------------------------------------------------------------------------------

N_1D = 3072  # tokens of a 1-D case (as many as the vision grid), or the encoder's maximum if less


def max_positions(sub, top):
    return getattr(sub, "max_position_embeddings", None), "max_position_embeddings"


def n_clvp(sub, top):
    # The speech encoder reads the speech tokens the decoder generates (at most its 608 positions).
    return top.decoder_config.max_position_embeddings, "decoder_config.max_position_embeddings (speech tokens)"


def n_timesfm(sub, top):
    return sub.context_length // sub.patch_length, "context_length // patch_length patches"


def n_pi0(sub, top):
    return 1 + top.chunk_size, "1 state token + chunk_size action tokens"


def pos_arange(n, sub):
    return torch.arange(n)[None], "torch.arange(N)[None] (the encoder's own frame / token index)"


def pos_arange_cache(n, sub):
    return torch.arange(n)[None], "torch.arange(N)[None] + past_seen_tokens (0: no cache)"


def pos_chunked(n, sub):
    return torch.arange(n)[None], ("torch.arange(N)[None] (the audio model's default; the streaming "
                                   "diarizer passes arange(chunk window) again for every chunk)")


TIMESFM_MASKED = 137  # a 12000-step series front-padded to context_length 16384: 4384 steps = 137 patches


def pos_timesfm(n, sub):
    # TimesFm2_5Model.forward: arange(patches) - num_masked, num_masked = front-padded patches.
    return torch.arange(n)[None] - TIMESFM_MASKED, (
        f"torch.arange(N)[None] - num_masked, num_masked = {TIMESFM_MASKED} (a 12000-step series "
        f"front-padded to context_length {sub.context_length}: {TIMESFM_MASKED} padded patches of "
        f"{sub.patch_length}, whose positions are negative)")


PI0_PREFIX = 272  # one 256-token camera image and a 16-token prompt (bos, text, newline), all valid


def pos_pi0(n, sub):
    # PI0Model.forward: (cumsum(cat(prefix mask, ones)) - 1)[:, -N:], i.e. the action block follows
    # the valid VLM prefix.
    return PI0_PREFIX + torch.arange(n)[None], (
        f"(cumsum(cat(attention_mask, ones(N))) - 1)[:, -N:] = {PI0_PREFIX} + torch.arange(N)[None]: the "
        f"action expert's tokens follow a valid VLM prefix of {PI0_PREFIX} tokens (one 256-token camera "
        "image and a 16-token prompt)")


def pos_heads(n, sub):
    # NeuCodec/Xcodec2 decoders: arange(num_attention_heads), broadcast over the frames.
    return torch.arange(sub.num_attention_heads)[None], (
        "torch.arange(num_attention_heads)[None]: one position per head (not per frame), broadcast over "
        "every frame by unsqueeze_dim=2")


def call_std(fn, module, q, x, pos):
    cos, sin = module(x, pos)
    return fn(q, q.clone(), cos, sin)[0]


def call_heads(fn, module, q, x, pos):
    cos, sin = module(x, pos)
    return fn(q, q.clone(), cos, sin, unsqueeze_dim=2)[0]


def call_clvp(fn, module, q, x, pos):
    # ClvpSelfAttention: the module returns angles (1, N, dim); the attention takes cos/sin, splits
    # off the first dim lanes of q, k and v, rotates them with position_ids and concatenates.
    angles = module(x)
    dim = angles.shape[-1]
    cos, sin = angles.cos().squeeze(0), angles.sin().squeeze(0)
    q_rot, q_pass = q[..., :dim], q[..., dim:]
    k_rot, v_rot = q_rot.clone(), q_rot.clone()
    q_rot, _, _ = fn(q_rot, k_rot, v_rot, cos, sin, pos)
    return torch.cat((q_rot, q_pass), dim=-1)


def call_qwen_dit(fn, module, q, x, pos):
    # DiTAttention: head 0 only, deinterleaved first, written back in that order.
    deinterleave = sys.modules[type(module).__module__].deinterleave_head_dim
    cos, sin = module(x, pos)
    query, key = q.clone(), q.clone()
    query[:, :1], key[:, :1] = fn(deinterleave(query[:, :1]), deinterleave(key[:, :1]), cos, sin)
    return query


def prepare_moonshine(sub):
    # MoonshineEncoder builds its rotary after its layers, whose attention has just run
    # config.update(num_attention_heads=encoder heads, num_key_value_heads=encoder kv heads).
    sub = copy.deepcopy(sub)
    sub.update({"num_attention_heads": sub.encoder_num_attention_heads,
                "num_key_value_heads": sub.encoder_num_key_value_heads})
    return sub


def one_d(pairing, form, n=max_positions, positions=pos_arange, call=call_std,
          call_text="apply_rotary_pos_emb(q, k, cos, sin)", prepare=None, axis="token", theta=None):
    return {"pairing": pairing, "form": form, "n": n, "positions": positions, "call": call,
            "call_text": call_text, "prepare": prepare, "axis": axis, "theta": theta}


HALF = "rotate_half pairs lane i with lane i + rotary_dim/2"
PAIRING = {"half": "half-split", "interleaved": "interleaved (2i, 2i+1)",
           "deinterleaved": "interleaved (2i, 2i+1) read, half-split written"}
ONE_D = {
    **{name: one_d("half", HALF) for name in [
        "GlmAsrRotaryEmbedding", "LasrEncoderRotaryEmbedding", "Nemotron3_5TranscribeRotaryEmbedding",
        "Dots3NoteAudioRotaryEmbedding", "EsmcRotaryEmbedding"]},
    **{name: one_d("half", HALF, positions=pos_arange_cache)
       for name in ["MimiRotaryEmbedding", "PocketTTSAudioTokenizerRotaryEmbedding"]},
    "Nemotron3DiarizationRotaryEmbedding": one_d("half", HALF, positions=pos_chunked),
    "VoxtralRealtimeRotaryEmbedding": one_d("half", HALF, positions=pos_arange_cache),
    "EvollaSaProtRotaryEmbedding": one_d(
        "half", HALF + "; the apply function rotates in float32 and casts back to q's dtype"),
    "TimesFm2_5RotaryEmbedding": one_d("half", HALF, n=n_timesfm, positions=pos_timesfm),
    "GemmaRotaryEmbedding": one_d("half", HALF, n=n_pi0, positions=pos_pi0),
    "MoonshineRotaryEmbedding": one_d(
        "interleaved",
        "the apply function keeps the first half of cos/sin, repeat_interleaves it by 2 and "
        "rotates even/odd lanes (Moonshine's rotate_half)",
        prepare=prepare_moonshine),
    "PeAudioEncoderRotaryEmbedding": one_d(
        "interleaved",
        "the pairs turn as 2x2 matrices [[cos, -sin], [sin, cos]] built by stack_freqs from the "
        "first half of cos/sin; the class token is position 0"),
    **{name: one_d(
        "interleaved",
        "the pairs turn as 2x2 matrices [[cos, -sin], [sin, cos]] built by stack_freqs from the "
        "first half of cos/sin; the class token is position 0")
       for name in ("PeVideoEncoderRotaryEmbedding", "PeAudioVideoEncoderRotaryEmbedding")},
    "ClvpRotaryPositionalEmbedding": one_d(
        "half",
        HALF + "; the module returns the angles cat(t*f, t*f) (no cos/sin, no attention_scaling), "
        "dim = max(projection_dim // (2*heads), 32), theta fixed at 10000; the attention rotates the "
        "first dim lanes of q, k and v alike (q recorded)",
        n=n_clvp, call=call_clvp, theta=10000.0,
        call_text="apply_rotary_pos_emb(q[..., :dim], k[..., :dim], v[..., :dim], angles.cos().squeeze(0), "
                  "angles.sin().squeeze(0), position_ids), then cat with q[..., dim:]"),
    "Qwen2_5OmniDiTRotaryEmbedding": one_d(
        "deinterleaved",
        "only head 0 turns (heads 1.. pass through); its lanes are read as interleaved pairs "
        "(2i, 2i+1) by deinterleave_head_dim, turned half-split and written back in the "
        "deinterleaved order: out[i] = q[2i] cos - q[2i+1] sin, out[i + hd/2] = q[2i+1] cos + q[2i] sin "
        "(q and k alike, so q.k equals the interleaved rotation's)",
        call=call_qwen_dit,
        call_text="query[:, :1], key[:, :1] = apply_rotary_pos_emb(deinterleave_head_dim(query[:, :1]), "
                  "deinterleave_head_dim(key[:, :1]), cos, sin)"),
    **{name: one_d(
        "half",
        HALF + "; the position is the head index, not the frame: head h turns by h*f at every frame "
        "(position_ids = arange(num_attention_heads), cos/sin unsqueezed at dim 2); all heads and two "
        "frames (the first and last) recorded, position_rows is [row][head]",
        positions=pos_heads, call=call_heads, axis="head",
        call_text="apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=2)")
       for name in ["NeuCodecRotaryEmbedding", "Xcodec2RotaryEmbedding"]},
}
# No case: MusicFlamingoRotaryEmbedding turns the audio encoder's output hidden states by timestamp
# (apply_rotary_time_emb, axial over window and time), not a q/k in an attention; its form says so.


def rotate_reference(q, pos, inv_freq, rotary_dim, pairing, scaling, per_head=False):
    """float64 rotation of q [N, H, D] by angles pos [N] (or [H], per head) x inv_freq, to check the call."""
    q = q.double()
    angles = pos.double()[..., None] * inv_freq.double()  # [N, half] or [H, half]
    cos, sin = angles.cos() * scaling, angles.sin() * scaling
    cos, sin = (cos[None], sin[None]) if per_head else (cos[:, None], sin[:, None])
    half, out = rotary_dim // 2, q.clone()
    if pairing == "half":
        a, b = q[..., :half], q[..., half:rotary_dim]
        out[..., :half], out[..., half:rotary_dim] = a * cos - b * sin, b * cos + a * sin
    elif pairing == "interleaved":
        a, b = q[..., 0:rotary_dim:2], q[..., 1:rotary_dim:2]
        out[..., 0:rotary_dim:2], out[..., 1:rotary_dim:2] = a * cos - b * sin, b * cos + a * sin
    else:  # deinterleaved: pairs read interleaved, written half-split
        a, b = q[..., 0:rotary_dim:2], q[..., 1:rotary_dim:2]
        out[..., :half], out[..., half:rotary_dim] = a * cos - b * sin, b * cos + a * sin
    return out


def make_1d_case(model_type, key, module_cls, path):
    """Build the 1-D module on the CPU from the sub-config its model passes and rotate q as the attention does."""
    name = module_cls.__name__
    spec_ = ONE_D[name]
    top = CONFIG_MAPPING[model_type]()
    sub = sub_config_of(model_type, key)
    if spec_["prepare"]:
        sub = spec_["prepare"](sub)
    apply_fn = getattr(sys.modules[module_cls.__module__], KEEP[name]["apply"])
    torch.manual_seed(0)
    module = module_cls(sub)
    limit, limit_name = spec_["n"](sub, top)
    n = min(N_1D, limit) if limit else N_1D
    pos, source = spec_["positions"](n, sub)
    config_heads = sub.num_attention_heads
    head_dim = getattr(sub, "head_dim", None) or sub.hidden_size // config_heads
    heads = config_heads if spec_["axis"] == "head" else min(config_heads, MAX_HEADS)
    q = torch.round(torch.randn(n, heads, head_dim, dtype=torch.float64), decimals=2).to(torch.float32)
    # The modules read x's device and dtype (CLVP its length); the encoders run in float32 here.
    x = torch.zeros(1, n, sub.hidden_size, dtype=torch.float32)
    out = from_layout(spec_["call"](apply_fn, module, to_layout(q, "1,H,N,D"), x, pos), "1,H,N,D")
    assert out.dtype == torch.float32 and out.shape == q.shape, (name, out.dtype, out.shape)
    inv_freq = module.inv_freq
    rotary_dim = 2 * inv_freq.numel()
    scaling = float(getattr(module, "attention_scaling", 1.0))
    if spec_["axis"] == "head":
        idx, rows = [0, n - 1], pos.reshape(-1)[:heads]
        ref = rotate_reference(q, rows, inv_freq, rotary_dim, spec_["pairing"], scaling, per_head=True)
    else:
        idx = sample_indices(n)
        ref = rotate_reference(q, pos.reshape(-1), inv_freq, rotary_dim, spec_["pairing"], scaling)
        rows = pos.reshape(-1)[idx]
    if name == "Qwen2_5OmniDiTRotaryEmbedding":  # only head 0 turns
        ref[:, 1:] = q[:, 1:].double()
    err = (out.double() - ref).abs().max().item()
    assert err < 2e-3 * q.abs().max().item(), (name, err)  # f32 angles up to ~3000 rad
    assert torch.equal(out[..., rotary_dim:], q[..., rotary_dim:]) or spec_["pairing"] == "deinterleaved", name
    params = getattr(sub, "rope_parameters", None)
    theta = spec_["theta"] or (params["rope_theta"] if isinstance(params, dict) and "rope_theta" in params
                               else sub.rope_theta)
    lanes = f"all {head_dim} lanes" if rotary_dim == head_dim else f"the first {rotary_dim} of {head_dim} lanes"
    bound = f"min({N_1D}, {limit_name} = {limit})" if limit else f"{N_1D} (no maximum in the config)"
    form = (f"1-D, {PAIRING[spec_['pairing']]} pairs over {lanes}; theta {float(theta):g}; attention_scaling "
            f"{scaling:g}; positions: {source}; N = {n} = {bound}")
    form += f". {spec_['form'][0].upper()}{spec_['form'][1:]}"
    return {
        "model_type": model_type, "module": name, "apply": KEEP[name]["apply"], "config_key": key,
        "path": path, "head_dim": head_dim, "heads": heads, "config_heads": config_heads,
        "rotary_dim": rotary_dim, "q_layout": "1,H,N,D", "call": spec_["call_text"],
        "rope_theta": float(theta), "attention_scaling": scaling, "form": form,
        "position_source": source, "position_shape": list(pos.shape), "position_axis": spec_["axis"],
        "position_row_names": ["p"], "num_tokens": n, "token_index": idx, "position_rows": [rows.tolist()],
        "inv_freq": f32(inv_freq), "q": f32(q[idx]), "out": f32(out[idx]),
    }


# ---------------------------------------------------------------------------------------------
# Part 2c: golden rotations for the 2-D modules over a fixed grid (Llama 4 vision, the SAM 2 /
# SAM 3 tracker / EdgeTAM video memory attention, the SAM 3 ViT layers). Positions are the ones
# the model itself holds (its buffers, or the table's own derivation).
# ---------------------------------------------------------------------------------------------

def fixed_llama4_positions(modeling, sub, path):
    # Llama4VisionRotaryEmbedding._compute_freqs_ci: img_idx = arange(idx^2) plus a CLS row whose
    # last entry is set to -2; x = img_idx % idx, y = img_idx // idx, angles (x + 1)*f and (y + 1)*f,
    # then masked_fill(img_idx < 0, 0) zeroes the CLS row. Here (w, h) = (x + 1, y + 1), CLS (0, 0).
    idx = sub.image_size // sub.patch_size
    img_idx = torch.arange(idx**2)
    img_idx = torch.cat([img_idx, torch.tensor([-2])])
    w = torch.where(img_idx < 0, 0, img_idx % idx + 1)
    h = torch.where(img_idx < 0, 0, img_idx // idx + 1)
    source = (f"Llama4VisionRotaryEmbedding._compute_freqs_ci over the fixed {idx} x {idx} grid "
              f"(image_size {sub.image_size} // patch_size {sub.patch_size}), row-major: (w, h) = "
              f"(img_idx % {idx} + 1, img_idx // {idx} + 1), then the CLS token last (the vision model "
              "appends it after the patches) at (0, 0): its angles are zeroed by masked_fill")
    text = (f"(w, h) = (column+1, row+1) integers 1..{idx} over the fixed {idx} x {idx} grid, row-major, "
            f"then the CLS token last at (0, 0) (angle zeroed)")
    return torch.stack([w, h], dim=-1), source, text


def fixed_memory_positions(attention_class):
    def positions(modeling, sub, path):
        # The memory attention's position_ids buffer: precompute_positions(config) (EdgeTAM: the
        # query grid, is_key=False, which its self-attention uses).
        pos = getattr(modeling, attention_class).precompute_positions(sub)
        fw, fh = sub.memory_attention_rope_feat_sizes
        source = (f"{attention_class}.precompute_positions(config): the position_ids buffer, "
                  f"meshgrid(arange({fh}), arange({fw}), indexing='ij') stacked as (w, h) "
                  "(memory_attention_rope_feat_sizes), row-major")
        text = (f"the memory attention's position_ids buffer (w, h) = (column, row), integers over the "
                f"fixed {fh} x {fw} memory_attention_rope_feat_sizes grid, row-major")
        return pos, source, text
    return positions


def fixed_sam3_vit_positions(modeling, sub, path):
    # Sam3ViTModel: layer i gets window_size = config.window_size unless i is in
    # global_attn_indexes (then 0: global attention over the whole grid); Sam3ViTLayer feeds its
    # rotary its own precompute_positions(config, window_size) buffer.
    layer = int(re.search(r"layers\.(\d+)\.rotary_emb$", path).group(1))
    window = sub.window_size if layer not in sub.global_attn_indexes else 0
    pos = modeling.Sam3ViTLayer.precompute_positions(sub, window)
    if window:
        source = (f"Sam3ViTLayer.precompute_positions(config, window_size={window}) of layer {layer} "
                  f"(windowed): (w, h) over one {window} x {window} window, scaled by window_size/"
                  f"{window} = 1; every window of the partitioned grid gets these positions")
        text = (f"windowed layer: the layer's position_ids buffer (w, h) = (column, row) within one "
                f"{window} x {window} window, float32 integers 0..{window - 1}, the same in every window")
    else:
        g = sub.image_size // sub.patch_size
        source = (f"Sam3ViTLayer.precompute_positions(config, window_size=0) of layer {layer} (global, "
                  f"global_attn_indexes {list(sub.global_attn_indexes)}): (w, h) over the full {g} x {g} "
                  f"grid (image_size {sub.image_size} // patch_size {sub.patch_size}) times "
                  f"window_size/{g} = {sub.window_size}/{g}, float32")
        text = (f"global layer: the layer's position_ids buffer (w, h) = (column, row) * "
                f"{sub.window_size}/{g} over the full {g} x {g} grid, fractional float32 values "
                f"0..{(g - 1) * sub.window_size / g:.4g} in steps of {sub.window_size}/{g}")
    return pos, source, text


def embed_llama4(module, pos, sub):
    # Llama4VisionModel.forward: freqs_ci = self.rotary_embedding(pixel_values) (reads the device).
    return module(torch.zeros(1, sub.num_channels, sub.image_size, sub.image_size))


def embed_cos_sin(module, pos, sub):
    # The memory attention / ViT layer: self.rotary_emb(hidden_states, self.position_ids) (x: device).
    return module(torch.zeros(1, pos.shape[0], 1), pos)


def call_llama4(fn, q, emb):
    # Llama4VisionAttention: q/k [B, N, heads, hd] before the transpose.
    return fn(q, q.clone(), freqs_ci=emb)[0]


def call_sam_memory(fn, q, emb):
    # Sam2VideoRoPEAttention / Sam3TrackerVideoRoPEAttention as self_attn: rope_k_repeat False,
    # num_k_exclude_rope 0.
    cos, sin = emb
    return fn(q, q.clone(), cos, sin, repeat_freqs_k=False, num_k_exclude_rope=0)[0]


def call_cos_sin_kw(fn, q, emb):
    # EdgeTamVideoRoPESelfAttention and Sam3ViTRoPEAttention.
    cos, sin = emb
    return fn(q, q.clone(), cos=cos, sin=sin)[0]


def fixed(positions, embed, layout, call, call_text, apply_text):
    return {"positions": positions, "embed": embed, "layout": layout, "call": call,
            "call_text": call_text, "apply_text": apply_text}


SAM_COS_SIN = "cos/sin = repeat_interleave([w*f | h*f], 2), applied by rotate_pairwise"
FIXED = {
    "Llama4VisionRotaryEmbedding": fixed(
        fixed_llama4_positions, embed_llama4, "1,N,H,D", call_llama4,
        "vision_apply_rotary_emb(q, k, freqs_ci=freqs_ci)",
        "the complex freqs_ci table (N, 1, hd/2) multiplies view_as_complex(q) (pairs (2i, 2i+1) as "
        "real, imaginary)"),
    "Sam2VideoVisionRotaryEmbedding": fixed(
        fixed_memory_positions("Sam2VideoMemoryAttention"), embed_cos_sin, "1,H,N,D", call_sam_memory,
        "apply_rotary_pos_emb_2d(q, k, cos, sin, repeat_freqs_k=False, num_k_exclude_rope=0)", SAM_COS_SIN),
    "Sam3TrackerVideoVisionRotaryEmbedding": fixed(
        fixed_memory_positions("Sam3TrackerVideoMemoryAttention"), embed_cos_sin, "1,H,N,D", call_sam_memory,
        "apply_rotary_pos_emb_2d(q, k, cos, sin, repeat_freqs_k=False, num_k_exclude_rope=0)", SAM_COS_SIN),
    "EdgeTamVideoVisionRotaryEmbedding": fixed(
        fixed_memory_positions("EdgeTamVideoMemoryAttention"), embed_cos_sin, "1,H,N,D", call_cos_sin_kw,
        "apply_rotary_pos_emb_2d_self_attn(q, k, cos=cos, sin=sin)",
        SAM_COS_SIN + " (self-attention form only; the cross-attention's key grid is not recorded)"),
    "Sam3ViTRotaryEmbedding": fixed(
        fixed_sam3_vit_positions, embed_cos_sin, "1,H,N,D", call_cos_sin_kw,
        "apply_rotary_pos_emb_2d(q, k, cos=cos, sin=sin)", SAM_COS_SIN),
}


def fixed_head_dim(name, sub):
    # What the consuming attention uses (and the rotary's own dim); (head_dim, config heads).
    if name.startswith(("Sam3ViT", "Llama4")):
        return sub.hidden_size // sub.num_attention_heads, sub.num_attention_heads
    heads = sub.memory_attention_num_attention_heads
    return sub.memory_attention_hidden_size // (sub.memory_attention_downsample_rate * heads), heads


def rotate_interleaved(x, even, odd=None):
    """float64 rotation of interleaved (2i, 2i+1) pairs of x: the first element of pair i by
    even[..., i], the second by odd[..., i] (even where not given), as cos/sin over the pair."""
    odd = even if odd is None else odd
    a, b = x.double()[..., 0::2], x.double()[..., 1::2]
    out = torch.empty_like(x, dtype=torch.float64)
    out[..., 0::2] = a * even.cos() - b * even.sin()
    out[..., 1::2] = b * odd.cos() + a * odd.sin()
    return out


def make_fixed_case(model_type, key, module_cls, path):
    """Build the fixed-grid 2-D module on the CPU, feed it the model's positions, rotate q as the attention does."""
    name = module_cls.__name__
    spec_ = FIXED[name]
    modeling = sys.modules[module_cls.__module__]
    sub = sub_config_of(model_type, key)
    apply_fn = getattr(modeling, KEEP[name]["apply"])
    torch.manual_seed(0)
    module = module_cls(sub)
    pos, source, pos_text = spec_["positions"](modeling, sub, path)
    n = pos.shape[0]
    head_dim, config_heads = fixed_head_dim(name, sub)
    heads = min(config_heads, MAX_HEADS)
    q = torch.round(torch.randn(n, heads, head_dim, dtype=torch.float64), decimals=2).to(torch.float32)
    emb = spec_["embed"](module, pos, sub)
    out = from_layout(spec_["call"](apply_fn, to_layout(q, spec_["layout"]), emb), spec_["layout"])
    assert out.dtype == torch.float32 and out.shape == q.shape, (name, out.dtype, out.shape)
    theta = float(sub.rope_parameters["rope_theta"])
    if name.startswith("Llama4"):
        # The table's own frequency list (_compute_freqs_ci): freq_dim = hd/2,
        # theta^(-arange(0, freq_dim, 2)[:freq_dim/2] / freq_dim) = theta^(-4j/hd), j < hd/4.
        freq_dim = head_dim // 2
        inv_freq = 1.0 / (theta ** (torch.arange(0, freq_dim, 2)[: (freq_dim // 2)].float() / freq_dim))
        assert emb.shape == (n, 1, head_dim // 2), (name, emb.shape)
        scaling = 1.0
    else:
        inv_freq, scaling = module.inv_freq, float(module.attention_scaling)
        assert emb[0].shape[-1] == head_dim, (name, emb[0].shape)
    quarter = head_dim // 4
    assert inv_freq.numel() == quarter, (name, inv_freq.numel())
    # float64 check of the stated form: interleaved pair j < hd/4 turns by w*f_j, pair hd/4 + j by h*f_j.
    f = inv_freq.double()
    angles = torch.cat([pos[:, :1].double() * f, pos[:, 1:2].double() * f], dim=-1)[:, None]  # [N, 1, hd/2]
    ref = rotate_interleaved(q, angles) * scaling
    err = (out.double() - ref).abs().max().item()
    assert err < 1e-4 * q.abs().max().item(), (name, path, err)
    idx = sample_indices(n)
    if torch.equal(pos[idx, 0], pos[idx, 1]):
        # The even spread lands on the grid's diagonal (SAM 3's 24 x 24 window: n - 1 = 23 x 25), where
        # w == h would hide an axis swap: the interior tokens move one column right (w = h + 1 there),
        # the first (0, 0) and last tokens stay.
        idx = [idx[0]] + [i + 1 for i in idx[1:-1]] + [idx[-1]]
        assert not torch.equal(pos[idx, 0], pos[idx, 1]), name
    rows = pos.T[:, idx]
    rows = f32(rows) if rows.is_floating_point() else rows.tolist()
    form = (f"axial 2-D, interleaved (2i, 2i+1) pairs over all {head_dim} lanes: pair j turns by w*f_j and "
            f"pair {quarter} + j by h*f_j (w first), f_j = {theta:g}^(-4j/{head_dim}), j < {quarter}; "
            f"{spec_['apply_text']}; positions: {pos_text}")
    return {
        "model_type": model_type, "module": name, "apply": KEEP[name]["apply"], "config_key": key,
        "path": path, "head_dim": head_dim, "heads": heads, "config_heads": config_heads,
        "rotary_dim": head_dim, "q_layout": spec_["layout"], "call": spec_["call_text"],
        "rope_theta": theta, "attention_scaling": scaling, "form": form, "pairing": PAIRING["interleaved"],
        "position_source": source, "position_shape": list(pos.shape), "position_row_names": ["w", "h"],
        "num_tokens": n, "token_index": idx, "position_rows": rows,
        "inv_freq": f32(inv_freq), "q": f32(q[idx]), "out": f32(out[idx]),
    }


# ---------------------------------------------------------------------------------------------
# Part 2d: the period modules (DINOv3, Sapiens2): angles 2*pi*c*f at float coordinates.
# ---------------------------------------------------------------------------------------------

PERIODS = ("DINOv3ViTRopePositionEmbedding", "Sapiens2RopePositionEmbedding")
PERIOD_GRID = (14, 20)  # patches (h, w) of the image the case feeds the module


def make_periods_case(model_type, key, module_cls, path):
    """Build the period module on the CPU, feed it an image, rotate q as the attention does."""
    name = module_cls.__name__
    modeling = sys.modules[module_cls.__module__]
    sub = sub_config_of(model_type, key)
    apply_fn = getattr(modeling, KEEP[name]["apply"])
    torch.manual_seed(0)
    # eval(): in training mode the forward moves the coordinates at random (augmentation).
    module = module_cls(sub).eval()
    patch = sub.patch_size if isinstance(sub.patch_size, int) else sub.patch_size[0]
    gh, gw = PERIOD_GRID
    cos, sin = module(torch.zeros(1, 3, gh * patch, gw * patch, dtype=torch.float32))
    head_dim, config_heads = sub.hidden_size // sub.num_attention_heads, sub.num_attention_heads
    heads, prefix = min(config_heads, MAX_HEADS), 1 + sub.num_register_tokens
    # The model's own coordinates (the module's forward computes them the same way, eval mode).
    coords = modeling.get_patches_center_coordinates(gh, gw, dtype=torch.float32, device="cpu")
    n = prefix + gh * gw
    q = torch.round(torch.randn(1, heads, n, head_dim, dtype=torch.float64), decimals=2).to(torch.float32)
    out, _ = apply_fn(q, q, cos, sin)
    assert out.dtype == torch.float32 and out.shape == q.shape, (name, out.dtype, out.shape)
    # float64 check of the stated form: half-split pair j < hd/4 turns by 2 pi h f_j, pair hd/4 + j
    # by 2 pi w f_j; the prefix tokens not at all.
    f = module.inv_freq.double()
    assert f.numel() == head_dim // 4, (name, f.numel())
    pos = torch.cat([torch.zeros(prefix, 2), coords]).double()  # [n, 2] = (h, w)
    half = 2 * math.pi * torch.cat([pos[:, :1] * f, pos[:, 1:] * f], dim=-1)  # [n, hd/2]
    angles = torch.cat([half, half], dim=-1)
    x = q.double()[0]
    rot = torch.cat([-x[..., head_dim // 2:], x[..., : head_dim // 2]], dim=-1)
    ref = x * angles.cos() + rot * angles.sin()
    err = (out.double()[0] - ref).abs().max().item()
    assert err < 1e-4 * q.abs().max().item(), (name, path, err)
    idx = sorted(set(sample_indices(n)) | set(range(prefix + 1)))
    theta = float(sub.rope_theta)
    form = (f"2-D over patch-centre coordinates (h, w) in [-1, 1]: half-split pair j < {head_dim // 4} "
            f"turns by 2 pi h f_j, pair {head_dim // 4} + j by 2 pi w f_j, f_j = {theta:g}^(-4j/{head_dim}) "
            f"(revolutions per unit coordinate); the {prefix} prefix tokens unrotated (recorded at (0, 0))")
    return {
        "model_type": model_type, "module": name, "apply": KEEP[name]["apply"], "config_key": key,
        "path": path, "head_dim": head_dim, "heads": heads, "config_heads": config_heads,
        "rotary_dim": head_dim, "q_layout": "B,H,N,D", "call": "apply_rotary_pos_emb(q, q, cos, sin)",
        "rope_theta": theta, "attention_scaling": 1.0, "form": form, "pairing": PAIRING["half"],
        "position_source": "get_patches_center_coordinates(14, 20), prefix tokens at (0, 0)",
        "position_shape": [n, 2], "position_row_names": ["h", "w"],
        "num_tokens": n, "token_index": idx, "position_rows": f32(pos.float().T[:, idx]),
        "inv_freq": f32(module.inv_freq), "q": f32(q[0].transpose(0, 1)[idx]),
        "out": f32(out[0].transpose(0, 1)[idx]),
    }


HIDDEN = ("EfficientLoFTRRotaryEmbedding",)
HIDDEN_GRID = (14, 20)  # the aggregated coarse map (h, w) the case's feature map makes


def make_hidden_case(model_type, key, module_cls, path):
    """EfficientLoFTR's module on the CPU over a coarse feature map whose aggregated grid is 14 x 20,
    its cos and sin reshaped as the model reshapes them, and q rotated as its attention does: the
    whole hidden_size before the head split, [1, N, 1, hidden] with unsqueeze_dim=2."""
    name = module_cls.__name__
    modeling = sys.modules[module_cls.__module__]
    sub = sub_config_of(model_type, key)
    apply_fn = getattr(modeling, KEEP[name]["apply"])
    torch.manual_seed(0)
    module = module_cls(sub).eval()
    gh, gw = HIDDEN_GRID
    k, st = sub.q_aggregation_kernel_size, sub.q_aggregation_stride
    hidden = sub.hidden_size
    cos, sin = module(torch.zeros(1, hidden, (gh - 1) * st + k, (gw - 1) * st + k))
    n = gh * gw
    cos, sin = cos.reshape(1, n, hidden), sin.reshape(1, n, hidden)
    q = torch.round(torch.randn(1, n, 1, hidden, dtype=torch.float64), decimals=2).to(torch.float32)
    out, _ = apply_fn(q, q, cos, sin, unsqueeze_dim=2)
    assert out.dtype == torch.float32 and out.shape == q.shape, (name, out.dtype, out.shape)
    # float64 check of the stated form: interleaved pair 2k turns by (row + 1) f_k, pair 2k + 1 by
    # (column + 1) f_k.
    f = module.inv_freq.double()
    assert f.numel() == hidden // 4, (name, f.numel())
    rows = torch.arange(gh, dtype=torch.float64).repeat_interleave(gw) + 1
    cols = torch.arange(gw, dtype=torch.float64).repeat(gh) + 1
    angles = torch.stack([rows[:, None] * f, cols[:, None] * f], dim=-1).flatten(1)  # [n, hidden/2]
    x = q.double()[0, :, 0]
    a, b = x[:, 0::2], x[:, 1::2]
    ref = torch.stack([a * angles.cos() - b * angles.sin(), a * angles.sin() + b * angles.cos()], -1).flatten(1)
    err = (out.double()[0, :, 0] - ref).abs().max().item()
    assert err < 1e-4 * q.abs().max().item(), (name, path, err)
    idx = sample_indices(n)
    theta = float(sub.rope_parameters["rope_theta"])
    form = (f"2-D over the {gh} x {gw} aggregated coarse map, the whole hidden size ({hidden}) before the head "
            f"split: interleaved pair 2k turns by (row + 1) f_k, pair 2k + 1 by (column + 1) f_k, "
            f"f_k = {theta:g}^(-2k/{hidden // 2})")
    pos = torch.stack([rows, cols])
    return {
        "model_type": model_type, "module": name, "apply": KEEP[name]["apply"], "config_key": key,
        "path": path, "head_dim": hidden, "heads": 1, "config_heads": sub.num_attention_heads,
        "rotary_dim": hidden, "q_layout": "B,N,H,D",
        "call": "apply_rotary_pos_emb(q, q, cos, sin, unsqueeze_dim=2)",
        "rope_theta": theta, "attention_scaling": 1.0, "form": form, "pairing": PAIRING["interleaved"],
        "position_source": "(row + 1, column + 1) of the aggregated coarse map (compute_embeddings)",
        "position_shape": [n, 2], "position_row_names": ["h", "w"],
        "num_tokens": n, "token_index": idx, "position_rows": f32(pos.float()[:, idx]),
        "inv_freq": f32(module.inv_freq), "q": f32(q[0][idx]), "out": f32(out[0][idx]),
    }


# ---------------------------------------------------------------------------------------------
# Part 2f: V-JEPA 2's attention, which rotates q and k itself (rotate_queries_or_keys).
# ---------------------------------------------------------------------------------------------

VJEPA = ("VJEPA2RopeAttention",)


def make_vjepa_case(model_type, key, module_cls, path):
    """V-JEPA 2's attention built on the CPU as its encoder (or predictor) builds it, its own
    position ids over the whole clip (masks None: frame, row, column of each token index), and q
    rotated by its apply_rotary_embeddings, as its forward rotates q and k."""
    name = module_cls.__name__
    sub = sub_config_of(model_type, key)
    predictor = path.startswith("predictor.")
    hidden = sub.pred_hidden_size if predictor else sub.hidden_size
    config_heads = sub.pred_num_attention_heads if predictor else sub.num_attention_heads
    torch.manual_seed(0)
    module = module_cls(sub, hidden_size=hidden, num_attention_heads=config_heads).eval()
    n = module.grid_depth * module.grid_size * module.grid_size
    head_dim, heads = module.attention_head_size, min(config_heads, MAX_HEADS)
    q = torch.round(torch.randn(1, heads, n, head_dim, dtype=torch.float64), decimals=2).to(torch.float32)
    frames, rows, cols = module.get_position_ids(torch.zeros(1, n, 1))
    out = module.apply_rotary_embeddings(q, (frames, rows, cols))
    assert out.dtype == torch.float32 and out.shape == q.shape, (name, out.dtype, out.shape)
    # float64 check of the stated form: in each block of D lanes, lane l turns by pos * omega_(l mod D/2)
    # with its interleaved neighbour as partner.
    D = module.d_dim
    omega = 1.0 / 10000.0 ** (torch.arange(D // 2, dtype=torch.float64) / (D / 2.0))
    ref = q.double().clone()
    for axis, pos in enumerate((frames, rows, cols)):
        lanes = slice(axis * D, (axis + 1) * D)
        angle = pos.double()[:, None] * omega.repeat(2)  # [n, D]
        ref[..., lanes] = rotate_interleaved(q[..., lanes], angle[:, 0::2], angle[:, 1::2])
    err = (out.double() - ref).abs().max().item()
    assert err < 1e-4 * q.abs().max().item(), (name, path, err)
    idx = sample_indices(n)
    pos = torch.stack([frames, rows, cols])
    form = (f"3-D inside the attention, {3 * D} of {head_dim} lanes: blocks of D = {D} lanes for frame, row "
            f"and column, lane l of a block turning by pos * omega_(l mod {D // 2}) with its interleaved "
            f"neighbour (cos and sin tiled [omega | omega] over interleaved pairs), omega_i = "
            f"10000^(-i/{D // 2}); the rest pass through")
    return {
        "model_type": model_type, "module": name, "apply": KEEP[name]["apply"], "config_key": key,
        "path": path, "head_dim": head_dim, "heads": heads, "config_heads": config_heads,
        "rotary_dim": 3 * D, "q_layout": "B,H,N,D",
        "call": "apply_rotary_embeddings(q, get_position_ids(x))",
        "rope_theta": 10000.0, "attention_scaling": 1.0, "form": form, "pairing": PAIRING["interleaved"],
        "position_source": "get_position_ids(x) with masks None: (frame, row, column) of each token index "
                           "of the crop_size/patch_size square grid, frames_per_clip/tubelet_size frames",
        "position_shape": [3, n], "position_row_names": ["t", "h", "w"],
        "num_tokens": n, "token_index": idx, "position_rows": pos[:, idx].tolist(),
        "inv_freq": f32(1.0 / 10000 ** (torch.arange(D // 2, dtype=torch.float32) / (D / 2.0))),
        "q": f32(q[0].transpose(0, 1)[idx]), "out": f32(out[0].transpose(0, 1)[idx]),
    }


# ---------------------------------------------------------------------------------------------
# Part 2g: timm's PE ViT inside PE Video (TimmWrapper): RotaryEmbeddingCat over its patch grid.
# ---------------------------------------------------------------------------------------------

TIMM_CAT = ("RotaryEmbeddingCat",)


def make_timm_cat_case(model_type, key, module_cls, path):
    """The timm model the TimmWrapper config names, built on the CPU as TimmWrapperModel builds it
    (timm.create_model(architecture, pretrained=False, **model_args)), its rope's own embedding at
    the model's grid, and q rotated as its AttentionRope rotates it: the prefix tokens kept,
    apply_rot_embed_cat on the rest. The positions recorded are timm's own grid (_build_grid)."""
    import timm
    from timm.layers import pos_embed_sincos as sincos
    name = module_cls.__name__
    sub = sub_config_of(model_type, key)
    torch.manual_seed(0)
    model = timm.create_model(sub.architecture, pretrained=False, num_classes=0, **(sub.model_args or {})).eval()
    rope, attn = model.rope, model.blocks[0].attn
    npt, heads_all = attn.num_prefix_tokens, attn.num_heads
    head_dim = model.embed_dim // heads_all
    gh, gw = model.patch_embed.grid_size
    emb = rope.get_embed()
    n = npt + gh * gw
    heads = min(heads_all, MAX_HEADS)
    q = torch.round(torch.randn(1, heads, n, head_dim, dtype=torch.float64), decimals=2).to(torch.float32)
    out = torch.cat([q[:, :, :npt], sincos.apply_rot_embed_cat(q[:, :, npt:], emb, half=rope.rotate_half)], dim=2)
    grid = sincos._build_grid([gh, gw], grid_type=rope.grid_type, ref_feat_shape=rope.ref_feat_shape,
                              grid_offset=rope.grid_offset, grid_indexing=rope.grid_indexing)
    assert rope.grid_indexing == "xy" and not rope.rotate_half and not rope.in_pixels, name
    # xy: channel 0 the column, channel 1 the row; the prefix tokens at (0, 0), which their angle 0 keeps
    cols = torch.cat([torch.zeros(npt), grid[..., 0].reshape(-1).double()])
    rows = torch.cat([torch.zeros(npt), grid[..., 1].reshape(-1).double()])
    # float64 check of the stated form: interleaved pair j < hd/4 turns by column * f_j, pair hd/4 + j
    # by row * f_j, f_j = temperature^(-4j/hd).
    f = 1.0 / rope.temperature ** (torch.arange(head_dim // 4, dtype=torch.float64) / (head_dim // 4))
    angles = torch.cat([cols[:, None] * f, rows[:, None] * f], dim=-1)
    ref = rotate_interleaved(q, angles)
    err = (out.double() - ref).abs().max().item()
    assert err < 1e-4 * q.abs().max().item(), (name, path, err)
    idx = sorted(set(range(npt)) | set(sample_indices(n)))
    form = (f"timm's {sub.architecture}: axial 2-D over its {gh} x {gw} patch grid at (column + "
            f"{rope.grid_offset:g}, row + {rope.grid_offset:g}) ('xy'), interleaved (2i, 2i+1) pairs: pair j "
            f"turns by the column * f_j and pair {head_dim // 4} + j by the row * f_j, f_j = "
            f"{rope.temperature:g}^(-4j/{head_dim}); the {npt} prefix token(s) not rotated")
    return {
        "model_type": model_type, "module": name, "apply": KEEP[name]["apply"], "config_key": key,
        "path": path, "architecture": sub.architecture, "head_dim": head_dim, "heads": heads,
        "config_heads": heads_all, "rotary_dim": head_dim, "q_layout": "B,H,N,D",
        "call": "cat(q[:, :, :npt], apply_rot_embed_cat(q[:, :, npt:], rope.get_embed()))",
        "rope_theta": float(rope.temperature), "attention_scaling": 1.0, "form": form,
        "pairing": PAIRING["interleaved"],
        "position_source": "timm's _build_grid (index + grid_offset, 'xy'), the prefix tokens at (0, 0)",
        "position_shape": [2, n], "position_row_names": ["h", "w"],
        "num_tokens": n, "token_index": idx, "position_rows": f32(torch.stack([rows, cols]).float()[:, idx]),
        "inv_freq": f32(rope.bands), "q": f32(q[0].transpose(0, 1)[idx]), "out": f32(out[0].transpose(0, 1)[idx]),
    }


SAME_AS_IGNORES = ("model_type", "module", "config_key", "path", "position_source", "form")


def build_cases(families):
    """A case per module with a golden (axial CASES, 1-D ONE_D); repeats of an earlier case become `same_as`."""
    cases, signatures = [], {}
    # Families named after the module's own modeling file go first, then those holding one module
    # (a stand-alone encoder before the models that embed it), so that they hold the data and the
    # reusers (colqwen2, cosmos3_omni, sub-model types, nemo_speechlm, ...) point to them.
    def own_file_first(family):
        files = {cls.__module__.split(".")[-2] for cls in family["_classes"].values()}
        return (family["model_type"] not in files, len(family["modules"]) > 1, family["model_type"])

    for family in sorted(families, key=own_file_first):
        mt, classes, held = family["model_type"], family.pop("_classes"), []
        for module in family["modules"]:
            name, key, path = module["class"], module["config_key"], module["path"]
            if name in CASES and not any(c["module"] == name and c["model_type"] == mt for c in cases):
                case = make_case(mt, key, classes[name], path)
            elif name in ONE_D:
                case = make_1d_case(mt, key, classes[name], path)
            elif name in FIXED:  # every module: each SAM 3 ViT layer gets an entry
                case = make_fixed_case(mt, key, classes[name], path)
            elif name in PERIODS:
                case = make_periods_case(mt, key, classes[name], path)
            elif name in HIDDEN:
                case = make_hidden_case(mt, key, classes[name], path)
            elif name in VJEPA:  # every module: the encoder's and the predictor's layers
                case = make_vjepa_case(mt, key, classes[name], path)
            elif name in TIMM_CAT:
                case = make_timm_cat_case(mt, key, classes[name], path)
            else:
                held.append(None)
                continue
            # Same numbers (class code, config values, positions) as an earlier case: point to it.
            signature = json.dumps({k: v for k, v in case.items() if k not in SAME_AS_IGNORES}, sort_keys=True)
            if signature in signatures:
                cases.append({"model_type": mt, "module": name, "config_key": key, "path": path,
                              **({"form": case["form"]} if "form" in case else {}),
                              "same_as": signatures[signature][0], "same_as_path": signatures[signature][1]})
            else:
                signatures[signature] = (mt, path)
                cases.append(case)
            held.append(cases[-1].get("same_as", mt))
        # the model_type whose case holds the numbers; a list (one per module) when they differ
        family["case"] = held[0] if len(set(held)) == 1 else held
    # a family's axial (vision) case before its 1-D ones
    return sorted(cases, key=lambda c: (c["model_type"], c["module"] not in CASES and c["module"] not in FIXED
                                         and c["module"] not in PERIODS and c["module"] not in HIDDEN
                                         and c["module"] not in VJEPA and c["module"] not in TIMM_CAT))


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
        "grid_thw": list(GRID), "n_1d": N_1D, "n_sample": N_SAMPLE, "max_heads": MAX_HEADS,
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
