//! What to compute: plain data describing each encoding, validated once at the boundary.

mod table_layout;

use crate::error::{Error, Result};
use crate::frequencies::Scaling;
use crate::learned::LearnedFrequencies;

/// Which two elements of a row form a rotated pair.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PairLayout {
    /// Pairs `(2j, 2j + 1)`: RoFormer, GPT-J, Meta's LLaMA (complex form), llama.cpp NORM,
    /// burn, candle `rope_i`.
    Interleaved,
    /// Pairs `(j, j + r/2)`: GPT-NeoX, HF transformers `rotate_half`, llama.cpp NEOX,
    /// candle `rope`, vLLM `is_neox_style`.
    #[default]
    HalfSplit,
}

impl PairLayout {
    /// Element indices of pair `j` in a row of rotary dimension `r` (`j < r / 2`; indices
    /// past `u64::MAX` saturate).
    pub fn elements(self, r: u64, j: u64) -> (u64, u64) {
        match self {
            PairLayout::Interleaved => (j.saturating_mul(2), j.saturating_mul(2).saturating_add(1)),
            PairLayout::HalfSplit => (j, j.saturating_add(r / 2)),
        }
    }
}

/// What a frequency counts: radians per position (`angle = p f`), or revolutions per
/// position (`angle = 2 pi p f`), the form of models that give periods rather than
/// frequencies (DINOv3's `angles = 2 pi coords / periods`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FrequencyUnit {
    /// Radians per position: every text RoPE, FLUX, Wan, Qwen2-VL.
    #[default]
    Radians,
    /// Revolutions per position: each frequency of the spec (`base^(-2j/r)`, an axis's
    /// list) is multiplied by `2 pi` exactly (in double-double, so a frequency of one
    /// revolution stays exactly one). With f32 positions a pair may then turn a whole
    /// revolution or more a position; the kernels carry those whole revolutions too.
    Revolutions,
}

/// Where a rotation writes each pair's two elements when its output is another buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OutputOrder {
    /// Each element where it was read (the only order of an in-place rotation).
    #[default]
    Pairs,
    /// Interleaved pairs `(2j, 2j + 1)` written as all first elements, then all second
    /// elements: element `2j` to lane `j`, `2j + 1` to lane `j + r/2` (DeepSeek-V3's
    /// `apply_rotary_pos_emb_interleave` in HF transformers: input `[0..7]` at position 0
    /// comes back `[0, 2, 4, 6, 1, 3, 5, 7]`). Lanes past `r` stay where they are. Only for
    /// interleaved pairs, and only where every rotated output is another buffer: out of
    /// place ([`RopeCall::with_output`](crate::RopeCall::with_output)), and in the fused
    /// call for Q into `q_out` and K into its cache (V is copied as it is).
    PairHalves,
}

impl OutputOrder {
    /// The output lane of input lane `lane` of a row whose first `r` lanes rotate.
    pub fn lane(self, r: u64, lane: u64) -> u64 {
        match self {
            OutputOrder::PairHalves if lane < r => lane / 2 + (lane % 2) * (r / 2),
            _ => lane,
        }
    }
}

/// Element type of a tensor in GPU memory. Arithmetic is always f32.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Dtype {
    /// 32-bit float.
    #[default]
    F32,
    /// 16-bit float; needs the device feature `SHADER_F16`. Results round to nearest on store.
    F16,
    /// bfloat16, stored as the 16-bit halves of u32 words (WGSL has no bf16); any adapter.
    /// Results round to nearest even on store.
    BF16,
}

impl Dtype {
    /// Bytes per element.
    pub fn size(self) -> u64 {
        match self {
            Dtype::F32 => 4,
            Dtype::F16 | Dtype::BF16 => 2,
        }
    }
}

pub use crate::axes::{AxisFrequencies, MRope, MRopeOrder};

