//! Host side of `shaders/rope.wgsl`: validation and the pass for RoPE, in place or out of
//! place, one tensor or Q and K together, angles on the fly or from a cos/sin cache.

use super::input::{Reads, float_axis_words, resolve_positions, words};
use super::pass::{EncodeReport, PairPass, PassCache, PassView, Words};
use super::{Kernel, Second, Specialization, Width};
use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use super::device::Passes;
use crate::dd::Dd;
use crate::error::{Error, Result};
use crate::positions::Positions;
use crate::spec::{OutputOrder, PairLayout, RopeSpec};
use crate::tensor::{ArrayView, CosSinCache, Layout, TensorView};

/// Everything one RoPE call touches, beyond the spec.
#[derive(Clone, Copy, Debug)]
pub struct RopeCall<'a> {
    /// The tensor rotated in place (Q), or the source when `output` is set.
    pub tensor: TensorView<'a>,
    /// Positions of its tokens.
    pub positions: Positions<ArrayView<'a>>,
    /// A second tensor rotated in place in the same dispatch with the same angles (K): the
    /// same batch, sequence and head dim, any number of heads (grouped-query attention).
    pub k: Option<TensorView<'a>>,
    /// Out of place: write the rotated `tensor` here (same shape, any strides), tail
    /// `[r, head_dim)` copied; `tensor` is left as it is.
    pub output: Option<TensorView<'a>>,
    /// Angles from this cache instead of the frequencies.
    pub cache: Option<CosSinCache<'a>>,
}

impl<'a> RopeCall<'a> {
    /// `tensor` in place at `positions`.
    pub fn new(tensor: TensorView<'a>, positions: Positions<ArrayView<'a>>) -> Self {
        Self {
            tensor,
            positions,
            k: None,
            output: None,
            cache: None,
        }
    }

    /// Rotates `k` too, in the same dispatch.
    pub fn with_k(mut self, k: TensorView<'a>) -> Self {
        self.k = Some(k);
        self
    }

    /// Writes the result to `output` instead of in place.
    pub fn with_output(mut self, output: TensorView<'a>) -> Self {
        self.output = Some(output);
        self
    }

    /// Takes the angles from `cache`.
    pub fn with_cache(mut self, cache: CosSinCache<'a>) -> Self {
        self.cache = Some(cache);
        self
    }
}

/// A RoPE spec validated for one head dimension, with its frequencies computed once (and,
/// for the length-dependent scalings, for the last few sequence lengths): build it once
/// with [`PosEnc::rope`](crate::PosEnc::rope) and encode many calls with it, the way a decode loop does.
/// `PosEnc::encode_rope*` are the one-shot forms.
#[derive(Clone, Debug)]
pub struct Rope {
    pub(super) ctx: Passes,
    pub(super) spec: RopeSpec,
    pub(super) head_dim: u64,
    pub(super) rotary_dim: u64,
    pub(super) axes: Vec<u32>,
    /// The frequencies and attention factor when they do not depend on the sequence
    /// length; else the most recent lengths' (at most [`Rope::LENGTHS_KEPT`]).
    fixed: Option<Angles>,
    by_len: Arc<Mutex<VecDeque<(u64, Angles)>>>,
}

/// Frequencies (double-double) and the attention factor.
#[derive(Clone, Debug)]
pub(crate) struct Angles {
    pub inv_freq: Vec<Dd>,
    pub attention_factor: f32,
}

impl Angles {
    /// The angles of `spec` over `rotary_dim` lanes of `head_dim` at sequence length
    /// `seq_len` (length-dependent scalings only), each frequency checked.
    pub(crate) fn of(
        spec: &RopeSpec,
        rotary_dim: u64,
        head_dim: u64,
        seq_len: u64,
    ) -> Result<Self> {
        let r32 = u32::try_from(rotary_dim).map_err(|_| Error::InvalidRotaryDim {
            rotary_dim,
            head_dim,
        })?;
        if let Some(t) = &spec.learned {
            return Ok(Self {
                inv_freq: super::learned::frequencies(t, spec.frequency_unit)?,
                attention_factor: 1.0,
            });
        }
        let f = spec.frequencies(r32, seq_len)?;
        Ok(Angles {
            inv_freq: crate::angle::check_frequencies(&f.inv_freq, &f.inv_freq_lo)?,
            attention_factor: f.attention_factor as f32,
        })
    }
}

