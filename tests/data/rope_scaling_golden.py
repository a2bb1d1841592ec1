#!/usr/bin/env python3
"""Golden values for the host-side RoPE frequency builders of wgpu-posenc (src/frequencies.rs).

Run:    python3 tests/data/rope_scaling_golden.py > tests/data/rope_scaling_golden.json
Needs:  Python 3.11, standard library only (math, json, sys); no numpy, no torch.

Every value is computed here in Python floats (IEEE binary64), from the formulas below, written
for this script and independently of the Rust code. The JSON records, per case: the model
configuration it comes from, the explicit scaling parameters, rotary_dim, base, seq_len, the
per-pair angular frequencies `inv_freq` (radians per position, written with repr, so they
round-trip exactly) and the attention factor that multiplies cos and sin.

Formula sources
---------------
* RoPE, Su et al., "RoFormer" (arXiv:2104.09864): f_j = base^(-2j/r), j in 0..r/2.
* Linear / position interpolation, Chen et al. (arXiv:2306.15595), kaiokendev: f_j / factor.
* NTK-aware base change, bloc97 (reddit r/LocalLLaMA, 2023): base' = base * factor^(r/(r-2)).
* Dynamic NTK, emozilla / HF transformers `_compute_dynamic_ntk_parameters`: for
  seq_len > max_position_embeddings, base' = base * (factor*seq_len/max - (factor-1))^(r/(r-2));
  otherwise the unscaled frequencies.
* YaRN, Peng et al. (arXiv:2309.00071), as in HF transformers 5.x `_compute_yarn_parameters`
  and llama.cpp `rope_yarn` / `ggml_rope_yarn_corr_dims`:
    corr_dim(n) = r * ln(orig / (2 pi n)) / (2 ln base)
    low = corr_dim(beta_fast), high = corr_dim(beta_slow), floor/ceil only when truncate,
    then low = max(low, 0), high = min(high, r - 1); if low == high: high += 0.001;
    ramp_j = clamp((j - low) / (high - low), 0, 1), extrapolation_factor = 1 - ramp_j,
    inv_freq = interp * (1 - extrapolation_factor) + extrap * extrapolation_factor,
    with extrap = 1 / base^(2j/r) and interp = 1 / (factor * base^(2j/r));
    get_mscale(s, m) = 0.1 * m * ln(s) + 1 (1 when s <= 1); attention factor =
    get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim) when both are non-zero,
    else get_mscale(factor) (with m = 1), unless attention_factor is given.
* Llama 3 / 3.1 (Meta llama-models `apply_scaling`, HF `_compute_llama3_parameters`):
    wavelen = 2 pi / f; low_wavelen = orig / low_freq_factor, high_wavelen = orig / high_freq_factor;
    wavelen < high_wavelen: f; wavelen > low_wavelen: f / factor; otherwise
    smooth = (orig / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor),
    (1 - smooth) * f / factor + smooth * f.
* LongRoPE, Ding et al. (arXiv:2402.13753), Phi-3 / HF `_compute_longrope_parameters`:
    f_j = 1 / (ext_j * base^(2j/r)), ext = long_factor when seq_len > orig else short_factor;
    attention factor = sqrt(1 + ln(max/orig) / ln(orig)), or 1 when max/orig <= 1.
  HF turns the factor lists into float32 tensors; this script keeps them as binary64, as the
  Rust code does (the f64 values of the lists, as printed in the configs, are already the
  binary64 images of float32 numbers for the long lists).

Configurations (values copied from the models' config.json files)
-----------------------------------------------------------------
* Llama 3.1 8B (meta-llama/Llama-3.1-8B): rope_theta 500000, hidden 4096 / 32 heads = head_dim
  128, rope_scaling {rope_type llama3, factor 8, low_freq_factor 1, high_freq_factor 4,
  original_max_position_embeddings 8192}, max_position_embeddings 131072.
* Qwen2-7B-Instruct with the YaRN block its model card recommends for long texts: rope_theta
  1000000, hidden 3584 / 28 heads = head_dim 128, max_position_embeddings 32768, rope_scaling
  {type yarn, factor 4, original_max_position_embeddings 32768}.
* DeepSeek-V2 (deepseek-ai/DeepSeek-V2, V2-Lite has the same rope block): qk_rope_head_dim 64,
  rope_theta 10000, max_position_embeddings 163840, rope_scaling {type yarn, factor 40,
  original_max_position_embeddings 4096, beta_fast 32, beta_slow 1, mscale 0.707,
  mscale_all_dim 0.707}. mscale == mscale_all_dim, so the attention factor is exactly 1.
* Phi-3-mini-128k-instruct: rope_theta 10000, hidden 3072 / 32 heads = head_dim 96,
  original_max_position_embeddings 4096, max_position_embeddings 131072, rope_scaling type
  longrope with 48 short and 48 long factors.
  PROVENANCE CAVEAT: the hub's config.json could not be read from here. The two 48-value lists
  below are the `LONGROPE_PARAMS` of a Microsoft-copyrighted evaluation script (a
  babilong long-context evaluation, `type: longrope`), which match the lists of the current
  (mid-2024) revision of microsoft/Phi-3-mini-128k-instruct as far as the author recalls; the
  index searched held no copy of that config.json itself to confirm it. The list values are
  real model values, not synthetic, but treat the attribution as unconfirmed.
* Phi-3-vision-128k-instruct (its language model, as quoted verbatim in two independent public
  repositories that embed its config): same geometry (head_dim 96, orig 4096, max 131072,
  rope_theta 10000), legacy rope_scaling type "su" with its own 48 short and 48 long factors
  (the lists the first Phi-3-mini-128k release shipped with).
* Synthetic (no model): linear factor 4 (theta 10000, r 128); dynamic NTK factor 2 with
  max_position_embeddings 2048 at seq_len 1000 and 8192 (theta 10000, r 128); NTK-aware factor 8
  (theta 10000, r 128); the plain default (theta 10000, r 128; and r 32, Phi-2's partial rotary
  32 of 80); YaRN as Qwen2 above but truncate = false; YaRN with an explicit attention_factor
  (it wins over mscale), with mscale but no mscale_all_dim (then get_mscale(factor) is used),
  and with mscale 1 / mscale_all_dim 0.707 (attention factor != 1); YaRN whose correction range
  ends past the last pair (theta 10000, original 131072: HF clamps to r - 1, not r/2 - 1); YaRN
  with beta_fast == beta_slow and truncate false (the zero-width ramp guard).
"""

