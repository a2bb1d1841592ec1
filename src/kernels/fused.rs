//! Host side of `shaders/fused.wgsl`: from the packed projection output, Q rotated and K
//! rotated and V copied into a KV cache, in one dispatch.

use super::cache::{BindKey, Slot};
use super::input::{Reads, resolve_positions, words};
use super::pass::{EncodeReport, PassPositions, Words, fold_grid};
use super::plan::Params;
use super::rope::{Rope, byte_end, check_disjoint, width_for};
use super::{Kernel, Op, Specialization, WORKGROUP, Width};
use crate::error::{Error, Result};
use crate::positions::Positions;
use crate::spec::{OutputOrder, PairLayout, QkNorm};
use crate::tensor::{ArrayView, Layout, TensorView};

/// Where in the KV cache each token goes (the cache's third axis). Two tokens of one call
/// that go to the same entry (packed sequences whose positions restart, with
/// [`CacheIndex::Position`]) leave either one's K and V there: give such tokens slots.
#[derive(Clone, Copy, Debug)]
pub enum CacheIndex<'a> {
    /// Its position (the temporal axis for M-RoPE) in its batch row: a contiguous cache
    /// `[batch, kv_heads, max_seq, head_dim]` in any layout (BHSD, BSHD).
    Position,
    /// Its slot, vLLM's `slot_mapping`: one i32 per token (`[batch, seq]`, row-major), a
    /// negative slot meaning "not cached"; the cache is `[1, kv_heads, num_slots, head_dim]`
    /// (vLLM's `[num_blocks * block_size, kv_heads, head_dim]` is
    /// `Layout::bshd(Dims { batch: 1, heads: kv_heads, seq: num_slots, head_dim })`).
    Slots(ArrayView<'a>),
}

/// The KV cache a fused call writes: K rotated, V as it is.
#[derive(Clone, Copy, Debug)]
pub struct KvCache<'a> {
    /// K cache, `[batch, kv_heads, len, head_dim]` (batch 1 with slots); its own dtype.
    pub k: TensorView<'a>,
    /// V cache, the same shape, strides and dtype as `k` (its own offset and buffer).
    pub v: TensorView<'a>,
    /// Which entry of the third axis each token goes to.
    pub index: CacheIndex<'a>,
    /// A u32 the kernel sets to 1 when a position or slot read on the GPU was past the
    /// cache (that token is then not cached). Positions known on the host are checked there.
    pub overflow_flag: Option<ArrayView<'a>>,
}

/// A fused call: `qkv` is the projection output `[batch, q_heads + 2 kv_heads, seq,
/// head_dim]` (Q heads, then K heads, then V heads; any strides, e.g. the packed BSHD rows of
/// `[tokens, (q_heads + 2 kv_heads) * head_dim]`).
#[derive(Clone, Copy, Debug)]
pub struct QkvCall<'a> {
    /// The packed projection output.
    pub qkv: TensorView<'a>,
    /// KV heads (grouped-query attention: `q_heads` a multiple of it or not).
    pub kv_heads: u64,
    /// The tokens' positions.
    pub positions: Positions<ArrayView<'a>>,
    /// Where K and V go.
    pub cache: KvCache<'a>,
    /// Rotated Q goes here (`[batch, q_heads, seq, head_dim]`, the input's dtype) instead
    /// of back into `qkv`.
    pub q_out: Option<TensorView<'a>>,
    /// Q and K normalized per head before the rotation (Qwen3, Gemma 3); Q in place or
    /// into `q_out`.
    pub qk_norm: Option<&'a QkNorm>,
}

impl<'a> QkvCall<'a> {
    /// A call that rotates Q in place in `qkv`.
    pub fn new(
        qkv: TensorView<'a>,
        kv_heads: u64,
        positions: Positions<ArrayView<'a>>,
        cache: KvCache<'a>,
    ) -> Self {
        Self {
            qkv,
            kv_heads,
            positions,
            cache,
            q_out: None,
            qk_norm: None,
        }
    }