/// Rotary position embedding: how to rotate. The tensor's shape comes with the tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct RopeSpec {
    /// Rotary dimension `r` (even, at most `head_dim`); `None` rotates the whole head.
    pub rotary_dim: Option<u64>,
    /// Base (theta) of the frequencies `base^(-2j/r)`; 10 000 in RoFormer and LLaMA 1/2.
    pub base: f64,
    /// Which elements pair up.
    pub pair_layout: PairLayout,
    /// Rotate by the negated angle (the backward pass, or undoing a rotation).
    pub inverse: bool,
    /// Frequency scaling for long context.
    pub scaling: Scaling,
    /// Sequence length that length-dependent scalings (dynamic NTK, LongRoPE) see; `None`
    /// uses HF's rule, the largest position of the call + 1, where the host knows the
    /// positions (see [`RopeSpec::scaling_seq_len`]).
    pub scaling_seq_len: Option<u64>,
    /// Multimodal RoPE sections; positions must then be [`Positions::Axes`](crate::Positions::Axes).
    pub mrope: Option<MRope>,
    /// A base of its own for each axis `[t, h, w, l]` of per-axis frequencies
    /// ([`AxisFrequencies::PerAxis`]; diffusers' Cosmos, whose NTK factors raise each axis's
    /// theta); `None` takes [`RopeSpec::base`] for every axis.
    pub axis_bases: Option<[f64; 4]>,
    /// Where an out-of-place rotation writes each pair (see [`OutputOrder`]).
    pub output_order: OutputOrder,
    /// Radians or revolutions per position (see [`FrequencyUnit`]).
    pub frequency_unit: FrequencyUnit,
    /// Lanes at the start of each head that pass through unrotated: the rotated lanes
    /// (`rotary_dim`, the rest of the head by default) start after them, the pairs counted
    /// from there. LTX-Video's and LTX-2's `dim % 6` padding (cos 1, sin 0 in front of the
    /// table). Rotations in place only, through `encode_rope` (not the fused call).
    pub leading_lanes: u64,
    /// Half-split pairs within each of this many equal blocks of the rotated lanes, 1 for
    /// one block (the whole rotated width, `(j, j + r/2)`): with `n` blocks of `B = r / (2n)`
    /// pairs, pair `j` is `(j + (j / B) B, j + (j / B) B + B)`. Gemma 4's vision tower
    /// (`apply_multidimensional_rope`: each axis half-split within its own half of the
    /// head) is 2 over per-axis sections. Half-split pairs only; not in the fused call.
    pub pair_blocks: u64,
    /// A caller's dense frequency table `[axes, heads, pairs]` in place of the spec's
    /// frequencies (see [`LearnedFrequencies`]); `None` computes them from the base.
    pub learned: Option<LearnedFrequencies>,
    /// Round each cos and sin (the attention factor in them) to bf16 before the rotation,
    /// as HF transformers' rotary modules return them in a bf16 model's dtype
    /// (`cos.to(x.dtype)`: Pixtral's and DINOv3's towers, Llama and the other text models):
    /// the model's rounding reproduced, not a more exact result. The products stay f32,
    /// rounded once on store (HF's bf16 arithmetic rounds each). Not in the fused call.
    pub cos_sin_bf16: bool,
    /// Cos and sin of each pair averaged over this many positions a token (1, 2, 4 or 8;
    /// 1 rotates at one position): the positions are `pool` sets of position axes, `[pool,
    /// planes, batch, seq]` ([`Positions::Axes`](crate::Positions::Axes) or
    /// [`Positions::FloatAxes`](crate::Positions::FloatAxes) that many times over), and each
    /// pair turns by the mean of its cos and sin at the positions of its axis (summed in
    /// pairs, so a token that repeats one position in every set rotates exactly as
    /// unpooled). The history tokens of diffusers' Helios and FramePack
    /// (`avg_pool3d` of the cos/sin table over 2x2x2 and 4x4x4 blocks, the edges
    /// replicated): not a rotation (the mean is shorter than 1), reproduced as the models
    /// compute it. Position axes only ([`RopeSpec::mrope`], [`RopeSpec::axes_rope`] and the
    /// others), without a learned table or a cos/sin cache; not in the fused call.
    pub pool: u32,
    /// The pair layout the model's cos and sin tables are laid out for, where it is not
    /// [`RopeSpec::pair_layout`] (`None`: the same): each lane then turns by the angle its
    /// place in such a table gives, within each of [`RopeSpec::pair_blocks`] blocks. diffusers'
    /// ERNIE-Image builds `[t0, t0, t1, t1, ..]` for interleaved pairs and applies it with
    /// `rotate_half` (half-split pairs, table [`PairLayout::Interleaved`]); transformers'
    /// V-JEPA 2 tiles `[t.., t..]` per axis and applies it to interleaved pairs (table
    /// [`PairLayout::HalfSplit`], one block an axis). The two elements of a pair then turn by
    /// different angles: not a rotation, reproduced as the models compute it. Not with a
    /// learned table, the inverse, a cos/sin cache or HF's pair-halves output; not in the
    /// fused call. See [`RopeSpec::lane_angle`].
    pub table_layout: Option<PairLayout>,
}