impl Passes {
    /// Validates `spec` for tensors of `head_dim` and computes its frequencies: the prepared
    /// form of RoPE, for many calls.
    pub(crate) fn rope(&self, spec: &RopeSpec, head_dim: u64) -> Result<Rope> {
        let r = spec.validate(head_dim)?;
        // The frequencies (three words a pair, a learned table's of every axis and head) must
        // fit one binding.
        let pairs = match &spec.learned {
            Some(t) => t.values.len() as u64,
            None => r / 2,
        };
        if pairs.saturating_mul(12) > self.max_binding {
            return Err(Error::RowTooLarge {
                row_bytes: pairs.saturating_mul(12),
                limit: self.max_binding,
            });
        }
        let axes = spec.pair_axes(r)?;
        let mut rope = Rope {
            ctx: self.clone(),
            spec: spec.clone(),
            head_dim,
            rotary_dim: r,
            axes,
            fixed: None,
            by_len: Arc::default(),
        };
        if !spec.scaling.needs_seq_len() {
            rope.fixed = Some(rope.angles_for(0)?);
        }
        Ok(rope)
    }

    /// Records the RoPE call `call` (see [`RopeCall`] for its options).
    pub(crate) fn encode_rope_call(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        spec: &RopeSpec,
        call: &RopeCall<'_>,
    ) -> Result<EncodeReport> {
        let head_dim = call.tensor.layout.shape[3];
        spec.validate(head_dim)?;
        let views = check_call(self, head_dim, call)?;
        check_order(spec, call)?;
        if views.iter().all(|v| v.layout.rows_count() == 0) {
            // Nothing to rotate: a no-op that allocates nothing sized by the shape.
            return Ok(EncodeReport::default());
        }
        self.rope(spec, head_dim)?
            .encode_checked(encoder, call, &views)
    }
}

/// What a spec refuses of a call's shape, whatever the views (an empty call is refused too):
/// an output order other than the pairs' own needs an output buffer, leading lanes rotate in
/// place, pooled positions take no cos/sin cache.
fn check_order(spec: &RopeSpec, call: &RopeCall<'_>) -> Result<()> {
    if spec.output_order == OutputOrder::PairHalves && (call.output.is_none() || call.k.is_some()) {
        return Err(Error::PairHalvesInPlace {
            what: "RopeCall::with_output, one tensor at a time",
        });
    }
    if spec.leading_lanes > 0 && call.output.is_some() {
        return Err(Error::Unsupported(
            "leading lanes (RopeSpec::leading_lanes) rotate in place: copy the tensor, then \
             rotate the copy",
        ));
    }
    if spec.lane_angles() && call.cache.is_some() {
        return Err(Error::Unsupported(
            "a cos/sin cache has one angle a pair: a table laid out for the other pair layout \
             (RopeSpec::table_layout) takes the angles from the frequencies",
        ));
    }
    if spec.pool > 1 && call.cache.is_some() {
        return Err(Error::Unsupported(
            "a cos/sin cache has one row a position: pooled positions (RopeSpec::pooled) \
             take the angles from the frequencies",
        ));
    }
    Ok(())
}

/// The frequencies and third words of each pair's first elements, then of its second ones
/// (the pairs of their lanes' places in the model's table, [`RopeSpec::lane_angle`]).
fn lane_frequencies(spec: &RopeSpec, r: u64, inv_freq: &[Dd], axes: &[u32]) -> (Vec<Dd>, Vec<u32>) {
    let pairs = spec.element_angle_pairs(r);
    let first = pairs.iter().map(|p| p.0 as usize);
    let order: Vec<usize> = first.chain(pairs.iter().map(|p| p.1 as usize)).collect();
    (
        order.iter().map(|&j| inv_freq[j]).collect(),
        order.iter().map(|&j| axes[j]).collect(),
    )
}

/// The same view from lane `lead` of each row: the rotated lanes and the tail after them.
fn from_lane<'v>(v: &TensorView<'v>, lead: u64) -> TensorView<'v> {
    let mut v = *v;
    v.layout.offset += lead;
    v.layout.shape[3] -= lead;
    v
}