    /// Writes rotated Q to `q_out` instead.
    pub fn with_q_out(mut self, q_out: TensorView<'a>) -> Self {
        self.q_out = Some(q_out);
        self
    }

    /// Normalizes Q and K per head before the rotation (Q in place, or into `q_out`).
    pub fn with_qk_norm(mut self, norm: &'a QkNorm) -> Self {
        self.qk_norm = Some(norm);
        self
    }
}

/// What every block of a fused call shares.
struct Block<'a> {
    spec: Specialization,
    /// Parameters every block has alike.
    params: Params,
    /// The frequency (and norm factor) buffer.
    freq: wgpu::Buffer,
    /// What every block binds alike: the flag (binding 8) and the K and V caches (9, 10).
    shared: [Slot; 3],
    /// The caches' element index of their first element in their windows.
    bases: [u64; 2],
    positions: PassPositions<'a>,
    slots: Option<Words<'a>>,
}

impl Block<'_> {
    /// The parameters, storage bindings (1, 3, 4, 5, 8, 9, 10) and grid of block
    /// `[b0, nb, s0, ns]`.
    fn unit(
        &self,
        rope: &Rope,
        call: &QkvCall<'_>,
        [b0, nb, s0, ns]: [u64; 4],
    ) -> Result<(Params, [Slot; 7], [u32; 2], u64)> {
        let seq = call.qkv.layout.shape[2];
        let mut params = self.params;
        let total = nb * ns * u64::from(params.groups);
        // With QK-norm a workgroup is one token's invocations.
        let size = match call.qk_norm {
            Some(_) => u64::from(params.groups),
            None => WORKGROUP,
        };
        let (workgroups, grid) = fold_grid(total.div_ceil(size));
        (params.n_b, params.n_s, params.tok0) = (nb as u32, ns as u32, s0 as u32);
        (params.total, params.grid_x) = (total as u32, grid[0]);
        let b_shift = b0 * u64::from(params.cache_stride_b);
        params.k_base = (self.bases[0] + b_shift) as u32;
        params.v_base = (self.bases[1] + b_shift) as u32;
        // This block's rows of the input (binding 1) and of Q out (binding 5): their windows,
        // and the element index of their first element and strides there.
        let bind_view = |view: &TensorView<'_>, what| -> Result<(Slot, [u32; 4])> {
            let view = sub_view(view, [b0, nb, s0, ns]);
            let (w, base) = rope.tensor_window(&view, what)?;
            Ok((Some((view.buffer.clone(), w)), fields(base, &view.layout)))
        };
        let (x, f) = bind_view(&call.qkv, "the packed QKV tensor")?;
        [
            params.base,
            params.stride_b,
            params.stride_h,
            params.stride_s,
        ] = f;
        let out = match &call.q_out {
            Some(out) => {
                let (slot, f) = bind_view(out, "q_out")?;
                [
                    params.base2,
                    params.stride2_b,
                    params.stride2_h,
                    params.stride2_s,
                ] = f;
                slot
            }
            None => None,
        };
        let [ids, aux] = self.position_slots(rope, &mut params, [b0, nb, s0, ns], seq);
        let [flag, k, v] = self.shared.clone();
        Ok((params, [x, ids, aux, out, flag, k, v], grid, workgroups))
    }

    /// The ids, starts or cu_seqlens, and the varlen offsets or the slot mapping, bound from
    /// block `[b0, nb, s0, ns]`'s first one (of a call of `seq` tokens per batch row).
    fn position_slots(
        &self,
        rope: &Rope,
        params: &mut Params,
        [b0, nb, s0, ns]: [u64; 4],
        seq: u64,
    ) -> [Slot; 2] {
        let token = b0 * seq + s0;
        let rows = (nb - 1) * seq + ns;
        let (ids, aux) = match self.positions {
            Positions::Start(start) => {
                params.pos_start = start + s0 as u32;
                (None, None)
            }
            Positions::BatchStarts(w) => (Some((w, b0, nb)), None),
            // Float positions are refused for the fused call (`Reads::Fused`); they read as
            // ids would.
            Positions::Ids(w) | Positions::Float(w) => (Some((w, token, rows)), None),
            Positions::Axes(w) | Positions::FloatAxes(w) => (
                Some((w, token, rows + 2 * u64::from(params.axis_stride))),
                None,
            ),
            Positions::Varlen {
                cu_seqlens,
                num_seqs,
                offsets,
            } => {
                params.num_seqs = num_seqs;
                let n = u64::from(num_seqs);
                (Some((cu_seqlens, 0, n + 1)), offsets.map(|o| (o, 0, n)))
            }
        };
        let aux = aux.or(self.slots.map(|s| (s, token, rows)));
        let slot = |array: Option<(Words<'_>, u64, u64)>, base: &mut u32| -> Slot {
            let (w, first, count) = array?;
            let start = (w.first + first) * 4;
            let win = rope.ctx.window(w.buffer, start, count * 4);
            *base = ((start - win.0) / 4) as u32;
            Some((w.buffer.clone(), win))
        };
        let ids = slot(ids, &mut params.ids_base);
        [ids, slot(aux, &mut params.aux_base)]
    }
}