import json
import math
import sys

# ---------------------------------------------------------------------------------------------
# Formulas
# ---------------------------------------------------------------------------------------------


def pair_exponents(r):
    """2j / r for each pair j."""
    return [(2 * j) / r for j in range(r // 2)]


def plain(r, base):
    return [1.0 / (base ** e) for e in pair_exponents(r)]


def linear(r, base, factor):
    return [f / factor for f in plain(r, base)], 1.0


def ntk_aware(r, base, factor):
    return plain(r, base * factor ** (r / (r - 2))), 1.0


def dynamic_ntk(r, base, factor, max_pos, seq_len):
    if seq_len <= max_pos:
        return plain(r, base), 1.0
    stretched = base * ((factor * seq_len / max_pos) - (factor - 1)) ** (r / (r - 2))
    return plain(r, stretched), 1.0


def yarn_mscale(scale, m=1.0):
    if scale <= 1:
        return 1.0
    return 0.1 * m * math.log(scale) + 1.0


def yarn(r, base, factor, orig, beta_fast=32.0, beta_slow=1.0, mscale=0.0, mscale_all_dim=0.0,
         attention_factor=None, truncate=True):
    def dim_for_rotations(n):
        # The pair index (as a dimension 2j) whose wavelength fits n turns into `orig` positions.
        return r * math.log(orig / (n * 2 * math.pi)) / (2 * math.log(base))

    lo = dim_for_rotations(beta_fast)
    hi = dim_for_rotations(beta_slow)
    if truncate:
        lo = math.floor(lo)
        hi = math.ceil(hi)
    lo = max(lo, 0)
    hi = min(hi, r - 1)
    if lo == hi:
        hi += 0.001

    out = []
    for j, e in enumerate(pair_exponents(r)):
        theta_pow = base ** e
        extrap = 1.0 / theta_pow
        interp = 1.0 / (factor * theta_pow)
        ramp = min(max((j - lo) / (hi - lo), 0.0), 1.0)
        keep = 1.0 - ramp  # share of the unscaled (extrapolated) frequency
        out.append(interp * (1.0 - keep) + extrap * keep)

    if attention_factor is None:
        if mscale and mscale_all_dim:
            attention_factor = yarn_mscale(factor, mscale) / yarn_mscale(factor, mscale_all_dim)
        else:
            attention_factor = yarn_mscale(factor)
    return out, float(attention_factor)


def llama3(r, base, factor, low_freq_factor, high_freq_factor, orig):
    long_wave = orig / low_freq_factor  # wavelengths above this are divided by factor
    short_wave = orig / high_freq_factor  # wavelengths below this are kept
    out = []
    for f in plain(r, base):
        wave = 2 * math.pi / f
        if wave < short_wave:
            out.append(f)
        elif wave > long_wave:
            out.append(f / factor)
        else:
            t = (orig / wave - low_freq_factor) / (high_freq_factor - low_freq_factor)
            out.append((1 - t) * f / factor + t * f)
    return out, 1.0


def longrope(r, base, short_factor, long_factor, orig, max_pos, seq_len, attention_factor=None):
    ext = long_factor if seq_len > orig else short_factor
    assert len(ext) == r // 2
    out = [1.0 / (x * base ** e) for x, e in zip(ext, pair_exponents(r))]
    if attention_factor is None:
        stretch = max_pos / orig
        attention_factor = 1.0 if stretch <= 1.0 else math.sqrt(1 + math.log(stretch) / math.log(orig))
    return out, float(attention_factor)


# ---------------------------------------------------------------------------------------------
# Real factor lists
# ---------------------------------------------------------------------------------------------

# See PROVENANCE CAVEAT in the header.
PHI3_MINI_128K_LONG = [
    1.0700000524520874, 1.1200000047683716, 1.149999976158142, 1.4199999570846558,
    1.5699999332427979, 1.7999999523162842, 2.129999876022339, 2.129999876022339,
    3.009999990463257, 5.910000324249268, 6.950000286102295, 9.070000648498535,
    9.930000305175781, 10.710000038146973, 11.130000114440918, 14.609999656677246,
    15.409998893737793, 19.809999465942383, 37.279998779296875, 38.279998779296875,
    38.599998474121094, 40.12000274658203, 46.20000457763672, 50.940006256103516,
    53.66000747680664, 54.9373893737793, 56.89738845825195, 57.28738784790039,
    59.98738479614258, 60.86738586425781, 60.887386322021484, 61.71739196777344,
    62.91739273071289, 62.957393646240234, 63.41739273071289, 63.8173942565918,
    63.83739471435547, 63.897396087646484, 63.93739700317383, 64.06739807128906,
    64.11434936523438, 64.12435150146484, 64.15435028076172, 64.19435119628906,
    64.24435424804688, 64.57435607910156, 64.69000244140625, 64.76000213623047,
]
PHI3_MINI_128K_SHORT = [
    1.1, 1.1, 1.1, 1.3000000000000003, 1.3500000000000003, 1.3500000000000003,
    1.4000000000000004, 1.5500000000000005, 2.000000000000001, 2.000000000000001,
    2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001,
    2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001,
    2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001,
    2.000000000000001, 2.000000000000001, 2.000000000000001, 2.0500000000000007,
    2.0500000000000007, 2.0500000000000007, 2.0500000000000007, 2.0500000000000007,
    2.0500000000000007, 2.1000000000000005, 2.1000000000000005, 2.1500000000000004,
    2.25, 2.25, 2.25, 2.25, 2.25, 2.3999999999999995, 2.4499999999999993, 2.499999999999999,
    2.6999999999999984, 2.6999999999999984, 2.7499999999999982, 2.799999999999998,
    2.8999999999999977, 3.049999999999997,
]

PHI3_VISION_128K_LONG = [
    1.0299999713897705, 1.0499999523162842, 1.0499999523162842, 1.0799999237060547,
    1.2299998998641968, 1.2299998998641968, 1.2999999523162842, 1.4499999284744263,
    1.5999999046325684, 1.6499998569488525, 1.8999998569488525, 2.859999895095825,
    3.68999981880188, 5.419999599456787, 5.489999771118164, 5.489999771118164,
    9.09000015258789, 11.579999923706055, 15.65999984741211, 15.769999504089355,
    15.789999961853027, 18.360000610351562, 21.989999771118164, 23.079999923706055,
    30.009998321533203, 32.35000228881836, 32.590003967285156, 35.56000518798828,
    39.95000457763672, 53.840003967285156, 56.20000457763672, 57.95000457763672,
    59.29000473022461, 59.77000427246094, 59.920005798339844, 61.190006256103516,
    61.96000671386719, 62.50000762939453, 63.3700065612793, 63.48000717163086,
    63.48000717163086, 63.66000747680664, 63.850006103515625, 64.08000946044922,
    64.760009765625, 64.80001068115234, 64.81001281738281, 64.81001281738281,
]
PHI3_VISION_128K_SHORT = [
    1.05, 1.05, 1.05, 1.1, 1.1, 1.1, 1.2500000000000002, 1.2500000000000002,
    1.4000000000000004, 1.4500000000000004, 1.5500000000000005, 1.8500000000000008,
    1.9000000000000008, 2.000000000000001, 2.000000000000001, 2.000000000000001,
    2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001,
    2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001,
    2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001,
    2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001,
    2.1000000000000005, 2.1000000000000005, 2.2, 2.3499999999999996, 2.3499999999999996,
    2.3499999999999996, 2.3499999999999996, 2.3999999999999995, 2.3999999999999995,
    2.6499999999999986, 2.6999999999999984, 2.8999999999999977, 2.9499999999999975,
    3.049999999999997, 3.049999999999997, 3.049999999999997,
]

# ---------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------


def yarn_params(factor, orig, beta_fast=32.0, beta_slow=1.0, mscale=0.0, mscale_all_dim=0.0,
                attention_factor=None, truncate=True):
    return {
        "type": "yarn", "factor": factor, "original_max_position_embeddings": orig,
        "beta_fast": beta_fast, "beta_slow": beta_slow, "mscale": mscale,
        "mscale_all_dim": mscale_all_dim, "attention_factor": attention_factor, "truncate": truncate,
    }


def cases():
    out = []

    def add(name, source, hf_config, scaling, rotary_dim, base, seq_len, result):
        inv_freq, attention = result
        assert len(inv_freq) == rotary_dim // 2
        assert all(math.isfinite(x) and x > 0 for x in inv_freq)
        out.append({
            "name": name, "source": source, "hf_config": hf_config, "scaling": scaling,
            "rotary_dim": rotary_dim, "base": base, "seq_len": seq_len,
            "inv_freq": inv_freq, "attention_factor": attention,
        })

    # Plain RoPE.
    add("default_theta1e4_r128", "synthetic: unscaled RoPE", {"rope_theta": 10000.0},
        {"type": "default"}, 128, 10000.0, 4096, (plain(128, 10000.0), 1.0))
    add("default_theta1e4_r32", "synthetic: Phi-2 geometry (partial rotary 32 of head_dim 80)",
        {"rope_theta": 10000.0, "partial_rotary_factor": 0.4},
        {"type": "default"}, 32, 10000.0, 2048, (plain(32, 10000.0), 1.0))

    # Llama 3.1 8B.
    llama31 = {
        "rope_theta": 500000.0, "max_position_embeddings": 131072,
        "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    }
    add("llama3_1_8b", "meta-llama/Llama-3.1-8B config.json", llama31,
        {"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
         "original_max_position_embeddings": 8192},
        128, 500000.0, 131072, llama3(128, 500000.0, 8.0, 1.0, 4.0, 8192))

    # Qwen2 YaRN.
    qwen2 = {
        "rope_theta": 1000000.0, "max_position_embeddings": 32768,
        "rope_scaling": {"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"},
    }
    add("qwen2_7b_yarn4", "Qwen/Qwen2-7B-Instruct config.json + the model card's YaRN block", qwen2,
        yarn_params(4.0, 32768), 128, 1000000.0, 131072, yarn(128, 1000000.0, 4.0, 32768))
    qwen2_nt = {
        "rope_theta": 1000000.0, "max_position_embeddings": 32768,
        "rope_scaling": {"factor": 4.0, "original_max_position_embeddings": 32768,
                         "rope_type": "yarn", "truncate": False},
    }
    add("yarn4_no_truncate", "synthetic: the Qwen2 YaRN block with truncate = false", qwen2_nt,
        yarn_params(4.0, 32768, truncate=False), 128, 1000000.0, 131072,
        yarn(128, 1000000.0, 4.0, 32768, truncate=False))
    given = {
        "rope_theta": 10000.0, "max_position_embeddings": 16384,
        "rope_parameters": {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                            "original_max_position_embeddings": 4096, "beta_fast": 16.0,
                            "beta_slow": 2.0, "mscale": 0.707, "attention_factor": 1.25},
    }
    add("yarn_given_attention_factor",
        "synthetic: transformers-5 rope_parameters, beta 16/2, attention_factor given", given,
        yarn_params(4.0, 4096, beta_fast=16.0, beta_slow=2.0, mscale=0.707, attention_factor=1.25),
        64, 10000.0, 16384,
        yarn(64, 10000.0, 4.0, 4096, beta_fast=16.0, beta_slow=2.0, mscale=0.707,
             attention_factor=1.25))

    only = {
        "rope_theta": 10000.0, "max_position_embeddings": 16384,
        "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                         "original_max_position_embeddings": 4096, "mscale": 0.707},
    }
    add("yarn_mscale_without_all_dim",
        "synthetic: mscale given without mscale_all_dim (HF then uses get_mscale(factor))", only,
        yarn_params(4.0, 4096, mscale=0.707), 64, 10000.0, 16384,
        yarn(64, 10000.0, 4.0, 4096, mscale=0.707))
    unequal = {
        "rope_theta": 10000.0, "max_position_embeddings": 163840,
        "rope_scaling": {"rope_type": "yarn", "factor": 40.0,
                         "original_max_position_embeddings": 4096, "beta_fast": 32,
                         "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 0.707},
    }
    add("yarn40_mscale_unequal", "synthetic: DeepSeek-V2 geometry with mscale 1, mscale_all_dim 0.707",
        unequal, yarn_params(40.0, 4096, mscale=1.0, mscale_all_dim=0.707), 64, 10000.0, 163840,
        yarn(64, 10000.0, 40.0, 4096, mscale=1.0, mscale_all_dim=0.707))

    past = {
        "rope_theta": 10000.0, "max_position_embeddings": 524288,
        "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                         "original_max_position_embeddings": 131072},
    }
    add("yarn_range_past_last_pair",
        "synthetic: small theta, long original context: the ramp ends past the last pair "
        "(HF clamps high to r - 1, not r/2 - 1)", past,
        yarn_params(4.0, 131072), 64, 10000.0, 524288, yarn(64, 10000.0, 4.0, 131072))
    equal = {
        "rope_theta": 10000.0, "max_position_embeddings": 16384,
        "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                         "original_max_position_embeddings": 4096, "beta_fast": 8.0,
                         "beta_slow": 8.0, "truncate": False},
    }
    add("yarn_equal_betas", "synthetic: beta_fast == beta_slow, truncate false (low == high, "
        "HF widens the ramp by 0.001)", equal,
        yarn_params(4.0, 4096, beta_fast=8.0, beta_slow=8.0, truncate=False), 64, 10000.0, 16384,
        yarn(64, 10000.0, 4.0, 4096, beta_fast=8.0, beta_slow=8.0, truncate=False))

    # DeepSeek-V2 YaRN with mscale_all_dim.
    dsv2 = {
        "rope_theta": 10000, "max_position_embeddings": 163840, "qk_rope_head_dim": 64,
        "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 0.707,
                         "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096,
                         "type": "yarn"},
    }
    add("deepseek_v2_yarn40", "deepseek-ai/DeepSeek-V2 config.json (qk_rope_head_dim 64)", dsv2,
        yarn_params(40.0, 4096, mscale=0.707, mscale_all_dim=0.707), 64, 10000.0, 163840,
        yarn(64, 10000.0, 40.0, 4096, 32.0, 1.0, 0.707, 0.707))

    # Phi-3 LongRoPE.
    phi3 = {
        "rope_theta": 10000.0, "max_position_embeddings": 131072,
        "original_max_position_embeddings": 4096,
        "rope_scaling": {"long_factor": PHI3_MINI_128K_LONG, "short_factor": PHI3_MINI_128K_SHORT,
                         "type": "longrope"},
    }
    phi3_scaling = {"type": "longrope", "short_factor": PHI3_MINI_128K_SHORT,
                    "long_factor": PHI3_MINI_128K_LONG, "original_max_position_embeddings": 4096,
                    "max_position_embeddings": 131072, "attention_factor": None}
    for seq_len in (4096, 131072):
        add(f"phi3_mini_128k_seq{seq_len}",
            "microsoft/Phi-3-mini-128k-instruct (factor lists: see provenance caveat)", phi3,
            phi3_scaling, 96, 10000.0, seq_len,
            longrope(96, 10000.0, PHI3_MINI_128K_SHORT, PHI3_MINI_128K_LONG, 4096, 131072, seq_len))
    phi3v = {
        "rope_theta": 10000.0, "max_position_embeddings": 131072,
        "original_max_position_embeddings": 4096,
        "rope_scaling": {"long_factor": PHI3_VISION_128K_LONG,
                         "short_factor": PHI3_VISION_128K_SHORT, "type": "su"},
    }
    phi3v_scaling = {"type": "longrope", "short_factor": PHI3_VISION_128K_SHORT,
                     "long_factor": PHI3_VISION_128K_LONG, "original_max_position_embeddings": 4096,
                     "max_position_embeddings": 131072, "attention_factor": None}
    for seq_len in (4096, 4097):
        add(f"phi3_vision_128k_su_seq{seq_len}",
            "microsoft/Phi-3-vision-128k-instruct config (legacy type su)", phi3v, phi3v_scaling,
            96, 10000.0, seq_len,
            longrope(96, 10000.0, PHI3_VISION_128K_SHORT, PHI3_VISION_128K_LONG, 4096, 131072,
                     seq_len))

    # Linear.
    add("linear4", "synthetic: linear (position interpolation) factor 4",
        {"rope_theta": 10000.0, "max_position_embeddings": 8192,
         "rope_scaling": {"rope_type": "linear", "factor": 4.0}},
        {"type": "linear", "factor": 4.0}, 128, 10000.0, 8192, linear(128, 10000.0, 4.0))

    # Dynamic NTK.
    dyn = {"rope_theta": 10000.0, "max_position_embeddings": 2048,
           "rope_scaling": {"type": "dynamic", "factor": 2.0}}
    for seq_len in (1000, 8192):
        add(f"dynamic2_seq{seq_len}", "synthetic: dynamic NTK factor 2, max_position_embeddings 2048",
            dyn, {"type": "dynamic_ntk", "factor": 2.0, "original_max_position_embeddings": 2048},
            128, 10000.0, seq_len, dynamic_ntk(128, 10000.0, 2.0, 2048, seq_len))

    # Static NTK-aware (not an HF rope_type).
    add("ntk_aware8", "synthetic: NTK-aware base change, factor 8", None,
        {"type": "ntk_aware", "factor": 8.0}, 128, 10000.0, 0, ntk_aware(128, 10000.0, 8.0))

    return out


def main():
    doc = {
        "generator": "tests/data/rope_scaling_golden.py",
        "python": sys.version.split()[0],
        "units": "inv_freq in radians per position; attention_factor multiplies cos and sin",
        "cases": cases(),
    }
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