impl Default for RopeSpec {
    fn default() -> Self {
        Self {
            rotary_dim: None,
            base: 10_000.0,
            pair_layout: PairLayout::HalfSplit,
            inverse: false,
            scaling: Scaling::Default,
            scaling_seq_len: None,
            mrope: None,
            axis_bases: None,
            output_order: OutputOrder::Pairs,
            frequency_unit: FrequencyUnit::Radians,
            leading_lanes: 0,
            pair_blocks: 1,
            learned: None,
            cos_sin_bf16: false,
            pool: 1,
            table_layout: None,
        }
    }
}

impl RopeSpec {
    /// The default: whole head rotated, base 10 000, half-split pairs (HF transformers).
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets where an out-of-place rotation writes each pair ([`OutputOrder::PairHalves`]:
    /// DeepSeek-V3's order in HF transformers).
    pub fn output_order(mut self, order: OutputOrder) -> Self {
        self.output_order = order;
        self
    }

    /// Sets what a frequency counts ([`FrequencyUnit::Revolutions`]: DINOv3's and
    /// Sapiens2's `2 pi c / period`).
    pub fn frequency_unit(mut self, unit: FrequencyUnit) -> Self {
        self.frequency_unit = unit;
        self
    }

    /// Sets the pair layout.
    pub fn pair_layout(mut self, layout: PairLayout) -> Self {
        self.pair_layout = layout;
        self
    }

    /// Sets the base (theta).
    pub fn base(mut self, base: f64) -> Self {
        self.base = base;
        self
    }

    /// Rotates only the first `r` elements of each head.
    pub fn rotary_dim(mut self, r: u64) -> Self {
        self.rotary_dim = Some(r);
        self
    }

    /// Rotates by the negated angle.
    pub fn inverse(mut self, inverse: bool) -> Self {
        self.inverse = inverse;
        self
    }

    /// Sets the frequency scaling.
    pub fn scaling(mut self, scaling: Scaling) -> Self {
        self.scaling = scaling;
        self
    }

    /// Sets the sequence length that dynamic NTK and LongRoPE see. HF transformers uses
    /// `max(position_ids) + 1` over the whole call (every batch row, every M-RoPE axis);
    /// the crate does the same wherever it knows the positions: contiguous positions, and
    /// host positions (`rope_host`, `reference`). With positions only on the GPU (ids,
    /// per-row starts, varlen), a length-dependent scaling needs this set (else the call is
    /// an error): pass the largest position of the call plus one, e.g. the KV cache's
    /// length after the step.
    pub fn scaling_seq_len(mut self, seq_len: u64) -> Self {
        self.scaling_seq_len = Some(seq_len);
        self
    }

    /// Multimodal RoPE with `section` pairs per axis `[t, h, w]`, in contiguous chunks
    /// (Qwen2-VL) or interleaved (`interleaved`: Qwen3-VL); other orders:
    /// [`RopeSpec::mrope_order`].
    pub fn mrope(self, section: [u64; 3], interleaved: bool) -> Self {
        self.mrope_order(
            section,
            if interleaved {
                MRopeOrder::Interleaved
            } else {
                MRopeOrder::Chunks
            },
        )
    }

    /// Multimodal RoPE with `section` pairs per axis `[t, h, w]` in the order `order`.
    pub fn mrope_order(mut self, section: [u64; 3], order: MRopeOrder) -> Self {
        self.mrope = Some(MRope {
            section,
            fourth: 0,
            order,
            frequencies: AxisFrequencies::Shared,
        });
        self
    }

    /// One 1-D RoPE per axis, concatenated: `section` pairs per axis `[t, h, w]` in
    /// contiguous blocks, each block with the frequencies of its own width
    /// ([`AxisFrequencies::PerAxis`]), positions from [`Positions::Axes`](crate::Positions::Axes).
    /// diffusers' `FluxPosEmbed` with `axes_dims_rope` `(16, 56, 56)` is `[8, 28, 28]` over
    /// interleaved pairs, base 10 000; an axis of width 0 is `0` pairs.
    pub fn axes_rope(mut self, section: [u64; 3]) -> Self {
        self.mrope = Some(MRope {
            section,
            fourth: 0,
            order: MRopeOrder::Chunks,
            frequencies: AxisFrequencies::PerAxis,
        });
        self
    }

    /// Positions on axes `[t, h, w]` with `section` pairs each in `order`, each axis's
    /// frequencies rising from `pi/2` ([`AxisFrequencies::Rising`]). diffusers'
    /// `LTXVideoRotaryPosEmbed` over an inner dimension `dim` is `[n, n, n]` with `n = dim /
    /// 6`, [`MRopeOrder::Interleaved`], interleaved pairs, base 10 000, after `dim % 6`
    /// [`RopeSpec::leading_lanes`].
    pub fn axes_rising(mut self, section: [u64; 3], order: MRopeOrder) -> Self {
        self.mrope = Some(MRope {
            section,
            fourth: 0,
            order,
            frequencies: AxisFrequencies::Rising,
        });
        self
    }

    /// Takes the frequencies from a caller's table (see [`RopeSpec::learned`]).
    pub fn learned(mut self, table: LearnedFrequencies) -> Self {
        self.learned = Some(table);
        self
    }

    /// The position planes a call reads: the sections' (3 or 4) times the pooled sets, the
    /// learned table's (1, 3 or 4), else 1.
    pub(crate) fn position_planes(&self) -> u64 {
        match (&self.mrope, &self.learned) {
            (Some(m), _) => m.planes().saturating_mul(u64::from(self.pool.max(1))),
            (None, Some(t)) => t.planes(),
            (None, None) => 1,
        }
    }

    /// Cos and sin averaged over `pool` position sets a token (see [`RopeSpec::pool`]).
    pub fn pooled(mut self, pool: u32) -> Self {
        self.pool = pool;
        self
    }

    /// The pool: 1, 2, 4 or 8, and above 1 only over position axes without a learned table.
    fn check_pool(&self) -> Result<()> {
        if !matches!(self.pool, 1 | 2 | 4 | 8) {
            return Err(Error::InvalidParameter {
                what: "pool",
                value: f64::from(self.pool),
                need: "1, 2, 4 or 8 positions a token",
            });
        }
        if self.pool > 1 && (self.mrope.is_none() || self.learned.is_some()) {
            return Err(Error::Unsupported(
                "pooled positions (RopeSpec::pooled) are sets of position axes: give the spec \
                 axes (RopeSpec::mrope, axes_rope, axes_rope4, axes_rising, axes_dealt), \
                 without a learned table",
            ));
        }
        Ok(())
    }

    /// Why the fused QKV call cannot take this spec (an option only `encode_rope` has), if
    /// it cannot.
    pub(crate) fn fused_refusal(&self) -> Option<&'static str> {
        // The spec options the fused kernel does not take, each with where to go instead.
        let refused = [
            (
                self.learned.is_some(),
                "the fused QKV call takes the spec's frequencies: rotate with a learned table \
                 (RopeSpec::learned) through encode_rope",
            ),
            (
                self.cos_sin_bf16,
                "the fused QKV call keeps cos and sin in f32: round them to bf16 \
                 (RopeSpec::cos_sin_bf16) through encode_rope",
            ),
            (
                self.lane_angles(),
                "the fused QKV call turns both elements of a pair by one angle: take a table \
                 laid out for the other pair layout (RopeSpec::table_layout) through \
                 encode_rope",
            ),
            (
                self.pool > 1,
                "the fused QKV call rotates each token at one position: average cos and sin \
                 over pooled positions (RopeSpec::pooled) through encode_rope",
            ),
            (
                self.pair_blocks > 1,
                "the fused QKV call pairs half-split lanes over the whole rotated width: \
                 rotate pairs in blocks (RopeSpec::pair_blocks) through encode_rope",
            ),
            (
                self.leading_lanes > 0,
                "the fused QKV call rotates from lane 0 (and its QK-norm spans the head): \
                 rotate after leading lanes (RopeSpec::leading_lanes) through encode_rope",
            ),
        ];
        refused.iter().find(|(on, _)| *on).map(|&(_, why)| why)
    }

