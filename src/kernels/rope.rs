//! Host side of `shaders/rope.wgsl`: validation and the pass for RoPE, in place or out of
//! place, one tensor or Q and K together, angles on the fly or from a cos/sin cache.

use super::pass::{EncodeReport, PairPass, PassCache, PassPositions, PassView, Words};
use super::{Kernel, Second, Specialization, Width};
use crate::context::PosEnc;
use crate::dd::Dd;
use crate::error::{Error, Result};
use crate::spec::RopeSpec;
use crate::tensor::{ArrayView, CosSinCache, Layout, Positions, TensorView};

/// Everything one RoPE call touches, beyond the spec.
#[derive(Clone, Copy, Debug)]
pub struct RopeCall<'a> {
    /// The tensor rotated in place (Q), or the source when `output` is set.
    pub tensor: TensorView<'a>,
    /// Positions of its tokens.
    pub positions: Positions<'a>,
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
    pub fn new(tensor: TensorView<'a>, positions: Positions<'a>) -> Self {
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

impl PosEnc {
    /// Records RoPE in place over `tensor` into `encoder` (nothing is submitted).
    ///
    /// Every pair of the first `r` elements of each `(batch, head, token)` row is rotated by
    /// `position * f_j`; elements `[r, head_dim)` and everything outside the view are left
    /// as they are.
    pub fn encode_rope(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        spec: &RopeSpec,
        tensor: &TensorView<'_>,
        positions: Positions<'_>,
    ) -> Result<EncodeReport> {
        self.encode_rope_call(encoder, spec, &RopeCall::new(*tensor, positions))
    }

    /// Records RoPE in place over Q and K in one dispatch: each angle is computed once per
    /// (token, pair) and applied to every Q and K head. K may have fewer heads (GQA).
    pub fn encode_rope_qk(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        spec: &RopeSpec,
        q: &TensorView<'_>,
        k: &TensorView<'_>,
        positions: Positions<'_>,
    ) -> Result<EncodeReport> {
        self.encode_rope_call(encoder, spec, &RopeCall::new(*q, positions).with_k(*k))
    }

    /// Records the RoPE call `call` (see [`RopeCall`] for its options).
    pub fn encode_rope_call(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        spec: &RopeSpec,
        call: &RopeCall<'_>,
    ) -> Result<EncodeReport> {
        let tensor = &call.tensor;
        let layout = tensor.layout;
        let r = spec.validate(layout.shape[3])?;
        let [b, _, s, _] = layout.shape;
        let mut views = vec![("tensor", tensor)];
        if let Some(k) = &call.k {
            let [kb, _, ks, kd] = k.layout.shape;
            if (kb, ks, kd) != (b, s, layout.shape[3]) {
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
            self.check_dtype(view.dtype)?;
            self.check_view(view, what)?;
        }
        if let Some(k) = &call.k {
            check_disjoint("Q and K of one call", ("Q", tensor), ("K", k))?;
        }
        if let Some(out) = &call.output {
            check_disjoint("out of place", ("the source", tensor), ("the output", out))?;
        }
        if views.iter().all(|(_, v)| v.layout.rows_count() == 0) {
            // Nothing to rotate: a no-op that allocates nothing sized by the shape.
            return Ok(EncodeReport::default());
        }
        let (positions, seq_len) =
            resolve_positions(call.positions, &layout, spec.mrope.is_some())?;
        let pairs = r / 2;
        let axes = match spec.mrope {
            Some(m) => m.axes(pairs)?,
            None => vec![0; pairs as usize],
        };
        let r32 = u32::try_from(r).map_err(|_| Error::InvalidRotaryDim {
            rotary_dim: r,
            head_dim: layout.shape[3],
        })?;
        let seq_len = match (spec.scaling_seq_len, seq_len) {
            (Some(n), _) => n,
            (None, Some(n)) => n,
            (None, None) if spec.scaling.needs_seq_len() && call.cache.is_none() => {
                return Err(Error::ScalingSeqLenNeeded {
                    scaling: spec.scaling.name(),
                });
            }
            (None, None) => 0,
        };
        let freqs = spec.scaling.frequencies(r32, spec.base, seq_len)?;
        let cache = match &call.cache {
            Some(c) => Some(self.resolve_cache(c, pairs, &call.positions, &layout)?),
            None => None,
        };
        let layouts: Vec<&Layout> = views.iter().map(|(_, v)| &v.layout).collect();
        let (a, second, bview) = match (&call.k, &call.output) {
            (Some(k), _) => (tensor, Second::InPlace, Some(k)),
            (None, Some(out)) => (out, Second::Source, Some(tensor)),
            (None, None) => (tensor, Second::None, None),
        };
        let pass = PairPass {
            spec: Specialization {
                positions: positions.mode(),
                from_cache: cache.is_some(),
                second,
                ..Specialization::new(
                    Kernel::Rope,
                    spec.pair_layout,
                    width_for(&layouts, r),
                    tensor.dtype,
                )
            },
            a: PassView {
                buffer: a.buffer,
                layout: a.layout,
            },
            b: bview.map(|v| PassView {
                buffer: v.buffer,
                layout: v.layout,
            }),
            pairs,
            inv_freq: check_frequencies(&freqs.inv_freq, &freqs.inv_freq_lo)?,
            axes,
            positions,
            cache,
            pad_pos: None,
            sin_sign: if spec.inverse { -1.0 } else { 1.0 },
            // A cache holds the final cos and sin, the attention factor included, as HF's
            // rotary modules and vLLM's cos_sin_cache build them.
            scale: if cache.is_some() {
                1.0
            } else {
                freqs.attention_factor as f32
            },
        };
        if second == Second::InPlace {
            // One of the two alone, as a pass of its own.
            let alone = |view| PairPass {
                a: view,
                b: None,
                spec: Specialization {
                    second: Second::None,
                    ..pass.spec
                },
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
            // One token of every Q and K head does not fit one binding each (e.g. BHSD heads
            // a whole sequence apart): rotate Q and K in passes of their own.
            let report = self.encode_pass(encoder, &q)?;
            return Ok(report.merge(self.encode_pass(encoder, &k)?));
        }
        self.encode_pass(encoder, &pass)
    }

    fn resolve_cache<'a>(
        &'a self,
        c: &CosSinCache<'a>,
        pairs: u64,
        positions: &Positions<'_>,
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
fn byte_end(tensor: &TensorView<'_>) -> Result<u64> {
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
fn check_disjoint(
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

/// The frequencies as double-double values, each finite, non-negative and at most
/// [`crate::angle::MAX_FREQUENCY`] (above it angles would not be exact).
pub(crate) fn check_frequencies(hi: &[f64], lo: &[f64]) -> Result<Vec<Dd>> {
    hi.iter()
        .zip(lo)
        .map(|(&hi, &lo)| {
            if hi.is_finite() && (0.0..=crate::angle::MAX_FREQUENCY).contains(&hi) {
                Ok(Dd { hi, lo })
            } else {
                Err(Error::InvalidParameter {
                    what: "frequency (radians per position)",
                    value: hi,
                    need: "finite, non-negative and at most 2^40: larger ones alias and \
                           cannot be reduced exactly (check the base or the timescales)",
                })
            }
        })
        .collect()
}

/// Checks that `view` holds `count` 4-byte values and has `STORAGE` usage.
pub(crate) fn words<'a>(view: ArrayView<'a>, count: u64, what: &'static str) -> Result<Words<'a>> {
    if !view.buffer.usage().contains(wgpu::BufferUsages::STORAGE) {
        return Err(Error::MissingUsage {
            what,
            missing: wgpu::BufferUsages::STORAGE,
        });
    }
    if !view.offset.is_multiple_of(4) {
        return Err(Error::MisalignedOffset {
            what,
            offset: view.offset,
            elem: 4,
        });
    }
    let available = view.buffer.size().saturating_sub(view.offset) / 4;
    if available < count {
        return Err(Error::PositionIdsTooShort {
            what,
            needed: count,
            available,
        });
    }
    Ok(Words {
        buffer: view.buffer,
        first: view.offset / 4,
    })
}

/// Checks positions against a view; returns them resolved and, for contiguous positions,
/// the sequence length that length-dependent scalings see (HF: the largest position + 1).
pub(crate) fn resolve_positions<'a>(
    positions: Positions<'a>,
    layout: &Layout,
    mrope: bool,
) -> Result<(PassPositions<'a>, Option<u64>)> {
    let [b, _, s, _] = layout.shape;
    // `planes * batch * seq` ids.
    let tokens = |planes: u64| {
        b.checked_mul(s)
            .and_then(|t| t.checked_mul(planes))
            .ok_or(Error::ShapeOverflow {
                shape: layout.shape,
                strides: layout.strides,
                limit: "u64",
            })
    };
    if mrope != matches!(positions, Positions::Axes(_)) {
        return Err(Error::PositionsMismatch(
            "M-RoPE (RopeSpec::mrope) and Positions::Axes go together: give both or neither",
        ));
    }
    let resolved = match positions {
        Positions::Start(start) => {
            check_contiguous_positions(start, s)?;
            return Ok((PassPositions::Start(start), Some(u64::from(start) + s)));
        }
        Positions::BatchStarts(v) => PassPositions::BatchStarts(words(v, b, "batch starts")?),
        Positions::Ids(v) => PassPositions::Ids(words(v, tokens(1)?, "position ids")?),
        Positions::Axes(v) => PassPositions::Axes(words(v, tokens(3)?, "M-RoPE position ids")?),
        Positions::Varlen {
            cu_seqlens,
            num_seqs,
            offsets,
        } => {
            if b != 1 || num_seqs == 0 {
                return Err(Error::PositionsMismatch(
                    "varlen positions need a view of batch 1 holding every token on its seq axis, \
                     and at least one sequence",
                ));
            }
            let n = u64::from(num_seqs);
            PassPositions::Varlen {
                cu_seqlens: words(cu_seqlens, n + 1, "cu_seqlens")?,
                num_seqs,
                offsets: offsets.map(|o| words(o, n, "varlen offsets")).transpose()?,
            }
        }
    };
    Ok((resolved, None))
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

/// `start + seq - 1` must be a u32 position.
pub(crate) fn check_contiguous_positions(start: u32, seq: u64) -> Result<()> {
    if seq > 0 && u64::from(start).saturating_add(seq - 1) > u64::from(u32::MAX) {
        return Err(Error::PositionOverflow {
            start: u64::from(start),
            seq,
        });
    }
    Ok(())
}
