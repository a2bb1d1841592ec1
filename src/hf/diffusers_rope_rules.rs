//! The rules of the diffusers transformers' rotary modules (`diffusers_rope.rs` reads them):
//! for each class, each module's path, class, form, theta, pair layout and head.

use crate::spec::PairLayout;

/// What a module rotates, and by which frequencies.
#[derive(Clone, Copy)]
pub(super) enum Form {
    /// Two or three axes, each its own list: a key of the config (a list of widths, in
    /// elements) with diffusers' default.
    Axes(&'static str, &'static [u64]),
    /// Wan's split of the head: `h = w = 2 * (d / 6)`, `t = d - h - w`.
    Wan,
    /// SANA-WM's camera branch: the second half of the head, turned by the first entries of
    /// Wan's t, h and w lists of the whole head (`_slice_rope_for_cam`).
    WanCamera,
    /// CogView4's: `[d / 2, d / 2]` over height and width.
    HalfEach,
    /// `get_3d_rotary_pos_embed`'s (EasyAnimate): `[d / 4, 3 d / 8, 3 d / 8]`.
    Quarter,
    /// MiniMax H3's: three axes of `2 n` lanes each (`n` a key with its default).
    Shared(&'static str, u64),
    /// Cosmos': Wan's split of the head, each axis's theta `10 000 * s^(d / (d - 2))` for
    /// its `rope_scale` entry `s` and width `d` (NTK factors).
    Cosmos,
    /// 1-D RoPE over the whole head.
    Head,
    /// 1-D RoPE over the whole head with OmniGen's LongRoPE (`rope_scaling` of type `su`).
    LongRope,
    /// As [`Form::Axes`], the axes covering the whole head (PRX's: diffusers raises
    /// otherwise).
    WholeAxes(&'static str, &'static [u64]),
    /// As [`Form::WholeAxes`], exactly three widths, one per column of the ids (HiDream's
    /// `(0, row, column)`: diffusers' own forward fails on its default of two).
    IdAxes(&'static str, &'static [u64]),
    /// 1-D RoPE over the first lanes: a key with its default (MiniMax Music 3's
    /// `rotary_dim`).
    Prefix(&'static str, u64),
    /// 1-D RoPE over the first half of the head (Stable Audio 3's).
    HalfHead,
    /// One list over the head's pairs, the pairs' axes interleaved as Qwen3-VL's
    /// ([`MRopeOrder::Interleaved`]): `[t, h, w]` pairs under a key with its default, the
    /// temporal axis taking every pair past the spatial ones.
    Interleaved(&'static str, [u64; 3]),
    /// LTX's: `n = d / (2 a)` frequencies rising from `pi/2` on each of `a` axes (three, or
    /// one for the audio and cross-attention modules), interleaved per frequency, over the
    /// whole inner dimension `d` after `d % (2 a)` leading lanes; with LTX-2's `rope_type`
    /// `split` the list spans the heads (their count under a key with its default), each
    /// head half-split over its slice.
    Ltx(u64, &'static str, u64),
}

/// The theta of a rule: a constant, or a key with diffusers' default.
#[derive(Clone, Copy)]
pub(super) enum Theta {
    Fixed(f64),
    Key(&'static str, f64),
}

/// The head width of a class: a key with diffusers' default, the axes' sum, the sum of an
/// `axes_dims` key (Kandinsky's text module), or a model width over its heads.
#[derive(Clone, Copy)]
pub(super) enum Head {
    Key(&'static str, u64),
    Sum,
    AxesSum(&'static str, &'static [u64]),
    /// The sum of the first key's widths, or where it is null of the second's (Kandinsky 6's
    /// audio tower: `axes_dims_a or axes_dims`).
    AxesSumOr(&'static str, &'static str, &'static [u64]),
    Over(&'static str, u64, &'static str, u64),
    /// Heads times their width, two keys with their defaults: the inner dimension a module
    /// rotates before the heads split (LTX's).
    Times(&'static str, u64, &'static str, u64),
}

/// How a class builds one of its rotary modules.
#[derive(Clone, Copy)]
pub(super) struct Rule {
    pub(super) path: &'static str,
    pub(super) module: &'static str,
    pub(super) form: Form,
    pub(super) theta: Theta,
    pub(super) layout: PairLayout,
    pub(super) head: Head,
    /// Position sets a token whose cos and sin the class averages ([`RopeSpec::pool`]
    /// (crate::RopeSpec::pool): Helios' and FramePack's history), 1 for one position.
    pub(super) pool: u32,
    /// The layout the class lays its cos and sin out for where it is not its pairs'
    /// ([`RopeSpec::table_layout`](crate::RopeSpec::table_layout): ERNIE-Image's).
    pub(super) table: Option<PairLayout>,
}

const IL: PairLayout = PairLayout::Interleaved;
const HS: PairLayout = PairLayout::HalfSplit;
const HEAD: Head = Head::Key("attention_head_dim", 128);
const T4: Theta = Theta::Fixed(1e4);
/// FLUX's and HunyuanVideo's axes `(16, 56, 56)`.
const FLUX_AXES: &[u64] = &[16, 56, 56];
/// FLUX.2's and FLUX.3's four axes `(32, 32, 32, 32)`.
const FLUX2_AXES: &[u64] = &[32, 32, 32, 32];
/// Z-Image's, Bria Fibo 2's and Krea 2's axes `(32, 48, 48)`.
const Z_AXES: &[u64] = &[32, 48, 48];
/// Kandinsky 5's and 6 SR's axes `(16, 24, 24)`.
const K_AXES: &[u64] = &[16, 24, 24];

/// An interleaved rule over `attention_head_dim`.
const fn rule(path: &'static str, module: &'static str, form: Form, theta: Theta) -> Rule {
    Rule {
        path,
        module,
        form,
        theta,
        layout: IL,
        head: HEAD,
        pool: 1,
        table: None,
    }
}

/// `r` with another layout and head.
const fn with(mut r: Rule, layout: PairLayout, head: Head) -> Rule {
    r.layout = layout;
    r.head = head;
    r
}

/// `r` over `pool` position sets a token.
const fn pooled(mut r: Rule, pool: u32) -> Rule {
    r.pool = pool;
    r
}

/// `r` with its cos and sin laid out for `table`.
const fn tabled(mut r: Rule, table: PairLayout) -> Rule {
    r.table = Some(table);
    r
}

/// FLUX.1's `FluxPosEmbed` and its copies: `axes_dims_rope`, theta 10 000.
fn flux(m: &'static str) -> Rule {
    rule("pos_embed", m, Form::Axes("axes_dims_rope", FLUX_AXES), T4)
}

/// As [`flux`], theta under `rope_theta`.
fn keyed(m: &'static str) -> Rule {
    let theta = Theta::Key("rope_theta", 1e4);
    rule(
        "pos_embed",
        m,
        Form::Axes("axes_dims_rope", FLUX_AXES),
        theta,
    )
}

/// HunyuanVideo's and its copies': `rope_axes_dim`, `rope_theta` 256.
fn hunyuan(m: &'static str, default: &'static [u64]) -> Rule {
    let theta = Theta::Key("rope_theta", 256.0);
    rule("rope", m, Form::Axes("rope_axes_dim", default), theta)
}

/// Wan's split of the head, theta 10 000.
fn wan(m: &'static str) -> Rule {
    rule("rope", m, Form::Wan, T4)
}

/// CogView4's and GLM-Image's halves of the head, half-split.
fn glm(m: &'static str) -> Rule {
    let head = Head::Key("attention_head_dim", 40);
    with(rule("rope", m, Form::HalfEach, T4), HS, head)
}

/// Kandinsky's visual module: `axes_dims`, the head their sum.
fn kandinsky(m: &'static str) -> Rule {
    let (form, head) = (
        Form::Axes("axes_dims", K_AXES),
        Head::AxesSum("axes_dims", K_AXES),
    );
    with(rule("visual_rope_embeddings", m, form, T4), IL, head)
}

/// LTX-2's four modules (and SANA-WM's refiner's copy of them): video over the inner
/// dimension on three axes, audio over the audio one, and the two cross-attention modules
/// over `audio_cross_attention_dim` on the time axis.
fn ltx2(m: &'static str) -> Vec<Rule> {
    let theta = Theta::Key("rope_theta", 1e4);
    let video = Head::Times("num_attention_heads", 32, "attention_head_dim", 128);
    let audio = Head::Times(
        "audio_num_attention_heads",
        32,
        "audio_attention_head_dim",
        64,
    );
    let cross = Head::Key("audio_cross_attention_dim", 2048);
    let (v, a) = ("num_attention_heads", "audio_num_attention_heads");
    let one =
        |path, axes, heads, head| with(rule(path, m, Form::Ltx(axes, heads, 32), theta), IL, head);
    vec![
        one("rope", 3, v, video),
        one("audio_rope", 1, a, audio),
        one("cross_attn_rope", 1, v, cross),
        one("cross_attn_audio_rope", 1, a, cross),
    ]
}

/// The rules of a class's rotary modules, in the order the class builds them.
pub(super) fn rules(class: &str) -> Option<Vec<Rule>> {
    image_rules(class)
        .or_else(|| video_rules(class))
        .or_else(|| other_rules(class))
}

/// The image transformers' rules.
fn image_rules(class: &str) -> Option<Vec<Rule>> {
    let krea = Form::Axes("axes_dims_rope", Z_AXES);
    let z = Form::Axes("axes_dims", Z_AXES);
    Some(match class {
        "FluxTransformer2DModel" | "ChromaTransformer2DModel" => vec![flux("FluxPosEmbed")],
        "LongCatImageTransformer2DModel" => vec![flux("LongCatImagePosEmbed")],
        "Flux2Transformer2DModel" | "Flux3Transformer2DModel" => {
            let flux2 = class == "Flux2Transformer2DModel";
            let (module, theta) = match flux2 {
                true => ("Flux2PosEmbed", 2000.0),
                false => ("Flux3PosEmbed", 1e4),
            };
            let form = Form::Axes("axes_dims_rope", FLUX2_AXES);
            vec![rule(
                "pos_embed",
                module,
                form,
                Theta::Key("rope_theta", theta),
            )]
        }
        "OvisImageTransformer2DModel" => vec![flux("OvisImagePosEmbed")],
        "BriaTransformer2DModel" => vec![keyed("BriaEmbedND")],
        "BriaFiboTransformer2DModel" => vec![keyed("BriaFiboEmbedND")],
        "Krea2Transformer2DModel" => {
            let theta = Theta::Key("rope_theta", 1000.0);
            vec![rule("rotary_emb", "Krea2RotaryPosEmbed", krea, theta)]
        }
        "ZImageTransformer2DModel" | "BriaFibo2Transformer2DModel" => {
            let theta = Theta::Key("rope_theta", 256.0);
            let r = rule("rope_embedder", "RopeEmbedder", z, theta);
            vec![with(r, IL, Head::Sum)]
        }
        "QwenImageTransformer2DModel" => vec![flux("QwenEmbedRope")],
        "NucleusMoEImageTransformer2DModel" => vec![flux("NucleusMoEEmbedRope")],
        "QwenImage21Transformer2DModel" => vec![flux("QwenImage21Rope")],
        "OmniGenTransformer2DModel" => {
            let r = rule(
                "rope",
                "OmniGenSuScaledRotaryEmbedding",
                Form::LongRope,
                Theta::Key("rope_base", 1e4),
            );
            vec![with(
                r,
                HS,
                Head::Over("hidden_size", 3072, "num_attention_heads", 32),
            )]
        }
        "Lumina2Transformer2DModel" => {
            let form = Form::Axes("axes_dim_rope", &[32, 32, 32]);
            let r = rule("rope_embedder", "Lumina2RotaryPosEmbed", form, T4);
            vec![with(
                r,
                IL,
                Head::Over("hidden_size", 2304, "num_attention_heads", 24),
            )]
        }
        "HiDreamImageTransformer2DModel" => {
            let form = Form::IdAxes("axes_dims_rope", &[32, 32]);
            vec![rule("pe_embedder", "HiDreamImageEmbedND", form, T4)]
        }
        "PRXTransformer2DModel" => {
            let form = Form::WholeAxes("axes_dim", &[32, 32]);
            let r = rule("pe_embedder", "PRXEmbedND", form, Theta::Key("theta", 1e4));
            vec![with(
                r,
                IL,
                Head::Over("hidden_size", 1792, "num_heads", 28),
            )]
        }
        _ => return None,
    })
}

/// The video transformers' rules.
fn video_rules(class: &str) -> Option<Vec<Rule>> {
    Some(match class {
        "HunyuanVideoTransformer3DModel" => vec![hunyuan("HunyuanVideoRotaryPosEmbed", FLUX_AXES)],
        "HunyuanVideo15Transformer3DModel" => {
            vec![hunyuan("HunyuanVideo15RotaryPosEmbed", FLUX_AXES)]
        }
        "MotifVideoTransformer3DModel" => vec![hunyuan("MotifVideoRotaryPosEmbed", FLUX_AXES)],
        "HunyuanImageTransformer2DModel" => {
            vec![hunyuan("HunyuanImageRotaryPosEmbed", &[64, 64])]
        }
        "WanTransformer3DModel"
        | "WanVACETransformer3DModel"
        | "WanAnimateTransformer3DModel"
        | "SanaVideoTransformer3DModel" => vec![wan("WanRotaryPosEmbed")],
        "SkyReelsV2Transformer3DModel" => vec![wan("SkyReelsV2RotaryPosEmbed")],
        "SanaWMTransformer3DModel" => {
            let head = Head::Key("linear_head_dim", 112);
            let m = "SanaWMRotaryPosEmbed";
            vec![
                with(wan(m), IL, head),
                with(rule("rope[camera]", m, Form::WanCamera, T4), IL, head),
            ]
        }
        "ChronoEditTransformer3DModel" => vec![wan("ChronoEditRotaryPosEmbed")],
        "AnyFlowTransformer3DModel" => vec![wan("AnyFlowRotaryPosEmbed")],
        // The compressed tokens at their blocks' centres (see `far_downscale`).
        "AnyFlowFARTransformer3DModel" => vec![wan("AnyFlowCausalRotaryPosEmbed")],
        // Angles `[t0, t0, t1, t1, ..]` (for interleaved pairs) under `rotate_half`.
        "ErnieImageTransformer2DModel" => {
            let theta = Theta::Key("rope_theta", 256.0);
            let r = rule(
                "pos_embed",
                "ErnieImageEmbedND3",
                Form::Axes("rope_axes_dim", Z_AXES),
                theta,
            );
            let head = Head::Over("hidden_size", 3072, "num_attention_heads", 24);
            vec![tabled(with(r, HS, head), IL)]
        }
        // History tokens: cos and sin averaged over 2x2x2 and 4x4x4 blocks.
        "HeliosTransformer3DModel" => {
            let form = Form::Axes("rope_dim", &[44, 42, 42]);
            let r = rule(
                "rope",
                "HeliosRotaryPosEmbed",
                form,
                Theta::Key("rope_theta", 1e4),
            );
            vec![pooled(r, 4)]
        }
        "HunyuanVideoFramepackTransformer3DModel" => {
            let r = hunyuan("HunyuanVideoFramepackRotaryPosEmbed", FLUX_AXES);
            vec![pooled(r, 4)]
        }
        "EasyAnimateTransformer3DModel" => {
            let r = rule(
                "rope_embedding",
                "EasyAnimateRotaryPosEmbed",
                Form::Quarter,
                T4,
            );
            vec![with(r, IL, Head::Key("attention_head_dim", 64))]
        }
        "CosmosTransformer3DModel" => {
            let r = rule("rope", "CosmosRotaryPosEmbed", Form::Cosmos, T4);
            vec![with(r, HS, HEAD)]
        }
        "LTXVideoTransformer3DModel" => {
            let inner = Head::Times("num_attention_heads", 32, "attention_head_dim", 64);
            let form = Form::Ltx(3, "num_attention_heads", 32);
            let r = rule("rope", "LTXVideoRotaryPosEmbed", form, T4);
            vec![with(r, IL, inner)]
        }
        "LTX2VideoTransformer3DModel" => ltx2("LTX2AudioVideoRotaryPosEmbed"),
        "SanaWMLTX2RefinerTransformer3DModel" => ltx2("SanaWMLTX2AudioVideoRotaryPosEmbed"),
        "CogView4Transformer2DModel" => vec![glm("CogView4RotaryPosEmbed")],
        "GlmImageTransformer2DModel" => vec![glm("GlmImageRotaryPosEmbed")],
        _ => return None,
    })
}

/// The other classes' rules: Kandinsky's towers, audio, 1-D and M-RoPE modules.
fn other_rules(class: &str) -> Option<Vec<Rule>> {
    let text = Head::AxesSum("axes_dims", K_AXES);
    let h3 = Form::Shared("rope_freq_dim", 16);
    Some(match class {
        "Kandinsky5Transformer3DModel" => {
            let r = rule("text_rope_embeddings", "Kandinsky5RoPE1D", Form::Head, T4);
            vec![with(r, IL, text), kandinsky("Kandinsky5RoPE3D")]
        }
        "Kandinsky6SRTransformer3DModel" => vec![kandinsky("Kandinsky6SRRoPE3D")],
        "Kandinsky6Transformer3DModel" => {
            let visual = Form::Axes("axes_dims", Z_AXES);
            let head = Head::AxesSum("axes_dims", Z_AXES);
            let audio = Head::AxesSumOr("axes_dims_a", "axes_dims", Z_AXES);
            let one = |path, head| with(rule(path, "Kandinsky6RoPE1D", Form::Head, T4), IL, head);
            vec![
                with(
                    rule("visual_rope_embeddings", "Kandinsky6RoPE3D", visual, T4),
                    IL,
                    head,
                ),
                one("audio_rope_embeddings", audio),
                one("video_text_rope_embeddings", head),
                one("audio_text_rope_embeddings", audio),
            ]
        }
        "StableAudio3DiTModel" => {
            let r = rule(
                "rotary_pos_emb",
                "StableAudio3RotaryEmbedding",
                Form::HalfHead,
                T4,
            );
            vec![with(r, HS, Head::Over("embed_dim", 1536, "num_heads", 24))]
        }
        "LongCatAudioDiTTransformer" => {
            let theta = Theta::Fixed(1e5);
            let r = rule("rotary_embed", "AudioDiTRotaryEmbedding", Form::Head, theta);
            vec![with(r, HS, Head::Over("dit_dim", 1536, "dit_heads", 24))]
        }
        "MiniMaxMusic3Transformer1DModel" => {
            let form = Form::Prefix("rotary_dim", 32);
            let r = rule("rotary_emb", "MiniMaxMusic3RotaryEmbedding", form, T4);
            vec![with(r, HS, Head::Key("attention_head_dim", 64))]
        }
        "Ideogram4Transformer2DModel" => {
            let form = Form::Interleaved("mrope_section", [24, 20, 20]);
            let theta = Theta::Key("rope_theta", 5e6);
            let r = rule("rotary_emb", "Ideogram4MRoPE", form, theta);
            vec![with(r, HS, Head::Key("attention_head_dim", 256))]
        }
        "Cosmos3OmniTransformer" => {
            let form = Form::Interleaved("rope_axes_dim", [24, 20, 20]);
            let theta = Theta::Key("rope_theta", 5e6);
            let r = rule("rotary_emb", "Cosmos3VLTextRotaryEmbedding", form, theta);
            vec![with(r, HS, Head::Key("head_dim", 128))]
        }
        "MiniMaxH3Transformer3DModel" => {
            let theta = Theta::Key("rope_theta", 1e4);
            vec![with(
                rule("rope", "MiniMaxH3RotaryPosEmbed", h3, theta),
                HS,
                HEAD,
            )]
        }
        _ => return None,
    })
}