impl Rope {
    /// Length-dependent frequencies kept for this many recent sequence lengths.
    pub const LENGTHS_KEPT: usize = 8;

    /// The spec.
    pub fn spec(&self) -> &RopeSpec {
        &self.spec
    }

    /// The head dimension of the tensors it rotates.
    pub fn head_dim(&self) -> u64 {
        self.head_dim
    }

    /// [`PosEnc::encode_rope`](crate::PosEnc::encode_rope) with this spec.
    pub fn encode(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        tensor: &TensorView<'_>,
        positions: Positions<ArrayView<'_>>,
    ) -> Result<EncodeReport> {
        self.encode_call(encoder, &RopeCall::new(*tensor, positions))
    }

    /// [`PosEnc::encode_rope_qk`](crate::PosEnc::encode_rope_qk) with this spec.
    pub fn encode_qk(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        q: &TensorView<'_>,
        k: &TensorView<'_>,
        positions: Positions<ArrayView<'_>>,
    ) -> Result<EncodeReport> {
        self.encode_call(encoder, &RopeCall::new(*q, positions).with_k(*k))
    }

    /// [`PosEnc::encode_rope_call`](crate::PosEnc::encode_rope_call) with this spec.
    pub fn encode_call(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        call: &RopeCall<'_>,
    ) -> Result<EncodeReport> {
        let views = check_call(&self.ctx, self.head_dim, call)?;
        check_order(&self.spec, call)?;
        if views.iter().all(|v| v.layout.rows_count() == 0) {
            // Nothing to rotate: a no-op that allocates nothing sized by the shape.
            return Ok(EncodeReport::default());
        }
        self.encode_checked(encoder, call, &views)
    }