    /// Cos and sin rounded to bf16 before the rotation (see [`RopeSpec::cos_sin_bf16`]).
    pub fn cos_sin_bf16(mut self, on: bool) -> Self {
        self.cos_sin_bf16 = on;
        self
    }

    /// Half-split pairs within `blocks` equal blocks of the rotated lanes (see
    /// [`RopeSpec::pair_blocks`]).
    pub fn pair_blocks(mut self, blocks: u64) -> Self {
        self.pair_blocks = blocks;
        self
    }

    /// The two elements of pair `j` in rotated lanes `r` wide: [`PairLayout::elements`],
    /// within [`RopeSpec::pair_blocks`] blocks (indices past `u64::MAX` saturate).
    pub fn pair_elements(&self, r: u64, j: u64) -> (u64, u64) {
        let block = (r / 2) / self.pair_blocks.max(1);
        if self.pair_blocks <= 1 || self.pair_layout != PairLayout::HalfSplit || block == 0 {
            return self.pair_layout.elements(r, j);
        }
        let first = j.saturating_add((j / block).saturating_mul(block));
        (first, first.saturating_add(block))
    }

    /// Passes the first `lanes` lanes of each head through unrotated (see
    /// [`RopeSpec::leading_lanes`]).
    pub fn leading_lanes(mut self, lanes: u64) -> Self {
        self.leading_lanes = lanes;
        self
    }