/// The batch rows `[b0, b0 + nb)` and tokens `[s0, s0 + ns)` of `view`.
fn sub_view<'v>(view: &TensorView<'v>, [b0, nb, s0, ns]: [u64; 4]) -> TensorView<'v> {
    let mut v = *view;
    let [sb, _, ss] = v.layout.strides;
    v.layout.offset += b0 * sb + s0 * ss;
    v.layout.shape[0] = nb;
    v.layout.shape[2] = ns;
    v
}

/// The views of a checked call.
struct Views<'a> {
    /// Q heads of `qkv`.
    q: Layout,
    heads: [u64; 2],
    k_cache: &'a TensorView<'a>,
    v_cache: &'a TensorView<'a>,
}

impl Rope {
    /// Records the fused call `call`: Q rotated (in place or into `q_out`), K rotated and V
    /// copied into the KV cache, one dispatch; each angle is computed once per (token,
    /// pair) for every Q and K head.
    pub fn encode_qkv(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        call: &QkvCall<'_>,
    ) -> Result<EncodeReport> {
        let views = self.check_qkv(call)?;
        // Q and K both in HF's order, or attention scores would change: Q must go out.
        if self.spec.output_order == OutputOrder::PairHalves && call.q_out.is_none() {
            return Err(Error::PairHalvesInPlace {
                what: "QkvCall::with_q_out, so that Q is written in the order K is cached",
            });
        }
        let [batch, _, seq, _] = call.qkv.layout.shape;
        if batch * seq == 0 {
            return Ok(EncodeReport::default());
        }
        let block = self.block(call, &views)?;
        let units = self
            .qkv_blocks(call)?
            .into_iter()
            .map(|blk| block.unit(self, call, blk))
            .collect::<Result<Vec<_>>>()?;
        // Through the pair passes' bind group cache: a repeated call (a decode step whose
        // positions are in a buffer) allocates nothing.
        let key = BindKey {
            kernel: Kernel::Fused,
            freq: block.freq.clone(),
            slots: units.iter().map(|u| u.1.clone()).collect(),
            params: self.ctx.params_bytes(units.iter().map(|u| &u.0)),
        };
        let groups = self.ctx.bind_groups_for(key, units.len())?;
        let pipeline = self.ctx.pipeline(block.spec)?;
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("wgpu-posenc fused qkv"),
            timestamp_writes: None,
        });
        pass.set_pipeline(&pipeline);
        for (group, (_, _, grid, _)) in groups.iter().zip(&units) {
            pass.set_bind_group(0, &group.group, &[]);
            pass.dispatch_workgroups(grid[0], grid[1], 1);
        }
        drop(pass);
        #[cfg(feature = "capture")]
        if let Some(capture) = &self.ctx.capture {
            let recorded = groups
                .iter()
                .zip(&units)
                .map(|(g, u)| (block.spec, g.entries.clone(), [u.2[0], u.2[1], 1]))
                .collect();
            capture.record_pass(recorded);
        }
        Ok(EncodeReport {
            dispatches: units.len() as u32,
            blocks: units.len() as u32,
            max_workgroups: units.iter().map(|u| u.3).max().unwrap_or(0),
        })
    }

    /// What every block of a checked call shares: the variant, the parameters, the
    /// frequency (and norm factor) buffer, the caches and the flag.
    fn block<'c>(&self, call: &QkvCall<'c>, views: &Views<'c>) -> Result<Block<'c>> {
        let [batch, _, seq, _] = call.qkv.layout.shape;
        if self.spec.mrope.is_some_and(|m| m.fourth > 0) {
            return Err(Error::Unsupported(
                "the fused QKV call reads three position axes; rotate with a fourth axis \
                 (RopeSpec::axes_rope4) through encode_rope",
            ));
        }
        let reads = Reads::Fused {
            mrope: self.spec.mrope.is_some(),
            planes: 3,
        };
        let (positions, seq_len) = resolve_positions(call.positions, &views.q, reads)?;
        let slots = self.slots(call, &positions, seq_len, views)?;
        let angles = self.angles_at(seq_len)?;
        let (width, span) = self.fused_width(call, views);
        let lanes = width.pairs();
        // With QK-norm, `groups` invocations own a token (see `norm_threads`).
        let head_groups = self.head_dim / 2 / lanes;
        let (groups, span) = match call.qk_norm {
            Some(_) => norm_threads(head_groups)?,
            None => (head_groups / span, span),
        };
        let freq = self.frequency_buffer(call.qk_norm, &angles, lanes)?;
        let pair_halves = self.spec.output_order == OutputOrder::PairHalves;
        let spec = Specialization {
            op: Op::Fused {
                cache: views.k_cache.dtype,
                paged: slots.is_some(),
                q_out: call.q_out.is_some(),
                qk_norm: call.qk_norm.map_or(0, |_| groups as u8),
                subgroups: call.qk_norm.is_some() && groups <= u64::from(self.ctx.subgroup_min),
            },
            positions: positions.mode(),
            pair_halves,
            ..Specialization::new(Kernel::Fused, self.spec.pair_layout, width, call.qkv.dtype)
        };
        let [_, cb, ch, cp] = fields(0, &views.k_cache.layout);
        let mut params = Params {
            n_h: views.heads[0] as u32,
            n_h2: views.heads[1] as u32,
            groups: groups as u32,
            span: span as u32,
            norm_groups: head_groups as u32,
            half: (self.rotary_dim / 2) as u32,
            ids_stride_b: seq as u32,
            axis_stride: (batch * seq) as u32,
            sin_sign: if self.spec.inverse { -1.0 } else { 1.0 },
            scale: angles.attention_factor,
            tokens: 1,
            cache_len: views.k_cache.layout.shape[2] as u32,
            cache_stride_b: if slots.is_some() || views.k_cache.layout.shape[2] == 0 {
                0
            } else {
                cb
            },
            cache_stride_h: ch,
            cache_stride_p: cp,
            norm_eps: call.qk_norm.map_or(0.0, |n| n.eps),
            ..Params::default()
        };
        let (k, k_base) = self.cache_slot(views.k_cache, "the K cache")?;
        let (v, v_base) = self.cache_slot(views.v_cache, "the V cache")?;
        let (flag, flag_base) = self.overflow_flag(call)?;
        params.flag_base = flag_base;
        let shared = [flag, k, v];
        Ok(Block {
            spec,
            params,
            freq,
            shared,
            bases: [k_base, v_base],
            positions,
            slots,
        })
    }

    /// The binding of the call's KV-cache overflow flag (none without one) and the flag's
    /// word index in its window.
    fn overflow_flag(&self, call: &QkvCall<'_>) -> Result<(Slot, u32)> {
        let Some(f) = call.cache.overflow_flag else {
            return Ok((None, 0));
        };
        let f = words(f, 1, "KV cache overflow flag")?;
        let w = self.ctx.window(f.buffer, f.first * 4, 4);
        Ok((
            Some((f.buffer.clone(), w)),
            ((f.first * 4 - w.0) / 4) as u32,
        ))
    }

    /// The frequency words (3 per pair), then with QK-norm the norm factors (where the
    /// shader finds them: after 3 entries per rotated lane group), for groups of `lanes`.
    fn frequency_buffer(
        &self,
        norm: Option<&QkNorm>,
        angles: &super::rope::Angles,
        lanes: u64,
    ) -> Result<wgpu::Buffer> {
        let Some(norm) = norm else {
            return self
                .ctx
                .packed_frequencies(&angles.inv_freq, &self.axes, lanes as usize);
        };
        let mut words =
            crate::angle::pack_frequencies(&angles.inv_freq, &self.axes, lanes as usize);
        let (r, d) = (self.rotary_dim, self.head_dim);
        words.extend(norm_words(norm, self.spec.pair_layout, r, d, lanes));
        self.ctx.frequency_buffer(words)
    }

    /// The slot mapping, checked, or for a cache indexed by positions, the host-known
    /// positions checked against its length.
    fn slots<'c>(
        &self,
        call: &QkvCall<'c>,
        positions: &PassPositions<'c>,
        seq_len: Option<u64>,
        views: &Views<'c>,
    ) -> Result<Option<Words<'c>>> {
        let [batch, _, seq, _] = call.qkv.layout.shape;
        match call.cache.index {
            CacheIndex::Slots(_)
                if matches!(
                    positions,
                    Positions::Varlen {
                        offsets: Some(_),
                        ..
                    }
                ) =>
            {
                Err(Error::Unsupported(
                    "a slot mapping and varlen offsets share one binding of the fused kernel: \
                     give the positions as ids instead",
                ))
            }
            CacheIndex::Slots(s) => Ok(Some(words(s, batch * seq, "slot mapping")?)),
            CacheIndex::Position => {
                let len = views.k_cache.layout.shape[2];
                match seq_len {
                    Some(end) if end > len => Err(Error::KvCacheTooShort {
                        position: end - 1,
                        len,
                    }),
                    _ => Ok(None),
                }
            }
        }
    }

    /// Pairs per invocation (four with vec4 access where the rotated pairs and the tail come
    /// in whole groups and every view is aligned, else one) and lane groups per invocation
    /// (two where the rotated and the tail groups pair up evenly: see BENCHMARKS.md).
    fn fused_width(&self, call: &QkvCall<'_>, views: &Views<'_>) -> (Width, u64) {
        let (r, d) = (self.rotary_dim, self.head_dim);
        let mut layouts = vec![
            &call.qkv.layout,
            &views.k_cache.layout,
            &views.v_cache.layout,
        ];
        layouts.extend(call.q_out.as_ref().map(|q| &q.layout));
        let width = if r.is_multiple_of(8) && (d - r).is_multiple_of(8) {
            width_for(&layouts, d)
        } else {
            Width::X1
        };
        let lanes = width.pairs();
        let (groups, rotated) = (d / 2 / lanes, r / 2 / lanes);
        let two =
            width == Width::X4 && rotated.is_multiple_of(2) && (groups - rotated).is_multiple_of(2);
        (width, if two { 2 } else { 1 })
    }

    /// Blocks `[b0, batches, s0, tokens]` whose input and Q out each fit one binding: the
    /// whole call, or one batch row at a time in chunks of tokens. Every block is checked,
    /// not only the first: a window starts at the block's offset rounded down to the storage
    /// alignment, so blocks of one size at other offsets carry other slack.
    fn qkv_blocks(&self, call: &QkvCall<'_>) -> Result<Vec<[u64; 4]>> {
        let [batch, _, seq, _] = call.qkv.layout.shape;
        let named = [
            (
                Some(&call.qkv),
                "one token of every head of the packed QKV tensor",
            ),
            (call.q_out.as_ref(), "one token of every head of q_out"),
        ];
        let window = |blk: [u64; 4]| {
            named.iter().try_for_each(|(v, what)| match v {
                Some(v) => self.tensor_window(&sub_view(v, blk), what).map(drop),
                None => Ok(()),
            })
        };
        if window([0, batch, 0, seq]).is_ok() {
            return Ok(vec![[0, batch, 0, seq]]);
        }
        let blocks = |n: u64| {
            (0..batch).flat_map(move |b| {
                (0..seq)
                    .step_by(n as usize)
                    .map(move |s0| [b, 1, s0, n.min(seq - s0)])
            })
        };
        let all_fit = |n: u64| blocks(n).all(|blk| window(blk).is_ok());
        // Halve until every block fits, then take the largest size below the last one
        // refused that still fits everywhere (fitting is not monotone in n: block starts
        // move with it; every size taken is checked whole).
        let (mut n, mut refused) = (seq, seq + 1);
        while n > 1 && !all_fit(n) {
            (refused, n) = (n, n.div_ceil(2));
        }
        let mut hi = refused - 1;
        while n < hi {
            let mid = n + (hi - n).div_ceil(2);
            if all_fit(mid) { n = mid } else { hi = mid - 1 }
        }
        // At one token a block that does not fit names its span.
        blocks(n).try_for_each(window)?;
        Ok(blocks(n).collect())
    }

    /// The shapes, dtypes, usages, sizes and overlaps of a fused call.
    fn check_qkv<'c>(&self, call: &'c QkvCall<'c>) -> Result<Views<'c>> {
        let [batch, heads, _, d] = call.qkv.layout.shape;
        if let Some(why) = self.spec.fused_refusal() {
            return Err(Error::Unsupported(why));
        }
        if d != self.head_dim {
            return Err(Error::DimMismatch {
                spec: self.head_dim,
                tensor: d,
            });
        }
        let kv = call.kv_heads;
        let q_heads = heads.saturating_sub(kv.saturating_mul(2));
        if kv == 0 || q_heads == 0 || q_heads + 2 * kv != heads || !d.is_multiple_of(2) {
            return Err(Error::Unsupported(
                "the fused QKV call needs qkv [batch, q_heads + 2 kv_heads, seq, head_dim] \
                 with at least one Q and one KV head and an even head_dim",
            ));
        }
        let mut q = call.qkv.layout;
        q.shape[1] = q_heads;
        let (k_cache, v_cache) = (&call.cache.k, &call.cache.v);
        let [cb, ch, len, cd] = k_cache.layout.shape;
        let cache_batch = match call.cache.index {
            CacheIndex::Position => batch,
            CacheIndex::Slots(_) => 1,
        };
        if [cb, ch, cd] != [cache_batch, kv, d] || v_cache.layout.shape != k_cache.layout.shape {
            return Err(Error::ShapeMismatch {
                what: "the K and V caches must be [batch (1 with slots), kv_heads, len, head_dim]",
                a: k_cache.layout.shape,
                b: [cache_batch, kv, len.max(v_cache.layout.shape[2]), d],
            });
        }
        if v_cache.layout.strides != k_cache.layout.strides || v_cache.dtype != k_cache.dtype {
            return Err(Error::Unsupported(
                "the K and V caches must have the same strides and dtype (their offsets and \
                 buffers may differ)",
            ));
        }
        for dtype in [call.qkv.dtype, k_cache.dtype] {
            self.ctx.check_dtype(dtype)?;
        }
        self.ctx.check_view(&call.qkv, "the packed QKV tensor")?;
        self.ctx.check_view(k_cache, "the K cache")?;
        self.ctx.check_view(v_cache, "the V cache")?;
        q.end()?;
        let mut named = vec![
            ("the packed QKV tensor", &call.qkv),
            ("the K cache", k_cache),
            ("the V cache", v_cache),
        ];
        if let Some(out) = &call.q_out {
            if out.layout.shape != q.shape || out.dtype != call.qkv.dtype {
                return Err(Error::ShapeMismatch {
                    what: "q_out must be [batch, q_heads, seq, head_dim] of the input's dtype",
                    a: out.layout.shape,
                    b: q.shape,
                });
            }
            self.ctx.check_view(out, "q_out")?;
            named.push(("q_out", out));
        }
        if let Some(norm) = call.qk_norm {
            norm.check(d)?;
        }
        for (i, a) in named.iter().enumerate() {
            for b in &named[i + 1..] {
                check_disjoint("the fused QKV call", (a.0, a.1), (b.0, b.1))?;
            }
        }
        Ok(Views {
            q,
            heads: [q_heads, kv],
            k_cache,
            v_cache,
        })
    }

    /// A cache's slot and the element index of its first element there. An empty cache (no
    /// entries) binds a dummy: every token is past it, so nothing is stored and each is
    /// flagged.
    fn cache_slot(&self, view: &TensorView<'_>, what: &'static str) -> Result<(Slot, u64)> {
        if view.layout.shape[2] == 0 {
            return Ok((None, 0));
        }
        let (w, base) = self.tensor_window(view, what)?;
        Ok((Some((view.buffer.clone(), w)), base))
    }

    /// The binding window of a view and the element index of its first element in it.
    fn tensor_window(
        &self,
        view: &TensorView<'_>,
        what: &'static str,
    ) -> Result<((u64, u64), u64)> {
        let elem = view.dtype.size();
        let start = view.layout.offset * elem;
        let end = byte_end(view)?;
        let w = self.ctx.window(view.buffer, start, end - start);
        if w.1 > self.ctx.max_binding {
            return Err(Error::BindingTooSmall {
                what,
                bytes: w.1,
                limit: self.ctx.max_binding,
            });
        }
        Ok((w, (start - w.0) / elem))
    }
}