    /// Encodes a call whose views `check_call` accepted (not all empty); leading lanes
    /// (in place only) as the same views from the first rotated lane.
    fn encode_checked(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        call: &RopeCall<'_>,
        views: &[&TensorView<'_>],
    ) -> Result<EncodeReport> {
        let lead = self.spec.leading_lanes;
        if lead == 0 {
            return self.encode_lanes(encoder, call, views);
        }
        let narrowed = RopeCall {
            tensor: from_lane(&call.tensor, lead),
            k: call.k.as_ref().map(|k| from_lane(k, lead)),
            ..*call
        };
        let views: Vec<TensorView<'_>> = views.iter().map(|v| from_lane(v, lead)).collect();
        let views: Vec<&TensorView<'_>> = views.iter().collect();
        self.encode_lanes(encoder, &narrowed, &views)
    }

    /// Encodes a checked call over views whose rotated lanes start at lane 0.
    fn encode_lanes(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        call: &RopeCall<'_>,
        views: &[&TensorView<'_>],
    ) -> Result<EncodeReport> {
        let layout = call.tensor.layout;
        let (positions, seq_len) = resolve_positions(
            call.positions,
            &layout,
            Reads::Rope {
                mrope: self.spec.position_planes() > 1,
                planes: self.planes(),
            },
        )?;
        let float = matches!(positions, Positions::Float(_) | Positions::FloatAxes(_));
        let cache = self.call_cache(call, float)?;
        // A cache replaces the angles: no length needed.
        let angles = self.angles_at(seq_len.or(cache.is_some().then_some(0)))?;
        // f32 positions: the whole revolutions of frequencies of one or more beside the axes;
        // a learned table's signs and whole revolutions beside its entries.
        let whole = match (&self.spec.learned, float) {
            (Some(t), _) => {
                super::learned::check_heads(
                    t.heads,
                    [Some(&call.tensor), call.k.as_ref()],
                    call.cache.is_some(),
                )?;
                Some(super::learned::words(&t.values, &angles.inv_freq, float)?)
            }
            (None, true) => float_axis_words(&angles.inv_freq, &self.axes)?,
            (None, false) => None,
        };
        let axes = whole.as_deref().unwrap_or(&self.axes);
        let lanes = self
            .spec
            .lane_angles()
            .then(|| lane_frequencies(&self.spec, self.rotary_dim, &angles.inv_freq, axes));
        let layouts: Vec<&Layout> = views.iter().map(|v| &v.layout).collect();
        let (a, second, b) = match (&call.k, &call.output) {
            (Some(k), _) => (&call.tensor, Second::InPlace, Some(k)),
            (None, Some(out)) => (out, Second::Source, Some(&call.tensor)),
            (None, None) => (&call.tensor, Second::None, None),
        };
        let pair_halves = self.spec.output_order == OutputOrder::PairHalves;
        // Pairs per half-split block, where there is more than one block (interleaved pairs
        // in blocks of a table's layout are the same pairs).
        let block = match self.spec.pair_blocks {
            0 | 1 => 0,
            _ if self.spec.pair_layout == PairLayout::Interleaved => 0,
            n => self.rotary_dim / 2 / n,
        };
        fn view<'v>(v: &TensorView<'v>) -> PassView<'v> {
            PassView {
                buffer: v.buffer,
                layout: v.layout,
            }
        }
        let pass = PairPass {
            spec: Specialization {
                positions: positions.mode(),
                from_cache: cache.is_some(),
                pair_halves,
                axes4: self.spec.position_planes() / u64::from(self.spec.pool.max(1)) == 4,
                pool: self.spec.pool.max(1) as u8,
                blocks: block > 0,
                dense: self.spec.learned.as_ref().map_or(0, |t| t.axes as u8),
                cos_sin_bf16: self.spec.cos_sin_bf16,
                lane_angles: lanes.is_some(),
                ..Specialization::new(
                    Kernel::Rope,
                    self.spec.pair_layout,
                    // Four pairs a group need whole groups in every block.
                    width_for(
                        &layouts,
                        if block > 0 {
                            2 * block
                        } else {
                            self.rotary_dim
                        },
                    ),
                    call.tensor.dtype,
                )
            }
            .with_second(second),
            a: view(a),
            b: b.map(view),
            pairs: self.rotary_dim / 2,
            half: self.rotary_dim / 2,
            block,
            dense_heads: self.spec.learned.as_ref().map_or(0, |t| t.heads),
            inv_freq: lanes.as_ref().map_or(&angles.inv_freq, |l| &l.0),
            axes: lanes.as_ref().map_or(axes, |l| &l.1),
            positions,
            // A cache holds the final cos and sin, the attention factor included, as HF's
            // rotary modules and vLLM's cos_sin_cache build them.
            scale: if cache.is_some() {
                1.0
            } else {
                angles.attention_factor
            },
            cache,
            pad_pos: None,
            sin_sign: if self.spec.inverse { -1.0 } else { 1.0 },
        };
        self.ctx.encode_rope_pass(encoder, pass)
    }

    /// The call's cos/sin cache, resolved; f32 positions (`float`) take none, as a cache
    /// has a row per integer position.
    fn call_cache<'c>(&'c self, call: &RopeCall<'c>, float: bool) -> Result<Option<PassCache<'c>>> {
        let Some(c) = &call.cache else {
            return Ok(None);
        };
        if float {
            return Err(Error::PositionsMismatch(
                "a cos/sin cache has a row per integer position: f32 positions take the \
                 angles from the frequencies",
            ));
        }
        let layout = call.tensor.layout;
        let pairs = self.rotary_dim / 2;
        Ok(Some(self.ctx.resolve_cache(
            c,
            pairs,
            &call.positions,
            &layout,
        )?))
    }

    /// The angles of a call whose positions give HF's sequence length `seq_len` (`None`:
    /// positions on the GPU), unless the spec sets its own: borrowed when they do not depend
    /// on the length, so that a call copies nothing.
    /// The position planes the spec reads (3 without position axes, where none are read).
    fn planes(&self) -> u64 {
        self.spec.position_planes().max(3)
    }