    /// Positions on axes `[t, h, w]` with `section` pairs each, in contiguous blocks, taking
    /// one list `base^(-2i/r)` dealt to the axes in turn ([`AxisFrequencies::Dealt`]):
    /// transformers' Pixtral vision tower, head 64, is `[0, 16, 16]` over half-split pairs,
    /// base 10 000 (height on the even frequencies, width on the odd ones).
    pub fn axes_dealt(mut self, section: [u64; 3]) -> Self {
        self.mrope = Some(MRope {
            section,
            fourth: 0,
            order: MRopeOrder::Chunks,
            frequencies: AxisFrequencies::Dealt,
        });
        self
    }

    /// Per-axis frequencies with a base of their own for each axis `[t, h, w, l]` (the
    /// entries of axes without pairs are ignored, but must be valid bases); see
    /// [`RopeSpec::axis_bases`](RopeSpec#structfield.axis_bases).
    pub fn axis_bases(mut self, bases: [f64; 4]) -> Self {
        self.axis_bases = Some(bases);
        self
    }

    /// [`RopeSpec::axes_rope`] over four axes `[t, h, w, l]` (diffusers' FLUX.2
    /// `Flux2PosEmbed`, `axes_dims_rope` `(32, 32, 32, 32)`: `[16, 16, 16, 16]` over
    /// interleaved pairs, base 2 000), positions `[4, batch, seq]`
    /// ([`Positions::Axes`](crate::Positions::Axes) or `FloatAxes`).
    pub fn axes_rope4(mut self, section: [u64; 4]) -> Self {
        let [t, h, w, l] = section;
        self.mrope = Some(MRope {
            section: [t, h, w],
            fourth: l,
            order: MRopeOrder::Chunks,
            frequencies: AxisFrequencies::PerAxis,
        });
        self
    }

    /// The frequencies of the `r / 2` pairs in radians per position (`base` and the
    /// scaling, or one list per axis, times `2 pi` for [`FrequencyUnit::Revolutions`]) at
    /// sequence length `seq_len`.
    pub(crate) fn frequencies(&self, r: u32, seq_len: u64) -> Result<crate::Frequencies> {
        let mut f = self.frequencies_in_unit(r, seq_len)?;
        if self.frequency_unit == FrequencyUnit::Revolutions {
            for (hi, lo) in f.inv_freq.iter_mut().zip(&mut f.inv_freq_lo) {
                let rad = crate::dd::Dd { hi: *hi, lo: *lo }.mul(crate::dd::TWO_PI);
                (*hi, *lo) = (rad.hi, rad.lo);
            }
        }
        Ok(f)
    }