/// With QK-norm, the invocations that share one token and the lane groups each owns (two
/// where the head has an even number, else one), for a head of `groups` lane groups: a
/// power of two that divides the workgroup, so that a token's invocations meet in one.
fn norm_threads(groups: u64) -> Result<(u64, u64)> {
    let span = if groups.is_multiple_of(2) { 2 } else { 1 };
    let threads = (groups / span).next_power_of_two();
    if threads > WORKGROUP {
        return Err(Error::Unsupported(
            "QK-norm over a head of more than 128 lane groups (head_dim above 256 with one \
             pair per invocation, 1024 with four)",
        ));
    }
    Ok((threads, span))
}

/// The QK-norm factors, per lane group in the order `load_pairs` and `load_tail` read a
/// head's elements (the group's `a` lanes, then its `b` lanes), all of Q's groups, then K's.
fn norm_words(norm: &QkNorm, layout: PairLayout, r: u64, d: u64, lanes: u64) -> Vec<u32> {
    let rotated = r / 2 / lanes;
    let mut words = Vec::with_capacity(2 * d as usize);
    for factors in norm.factors() {
        for g in 0..d / 2 / lanes {
            let elements = |i: u64| {
                if g < rotated {
                    layout.elements(r, g * lanes + i)
                } else {
                    // As `load_tail` reads a tail group: `a` the first `lanes`, `b` the next.
                    let t = r + (g - rotated) * 2 * lanes;
                    (t + i, t + lanes + i)
                }
            };
            let (a, b): (Vec<u32>, Vec<u32>) = (0..lanes)
                .map(|i| {
                    let (ea, eb) = elements(i);
                    (
                        factors[ea as usize].to_bits(),
                        factors[eb as usize].to_bits(),
                    )
                })
                .unzip();
            words.extend(a);
            words.extend(b);
        }
    }
    words
}

/// `[base, stride_b, stride_h, stride_s]` of a view whose first element is at `base` of its
/// binding (all below 2^32: a binding holds at most 4 GiB).
fn fields(base: u64, layout: &Layout) -> [u32; 4] {
    let [b, h, s] = layout.strides;
    [base as u32, b as u32, h as u32, s as u32]
}