    pub(super) fn angles_at(&self, seq_len: Option<u64>) -> Result<Cow<'_, Angles>> {
        if let Some(fixed) = &self.fixed {
            return Ok(Cow::Borrowed(fixed));
        }
        match self.spec.scaling_seq_len.or(seq_len) {
            Some(n) => self.angles_for(n).map(Cow::Owned),
            None => Err(Error::ScalingSeqLenNeeded {
                scaling: self.spec.scaling.name(),
            }),
        }
    }

    /// The frequencies at sequence length `seq_len` (length-dependent scalings keep the
    /// last few).
    fn angles_for(&self, seq_len: u64) -> Result<Angles> {
        let mut kept = self.by_len.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, a)) = kept.iter().find(|(n, _)| *n == seq_len) {
            return Ok(a.clone());
        }
        let angles = Angles::of(&self.spec, self.rotary_dim, self.head_dim, seq_len)?;
        if self.spec.scaling.needs_seq_len() {
            kept.push_front((seq_len, angles.clone()));
            kept.truncate(Self::LENGTHS_KEPT);
        }
        Ok(angles)
    }
}

/// The views of a call, checked: shapes agree, one dtype the device has, usages and
/// sizes, no two sharing an element.
fn check_call<'a>(
    ctx: &Passes,
    head_dim: u64,
    call: &'a RopeCall<'a>,
) -> Result<Vec<&'a TensorView<'a>>> {
    let tensor = &call.tensor;
    let layout = tensor.layout;
    if layout.shape[3] != head_dim {
        return Err(Error::DimMismatch {
            spec: head_dim,
            tensor: layout.shape[3],
        });
    }
    let [b, _, s, d] = layout.shape;
    let mut views = vec![("tensor", tensor)];
    if let Some(k) = &call.k {
        let [kb, _, ks, kd] = k.layout.shape;
        if (kb, ks, kd) != (b, s, d) {
            return Err(Error::ShapeMismatch {
                what: "K's batch, seq and head_dim must be Q's",
                a: layout.shape,
                b: k.layout.shape,
            });
        }
        views.push(("K", k));
    }
    if let Some(out) = &call.output {
        if call.k.is_some() {
            return Err(Error::Unsupported(
                "out of place with K: rotate Q and K in place, or make two out-of-place calls",
            ));
        }
        if out.layout.shape != layout.shape {
            return Err(Error::ShapeMismatch {
                what: "the output's shape must be the input's",
                a: layout.shape,
                b: out.layout.shape,
            });
        }
        views.push(("output", out));
    }
    for (what, view) in &views {
        if view.dtype != tensor.dtype {
            return Err(Error::Unsupported(
                "every tensor of a call must have the same dtype",
            ));
        }
        ctx.check_dtype(view.dtype)?;
        ctx.check_view(view, what)?;
    }
    if let Some(k) = &call.k {
        check_disjoint("Q and K of one call", ("Q", tensor), ("K", k))?;
    }
    if let Some(out) = &call.output {
        check_disjoint("out of place", ("the source", tensor), ("the output", out))?;
    }
    Ok(views.into_iter().map(|(_, v)| v).collect())
}

impl Passes {
    /// Encodes a RoPE pass; Q and K (fused) go in passes of their own where one of them is
    /// empty or one token of all their heads does not fit one binding each.
    fn encode_rope_pass(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        pass: PairPass<'_>,
    ) -> Result<EncodeReport> {
        if pass.spec.second() != Second::InPlace {
            return self.encode_pass(encoder, &pass);
        }
        let alone = |view| PairPass {
            a: view,
            b: None,
            spec: pass.spec.with_second(Second::None),
            ..pass.clone()
        };
        let (q, k) = (alone(pass.a), alone(pass.b.expect("K")));
        if k.a.layout.rows_count() == 0 {
            return self.encode_pass(encoder, &q);
        }
        if q.a.layout.rows_count() == 0 {
            // Q has no heads (K has the same batch and seq).
            return self.encode_pass(encoder, &k);
        }
        if self.plan(&pass).block_shape().is_some() {
            return self.encode_pass(encoder, &pass);
        }
        // One token of every Q and K head does not fit one binding each (e.g. BHSD heads a
        // whole sequence apart): rotate Q and K in passes of their own.
        let report = self.encode_pass(encoder, &q)?;
        Ok(report.merge(self.encode_pass(encoder, &k)?))
    }