    /// The frequencies of the `r / 2` pairs in the spec's unit.
    fn frequencies_in_unit(&self, r: u32, seq_len: u64) -> Result<crate::Frequencies> {
        if let Some(m) = self
            .mrope
            .filter(|m| m.frequencies == AxisFrequencies::Dealt)
        {
            let shared = self.scaling.frequencies(r, self.base, seq_len)?;
            let order = m.frequencies.pair_indices(&m.axes(u64::from(r / 2))?);
            return Ok(crate::Frequencies {
                inv_freq: order.iter().map(|&i| shared.inv_freq[i]).collect(),
                inv_freq_lo: order.iter().map(|&i| shared.inv_freq_lo[i]).collect(),
                attention_factor: shared.attention_factor,
            });
        }
        let Some(m) = self.mrope.filter(|m| m.frequencies.per_axis()) else {
            return Ok(self.scaling.frequencies(r, self.base, seq_len)?);
        };
        m.per_axis_frequencies(u64::from(r / 2), self.axis_bases.unwrap_or([self.base; 4]))
    }

    /// The M-RoPE axis of each of the `r / 2` pairs (all 0 without M-RoPE).
    pub(crate) fn pair_axes(&self, r: u64) -> Result<Vec<u32>> {
        match self.mrope {
            Some(m) => m.axes(r / 2),
            None => Ok(vec![0; (r / 2) as usize]),
        }
    }

    /// The widest head a spec rotates: every table sized by the head (frequencies, M-RoPE
    /// axes, angle words) is bounded by it before it is allocated. Models use 64 to 512.
    pub const MAX_HEAD_DIM: u64 = 2 * crate::axes::MAX_PAIRS;

    /// Checks the spec against a head dimension; returns the rotary dimension.
    pub(crate) fn validate(&self, head_dim: u64) -> Result<u64> {
        if head_dim == 0 || !head_dim.is_multiple_of(2) || head_dim > Self::MAX_HEAD_DIM {
            return Err(Error::InvalidHeadDim { head_dim });
        }
        // The lanes after the leading ones: all of them rotate by default.
        let after = head_dim.saturating_sub(self.leading_lanes);
        let r = self.rotary_dim.unwrap_or(after);
        if r == 0 || !r.is_multiple_of(2) || r > after {
            return Err(match self.leading_lanes {
                0 => Error::InvalidRotaryDim {
                    rotary_dim: r,
                    head_dim,
                },
                leading_lanes => Error::InvalidLeadingLanes {
                    leading_lanes,
                    rotary_dim: r,
                    head_dim,
                },
            });
        }
        if self.output_order == OutputOrder::PairHalves
            && self.pair_layout != PairLayout::Interleaved
        {
            return Err(Error::PairHalvesNeedInterleaved);
        }
        self.check_blocks(r)?;
        self.check_pool()?;
        self.check_table_layout()?;
        if let Some(t) = &self.learned {
            t.check(r / 2)?;
            if self.mrope.is_some() || self.scaling != Scaling::Default {
                return Err(Error::Unsupported(
                    "a learned table (RopeSpec::learned) gives every pair's frequency and axes: \
                     no M-RoPE sections and no scaling with it",
                ));
            }
        }
        check_base(self.base)?;
        if let Some(bases) = self.axis_bases {
            bases.into_iter().try_for_each(check_base)?;
            if self.mrope.is_none_or(|m| !m.frequencies.per_axis()) {
                return Err(Error::Unsupported(
                    "a base per axis (RopeSpec::axis_bases) is for per-axis frequencies \
                     (RopeSpec::axes_rope, axes_rope4 or axes_rising)",
                ));
            }
        }
        // Even for an empty view: a bad spec is an error whatever the tensor.
        self.scaling.check_for(r, self.base)?;
        if let Some(m) = self.mrope {
            m.check(r / 2)?;
            if m.frequencies.per_axis() && self.scaling != Scaling::Default {
                return Err(Error::Unsupported(
                    "per-axis frequencies (RopeSpec::axes_rope, axes_rising) take no scaling: \
                     each axis's list is its own (base^(-2k/width), or rising from pi/2); use \
                     Scaling::Default",
                ));
            }
            if m.frequencies == AxisFrequencies::Dealt && self.scaling != Scaling::Default {
                return Err(Error::Unsupported(
                    "dealt frequencies (AxisFrequencies::Dealt) take no scaling: the list \
                     dealt is base^(-2i/r); use Scaling::Default",
                ));
            }
        }
        Ok(r)
    }
}

impl RopeSpec {
    /// Pair blocks: at least one, dividing the `r / 2` pairs, more than one only for
    /// half-split pairs.
    fn check_blocks(&self, r: u64) -> Result<()> {
        let n = self.pair_blocks;
        if n == 0 || !(r / 2).is_multiple_of(n) {
            return Err(Error::InvalidParameter {
                what: "pair_blocks",
                value: n as f64,
                need: "at least 1, dividing the rotated pairs (rotary_dim / 2)",
            });
        }
        if n > 1 && self.pair_layout != PairLayout::HalfSplit && !self.lane_angles() {
            return Err(Error::Unsupported(
                "pair blocks (RopeSpec::pair_blocks) split half-split pairs; interleaved \
                 pairs are the same in any block",
            ));
        }
        Ok(())
    }
}

pub(crate) fn check_base(base: f64) -> Result<()> {
    if base.is_finite() && base > 1.0 {
        Ok(())
    } else {
        Err(Error::InvalidParameter {
            what: "base",
            value: base,
            need: "a finite number greater than 1",
        })
    }
}

/// How the per-head RMS norm of Q and K scales each normalized element.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NormWeight {
    /// `x * w` (Qwen3's `Qwen3RMSNorm`, Llama-style).
    Scale,
    /// `x * (1 + w)` (Gemma's `Gemma3RMSNorm`, whose weights start at zero).
    OnePlus,
}

/// Per-head RMS normalization of Q and K before the rotation, as Qwen3 and Gemma 3 do:
/// `x / sqrt(mean(x²) + eps)` over each head's `head_dim` elements, in f32, then the weight.
#[derive(Clone, Debug, PartialEq)]
pub struct QkNorm {
    /// Q's weights, `head_dim` of them (HF `q_norm.weight`).
    pub q_weight: Vec<f32>,
    /// K's weights, `head_dim` of them (HF `k_norm.weight`).
    pub k_weight: Vec<f32>,
    /// Added to the mean square (HF `rms_norm_eps`).
    pub eps: f32,
    /// How the weights scale.
    pub weight: NormWeight,
}

impl QkNorm {
    /// Checks the weights and eps for heads of `head_dim` elements, as the fused call does:
    /// `head_dim` weights each for Q and K, a finite eps >= 0 and finite factors.
    pub fn check(&self, head_dim: u64) -> Result<()> {
        let lengths = [self.q_weight.len(), self.k_weight.len()];
        if lengths.iter().any(|&n| n as u64 != head_dim) {
            return Err(Error::ShapeMismatch {
                what: "the QK-norm weights must have head_dim values each",
                a: [1, 1, lengths[0] as u64, lengths[1] as u64],
                b: [1, 1, head_dim, head_dim],
            });
        }
        let finite = self.factors().iter().flatten().all(|w| w.is_finite());
        if !(self.eps.is_finite() && self.eps >= 0.0 && finite) {
            return Err(Error::InvalidParameter {
                what: "QK-norm eps or weight",
                value: f64::from(self.eps),
                need: "a finite eps >= 0 and finite weights",
            });
        }
        Ok(())
    }

    /// The factor each element of a head is multiplied by after the normalization: `w` or
    /// `1 + w` (in f32, as HF computes it), Q's then K's.
    pub fn factors(&self) -> [Vec<f32>; 2] {
        [&self.q_weight, &self.k_weight].map(|w| {
            w.iter()
                .map(|&w| match self.weight {
                    NormWeight::Scale => w,
                    NormWeight::OnePlus => 1.0 + w,
                })
                .collect()
        })
    }
}