    fn resolve_cache<'a>(
        &'a self,
        c: &CosSinCache<'a>,
        pairs: u64,
        positions: &Positions<ArrayView<'_>>,
        layout: &Layout,
    ) -> Result<PassCache<'a>> {
        if c.max_pos == 0 || c.row_stride < pairs || c.max_pos > u64::from(u32::MAX) {
            return Err(Error::Unsupported(
                "a cos/sin cache needs at least one row, at most u32::MAX rows, and rows of at least r/2 values",
            ));
        }
        let values = (c.max_pos - 1) * c.row_stride + pairs;
        let cos = words(c.cos, values, "cos cache")?;
        let sin = words(c.sin, values, "sin cache")?;
        if values * 4 + self.storage_align + 16 > self.max_binding {
            return Err(Error::Unsupported(
                "the cos/sin cache must fit one storage binding of the device",
            ));
        }
        let flag = match (positions, c.overflow_flag) {
            (Positions::Start(start), flag) => {
                let last = u64::from(*start) + layout.shape[2];
                if layout.shape[2] > 0 && last > c.max_pos {
                    return Err(Error::PositionOutOfCache {
                        position: last - 1,
                        max_pos: c.max_pos,
                    });
                }
                match flag {
                    Some(f) => words(f, 1, "cache overflow flag")?,
                    None => Words {
                        buffer: &self.dummy_flag,
                        first: 0,
                    },
                }
            }
            (_, Some(f)) => words(f, 1, "cache overflow flag")?,
            (_, None) => {
                return Err(Error::PositionsMismatch(
                    "a cos/sin cache with positions on the GPU needs an overflow flag \
                     (CosSinCache::with_overflow_flag): positions past the cache are clamped \
                     and flagged there",
                ));
            }
        };
        Ok(PassCache {
            cos,
            sin,
            max_pos: c.max_pos,
            row_stride: c.row_stride,
            flag,
        })
    }

    /// Checks a view's buffer usage and size; returns the bytes it needs.
    pub(crate) fn check_view(&self, tensor: &TensorView<'_>, what: &'static str) -> Result<u64> {
        let usage = tensor.buffer.usage();
        if !usage.contains(wgpu::BufferUsages::STORAGE) {
            return Err(Error::MissingUsage {
                what,
                missing: wgpu::BufferUsages::STORAGE,
            });
        }
        let end = byte_end(tensor)?;
        if end > tensor.buffer.size() {
            return Err(Error::BufferTooSmall {
                what,
                needed: end,
                size: tensor.buffer.size(),
            });
        }
        Ok(end)
    }
}

/// The end of the bytes a view touches, rounded up to a whole u32 word (0 when empty).
pub(crate) fn byte_end(tensor: &TensorView<'_>) -> Result<u64> {
    let layout = &tensor.layout;
    let overflow = Error::ShapeOverflow {
        shape: layout.shape,
        strides: layout.strides,
        limit: "u64",
    };
    let end = layout
        .end()?
        .checked_mul(tensor.dtype.size())
        .ok_or(overflow)?
        .next_multiple_of(4);
    Ok(end)
}

/// Two views of one call must not share an element: K equal to Q (or shifted by a head)
/// would be rotated twice, an output over its source read after it was written. Views of
/// one buffer that interleave without sharing elements (Q and K of a packed QKV projection)
/// are fine.
pub(crate) fn check_disjoint(
    what: &'static str,
    (first, a): (&'static str, &TensorView<'_>),
    (second, b): (&'static str, &TensorView<'_>),
) -> Result<()> {
    if a.buffer != b.buffer {
        return Ok(());
    }
    match crate::tensor::views_share_elements(&a.layout, &b.layout) {
        Some(false) => Ok(()),
        Some(true) => Err(Error::TensorsOverlap {
            what,
            first,
            second,
            offsets: [a.layout.offset, b.layout.offset],
        }),
        None => Err(Error::OverlapUnknown {
            what,
            first,
            second,
        }),
    }
}

/// Vec4 access needs whole groups of 4 pairs (8 elements of a row) and every row of every
/// view to start on a multiple of 4 elements; otherwise the scalar variant runs.
pub(crate) fn width_for(layouts: &[&Layout], row_len: u64) -> Width {
    let aligned = layouts.iter().all(|l| {
        l.offset.is_multiple_of(4)
            && (0..3).all(|i| l.shape[i] <= 1 || l.strides[i].is_multiple_of(4))
    });
    if row_len.is_multiple_of(8) && aligned {
        Width::X4
    } else {
        Width::X1
    }
}
