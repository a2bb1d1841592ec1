//! Encoding one pair pass: planning its blocks, binding a window of each tensor (and of the
//! position ids) per block, and dispatching each block's invocations (their bind groups
//! come through `groups.rs`).

use std::sync::Arc;

use super::bind::overlap;
use super::cache::{BindKey, BoundGroup, Slot};
use super::device::Passes;
use super::plan::{Block, Params, PlanInput, ViewSpan};
use super::{Kernel, Second, Specialization, WORKGROUP, Width};
use crate::error::{Error, Result};
use crate::tensor::Layout;

pub(crate) use super::input::{PairPass, PassCache, PassPositions, PassView, Words};

/// A block's window of one view: the binding window, the element index of the block's
/// first row, the strides of the axes it steps along (0 for the others), and its heads.
struct ViewWindow<'a> {
    buffer: &'a wgpu::Buffer,
    window: (u64, u64),
    first: u64,
    strides: [u32; 3],
    heads: u64,
}

/// The small arrays of a pass bound whole by every dispatch: the varlen offsets (with the
/// index of the first in their window) and the cos/sin cache with its cos, sin and flag
/// windows.
struct WholeArrays<'a> {
    aux: Option<Window<'a>>,
    aux_base: u64,
    cache: Option<(PassCache<'a>, [(u64, u64); 3])>,
}

/// A binding window `(offset, size)` of a buffer.
type Window<'a> = (&'a wgpu::Buffer, (u64, u64));

/// One dispatch of a pass: its parameters, the windows of its tensor bindings (A, then B if
/// it has its own) and of its ids, its grid, its variant, and what it reports.
struct Dispatch<'a> {
    params: Params,
    windows: Vec<Window<'a>>,
    ids: Option<Window<'a>>,
    grid: [u32; 2],
    spec: Specialization,
    workgroups: u64,
    blocks: u32,
}

/// The tensor windows of a dispatch, and whether view B goes through A's binding: views of
/// one buffer whose windows meet (Q and K of a packed QKV buffer, an output just after its
/// source) are bound once, by a window covering both (the planner gave each half a binding
/// so that it fits). Sets the view parameters.
fn bind_views<'a>(
    params: &mut Params,
    a: &ViewWindow<'a>,
    b: Option<&ViewWindow<'a>>,
    elem: u64,
) -> (Vec<Window<'a>>, bool) {
    [params.stride_b, params.stride_h, params.stride_s] = a.strides;
    let mut windows = vec![(a.buffer, a.window)];
    let mut shared = false;
    if let Some(b) = b {
        [params.stride2_b, params.stride2_h, params.stride2_s] = b.strides;
        params.n_h2 = b.heads as u32;
        if b.buffer == a.buffer && overlap(a.window, b.window) {
            let lo = a.window.0.min(b.window.0);
            let hi = (a.window.0 + a.window.1).max(b.window.0 + b.window.1);
            windows[0].1 = (lo, hi - lo);
            shared = true;
        } else {
            windows.push((b.buffer, b.window));
        }
        let origin = if shared { windows[0].1.0 } else { b.window.0 };
        params.base2 = ((b.first * elem - origin) / elem) as u32;
    }
    params.base = ((a.first * elem - windows[0].1.0) / elem) as u32;
    (windows, shared)
}

/// What an encode call recorded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EncodeReport {
    /// Compute dispatches recorded: one per block of the view, or one per two blocks of few
    /// heads each.
    pub dispatches: u32,
    /// Blocks the view was cut into, each within one storage binding.
    pub blocks: u32,
    /// Workgroups in the largest dispatch; above 65 535 they are folded into a 2-D grid.
    pub max_workgroups: u64,
}

impl EncodeReport {
    pub(crate) fn merge(self, other: EncodeReport) -> EncodeReport {
        EncodeReport {
            dispatches: self.dispatches + other.dispatches,
            blocks: self.blocks + other.blocks,
            max_workgroups: self.max_workgroups.max(other.max_workgroups),
        }
    }
}

/// Bytes of slack one binding window of `layout` may need beyond its span: the start aligned
/// down to the storage alignment, the end rounded up to 16 bytes. Both vanish when every
/// block start and end is aligned already (a contiguous tensor at an aligned offset), so
/// such a tensor of exactly the binding limit still takes one binding.
fn slack(ctx: &Passes, layout: &Layout, row_len: u64, elem: u64) -> u64 {
    let mut g = ctx.storage_align;
    for (i, &stride) in layout.strides.iter().enumerate() {
        if layout.shape[i] > 1 {
            g = gcd(g, stride * elem);
        }
    }
    g = gcd(gcd(g, layout.offset * elem), row_len * elem);
    if g >= 16 {
        ctx.storage_align - g
    } else {
        ctx.storage_align + 16
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

impl Passes {
    /// The block plan of a pass, or `None` when not even one row fits one binding.
    pub(crate) fn plan(&self, pass: &PairPass<'_>) -> PlanInput {
        let elem = pass.spec.dtype.size();
        let [b, h, s, _] = pass.a.layout.shape;
        let row_len = row_len(pass);
        // Two views of one buffer may have to share one binding (see `encode_pass`): each
        // gets half of it.
        let shared = shares_binding(pass);
        let cap = if shared {
            self.max_binding / 2
        } else {
            self.max_binding
        };
        let view = |v: &PassView<'_>| {
            let room = cap.saturating_sub(slack(self, &v.layout, row_len, elem));
            ViewSpan {
                strides: v.layout.strides,
                heads: v.layout.shape[1],
                row_len,
                cap: (room / elem).min(u32::MAX as u64),
            }
        };
        let mut views = vec![view(&pass.a)];
        views.extend(pass.b.as_ref().map(view));
        // Every position set of a pooled spec, each of three or four planes.
        let planes = if pass.spec.axes4 { 4 } else { 3 } * u64::from(pass.spec.pool.max(1));
        let ids = pass.positions.ids_span(b, s, planes);
        PlanInput {
            extents: [b, h, s],
            views,
            split_heads: pass.spec.second() != Second::InPlace,
            ids,
            cap_ids: (self.max_binding.saturating_sub(self.storage_align + 16) / 4)
                .min(u32::MAX as u64),
            groups: pass.pairs / pass.spec.width.pairs() / span(pass),
            // Keeps every per-dispatch count well inside u32.
            max_invocations: 1 << 30,
        }
    }

    /// Why not even one row fits: the binding, or half of it where two views of one buffer
    /// may share it (the error says which, and the size that would do).
    fn row_error(&self, pass: &PairPass<'_>, input: &PlanInput) -> Error {
        let elem = pass.spec.dtype.size();
        let row_bytes = input
            .views
            .iter()
            .map(|v| input.span(v, [1, 1, 1]))
            .max()
            .unwrap_or(0)
            .saturating_mul(elem);
        let slack = [Some(&pass.a), pass.b.as_ref()]
            .into_iter()
            .flatten()
            .map(|v| slack(self, &v.layout, row_len(pass), elem))
            .max()
            .unwrap_or(0);
        let need = row_bytes.saturating_add(slack);
        if shares_binding(pass) && need <= self.max_binding {
            Error::SharedRowTooLarge {
                row_bytes,
                limit: self.max_binding,
                need: need.saturating_mul(2),
            }
        } else {
            Error::RowTooLarge {
                row_bytes,
                limit: self.max_binding,
            }
        }
    }

    pub(crate) fn encode_pass(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        pass: &PairPass<'_>,
    ) -> Result<EncodeReport> {
        let input = self.plan(pass);
        let blocks = input.blocks().ok_or_else(|| self.row_error(pass, &input))?;
        if blocks.is_empty() {
            return Ok(EncodeReport::default());
        }
        let whole = self.whole_arrays(pass);
        let (units, spec) = self.units(pass, &input, &blocks);
        let dispatches: Vec<Dispatch<'_>> = units
            .iter()
            .map(|(blk, partner)| self.dispatch(pass, &input, &whole, spec, blk, partner.as_ref()))
            .collect();
        let freq =
            self.packed_frequencies(pass.inv_freq, pass.axes, pass.spec.width.pairs() as usize)?;
        let bind_groups = self.cached_bind_groups(&dispatches, &whole, freq, blocks.len())?;
        let pipelines: Vec<wgpu::ComputePipeline> = dispatches
            .iter()
            .map(|d| self.pipeline(d.spec))
            .collect::<Result<_>>()?;
        let mut cpass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("wgpu-posenc"),
            timestamp_writes: None,
        });
        for ((bind_group, d), pipeline) in bind_groups.iter().zip(&dispatches).zip(&pipelines) {
            cpass.set_pipeline(pipeline);
            cpass.set_bind_group(0, &bind_group.group, &[]);
            cpass.dispatch_workgroups(d.grid[0], d.grid[1], 1);
        }
        drop(cpass);
        #[cfg(feature = "capture")]
        if let Some(capture) = &self.capture {
            let recorded = bind_groups
                .iter()
                .zip(&dispatches)
                .map(|(bg, d)| (d.spec, bg.entries.clone(), [d.grid[0], d.grid[1], 1]))
                .collect();
            capture.record_pass(recorded);
        }
        Ok(dispatches
            .iter()
            .fold(EncodeReport::default(), |r, d| EncodeReport {
                dispatches: r.dispatches + 1,
                blocks: r.blocks + d.blocks,
                max_workgroups: r.max_workgroups.max(d.workgroups),
            }))
    }

    /// The small arrays every block binds whole (varlen offsets, cos/sin cache, flag).
    fn whole_arrays<'a>(&self, pass: &PairPass<'a>) -> WholeArrays<'a> {
        let whole = |w: Words<'_>, count: u64| self.window(w.buffer, w.first * 4, count * 4);
        let (aux, aux_base) = match pass.positions {
            PassPositions::Varlen {
                offsets: Some(o),
                num_seqs,
                ..
            } => {
                let win = whole(o, u64::from(num_seqs));
                (Some((o.buffer, win)), (o.first * 4 - win.0) / 4)
            }
            _ => (None, 0),
        };
        let cache = pass.cache.map(|c| {
            let rows = c.max_pos * c.row_stride;
            let windows = [whole(c.cos, rows), whole(c.sin, rows), whole(c.flag, 1)];
            (c, windows)
        });
        WholeArrays {
            aux,
            aux_base,
            cache,
        }
    }

    /// The dispatch units of a pass: one block each, or two head blocks of the same tokens.
    ///
    /// A RoPE tensor cut into blocks of few heads (BHSD with long sequences: a 128 MiB
    /// binding holds 4 heads of 65 536 tokens) dispatches two head blocks of the same tokens
    /// together, the second through the K binding, so that each angle serves twice the
    /// heads. Measured on lavapipe at S = 65 536: interleaved 0.83 -> 0.91 of the identity,
    /// half-split 0.69 -> 0.85; with 15 heads a block (S = 16 384) it lost (0.83 -> 0.70
    /// half-split), more concurrent streams than the cache holds.
    fn units(
        &self,
        pass: &PairPass<'_>,
        input: &PlanInput,
        blocks: &[Block],
    ) -> (Vec<(Block, Option<Block>)>, Specialization) {
        let pair_heads = pass.spec.kernel() == Kernel::Rope
            && pass.spec.second() == Second::None
            && blocks.len() > 1
            && blocks.iter().all(|b| b.extent[1] <= PAIR_HEADS_UP_TO)
            && blocks.iter().any(|b| b.extent[1] < pass.a.layout.shape[1]);
        if !pair_heads {
            return (blocks.iter().map(|b| (*b, None)).collect(), pass.spec);
        }
        // Two writable windows of one buffer must not meet (WebGPU): partners whose aligned
        // windows touch go alone.
        let elem = pass.spec.dtype.size();
        let window = |b: &Block| self.view_window(input, 0, &pass.a, b, elem).window;
        let units = pair_head_blocks(blocks)
            .into_iter()
            .flat_map(|(blk, partner)| match partner {
                Some(o) if overlap(window(&blk), window(&o)) => vec![(blk, None), (o, None)],
                _ => vec![(blk, partner)],
            })
            .collect();
        let spec = pass.spec.with_second(Second::InPlace);
        (units, spec)
    }

    /// The parameters, windows and grid of one dispatch: block `blk` of view A, and view B
    /// (K or the source) or the partner head block of A.
    fn dispatch<'a>(
        &self,
        pass: &PairPass<'a>,
        input: &PlanInput,
        whole: &WholeArrays<'a>,
        spec: Specialization,
        blk: &Block,
        partner: Option<&Block>,
    ) -> Dispatch<'a> {
        let elem = pass.spec.dtype.size();
        let [_, _, s, _] = pass.a.layout.shape;
        let groups = input.groups;
        let span = span(pass);
        // Tokens per invocation: the sinusoidal kernels step the angle from token to token
        // with contiguous positions (see `shaders/sinusoidal.wgsl`); RoPE shares it across
        // heads instead.
        let tokens = match (pass.spec.kernel(), pass.positions) {
            (Kernel::Sinusoidal, PassPositions::Start(_)) => {
                sinusoidal_tokens(pass.a.layout.shape[0] * s * groups)
            }
            _ => 1,
        };
        // The elements past the pairs that the pass writes: see `row_len`.
        let tail = row_len(pass) - (pass.half + pass.pairs);
        let total = blk.extent[0] * blk.extent[2].div_ceil(tokens) * groups;
        let (workgroups, grid) = fold_grid(total.div_ceil(WORKGROUP));
        let mut params = Params {
            n_b: blk.extent[0] as u32,
            n_h: blk.extent[1] as u32,
            n_s: blk.extent[2] as u32,
            groups: groups as u32,
            half: pass.half as u32,
            block: pass.block as u32,
            tail: tail as u32,
            // Even shares, so that no two invocations write the same bf16 word.
            tail_chunk: tail.div_ceil(groups).next_multiple_of(2) as u32,
            ids_stride_b: s as u32,
            tok0: blk.start[2] as u32,
            pad_pos: pass.pad_pos.unwrap_or(u32::MAX),
            aux_base: whole.aux_base as u32,
            sin_sign: pass.sin_sign,
            scale: pass.scale,
            span: span as u32,
            tokens: tokens as u32,
            total: total as u32,
            grid_x: grid[0],
            ..Params::default()
        };
        if pass.spec.dense > 0 {
            // The table's rows of pair groups: one per (axis, head).
            let g = pass.pairs / pass.spec.width.pairs();
            params.dense_head = if pass.dense_heads > 1 {
                3 * g as u32
            } else {
                0
            };
            params.dense_axis = (3 * g * pass.dense_heads) as u32;
            params.dense_h0 = blk.start[1] as u32;
            params.dense_h0_b = partner.map_or(blk.start[1], |o| o.start[1]) as u32;
        }
        let a = self.view_window(input, 0, &pass.a, blk, elem);
        let b = match (&pass.b, partner) {
            (Some(view), _) => Some(self.view_window(input, 1, view, blk, elem)),
            (None, Some(other)) => Some(self.view_window(input, 0, &pass.a, other, elem)),
            (None, None) => None,
        };
        let (windows, shared) = bind_views(&mut params, &a, b.as_ref(), elem);
        let ids = self.ids_window(&mut params, pass, input, blk);
        if let Some((c, [cos, sin, flag])) = &whole.cache {
            params.max_pos = c.max_pos as u32;
            params.cache_stride = c.row_stride as u32;
            params.cos_base = ((c.cos.first * 4 - cos.0) / 4) as u32;
            params.sin_base = ((c.sin.first * 4 - sin.0) / 4) as u32;
            params.flag_base = ((c.flag.first * 4 - flag.0) / 4) as u32;
        }
        Dispatch {
            params,
            windows,
            ids,
            grid,
            spec: spec.with_shared(shared),
            workgroups,
            blocks: 1 + u32::from(partner.is_some()),
        }
    }

    /// The window of the position ids (or starts, or cu_seqlens) block `blk` reads; sets the
    /// position parameters.
    fn ids_window<'a>(
        &self,
        params: &mut Params,
        pass: &PairPass<'a>,
        input: &PlanInput,
        blk: &Block,
    ) -> Option<Window<'a>> {
        let s = pass.a.layout.shape[2];
        let (w, at) = match pass.positions {
            PassPositions::Start(start) => {
                params.pos_start = start + blk.start[2] as u32;
                return None;
            }
            PassPositions::BatchStarts(w) => (w, w.first + blk.start[0]),
            PassPositions::Ids(w)
            | PassPositions::Axes(w)
            | PassPositions::Float(w)
            | PassPositions::FloatAxes(w) => {
                params.axis_stride = (pass.a.layout.shape[0] * s) as u32;
                (w, w.first + blk.start[0] * s + blk.start[2])
            }
            PassPositions::Varlen {
                cu_seqlens,
                num_seqs,
                ..
            } => {
                params.num_seqs = num_seqs;
                (cu_seqlens, cu_seqlens.first)
            }
        };
        let win = self.window(w.buffer, at * 4, input.ids_span(blk.extent) * 4);
        params.ids_base = ((at * 4 - win.0) / 4) as u32;
        Some((w.buffer, win))
    }

    /// The bind groups of `dispatches`: from the cache when a recent pass had the same
    /// buffers, windows and parameters, else made (and cached when small).
    fn cached_bind_groups(
        &self,
        dispatches: &[Dispatch<'_>],
        whole: &WholeArrays<'_>,
        freq: wgpu::Buffer,
        blocks: usize,
    ) -> Result<Arc<[BoundGroup]>> {
        let uniform = self.params_bytes(dispatches.iter().map(|d| &d.params));
        // Storage bindings 1, 3, 4, 5, 6, 7, 8 of each dispatch (the frequencies, binding 2,
        // are the same for all): a buffer window, or None for a dummy.
        let own = |(b, w): (&wgpu::Buffer, (u64, u64))| Some((b.clone(), w));
        let slots: Vec<[Slot; 7]> = dispatches
            .iter()
            .map(|d| {
                let [cos, sin, flag] = match &whole.cache {
                    Some((c, [cos, sin, flag])) => [
                        own((c.cos.buffer, *cos)),
                        own((c.sin.buffer, *sin)),
                        own((c.flag.buffer, *flag)),
                    ],
                    None => [None, None, None],
                };
                [
                    own(d.windows[0]),
                    d.ids.and_then(own),
                    whole.aux.and_then(own),
                    d.windows.get(1).copied().and_then(own),
                    cos,
                    sin,
                    flag,
                ]
            })
            .collect();
        let key = BindKey {
            kernel: dispatches[0].spec.kernel(),
            freq,
            slots,
            params: uniform,
        };
        self.bind_groups_for(key, blocks)
    }

    /// The binding window of `view` for block `blk` (view index `i` of the plan): the
    /// elements of its rows, and the strides of the axes the block steps along.
    fn view_window<'b>(
        &self,
        input: &PlanInput,
        i: usize,
        view: &PassView<'b>,
        blk: &Block,
        elem: u64,
    ) -> ViewWindow<'b> {
        // A second view with heads of its own (K) takes all of them in every block.
        let own_heads = i == 1 && (view.layout.shape[1] != input.extents[1] || !input.split_heads);
        let (h0, eh) = if own_heads {
            (0, view.layout.shape[1])
        } else {
            (blk.start[1], blk.extent[1])
        };
        let start = [blk.start[0], h0, blk.start[2]];
        let ext = [blk.extent[0], eh, blk.extent[2]];
        let first = view.layout.offset
            + (0..3)
                .map(|a| start[a] * view.layout.strides[a])
                .sum::<u64>();
        let span = input.span(&input.views[i], ext);
        let stepped = |a: usize| {
            if ext[a] > 1 {
                view.layout.strides[a] as u32
            } else {
                0
            }
        };
        ViewWindow {
            buffer: view.buffer,
            window: self.window(view.buffer, first * elem, span * elem),
            first,
            strides: [stepped(0), stepped(1), stepped(2)],
            heads: eh,
        }
    }

    /// A binding window `(offset, size)` of `buffer` covering bytes `[start, start + len)`:
    /// the offset aligned down to the storage alignment, the size rounded up to 16 bytes
    /// (whole vec4s) but not past the buffer's end.
    pub(crate) fn window(&self, buffer: &wgpu::Buffer, start: u64, len: u64) -> (u64, u64) {
        let offset = start / self.storage_align * self.storage_align;
        let end = (start + len)
            .next_multiple_of(16)
            .min(buffer.size() / 4 * 4);
        (offset, end - offset)
    }
}

/// Elements of a row a pass touches: out of place the tail is copied, and a sinusoidal row
/// of odd width ends with an element of its own, so those rows are touched to their end.
fn row_len(pass: &PairPass<'_>) -> u64 {
    if pass.spec.second() == Second::Source || pass.spec.kernel() == Kernel::Sinusoidal {
        pass.a.layout.shape[3]
    } else {
        2 * pass.pairs
    }
}

/// Whether the pass's two views are in one buffer, so that they may have to share one
/// binding.
fn shares_binding(pass: &PairPass<'_>) -> bool {
    pass.b.is_some_and(|b| b.buffer == pass.a.buffer)
}

/// Pair groups per invocation: two where a row has an even number of vec4 groups (see
/// `shaders/rope.wgsl`), else one.
fn span(pass: &PairPass<'_>) -> u64 {
    let groups = pass.pairs / pass.spec.width.pairs();
    // Each element at its own angle: one group, its second rotation from the groups after.
    if pass.spec.width == Width::X4 && groups.is_multiple_of(2) && !pass.spec.lane_angles {
        2
    } else {
        1
    }
}

/// `(workgroups, [x, y])`: a 2-D grid of at least `workgroups` with both sides at most
/// 65 535, as square as the x limit allows, so that at most `y - 1` workgroups are idle (the
/// shaders linearize `(x, y)` and return past the end).
pub(crate) fn fold_grid(workgroups: u64) -> (u64, [u32; 2]) {
    let y = workgroups.div_ceil(65_535).max(1);
    let x = workgroups.div_ceil(y);
    (workgroups, [x as u32, y as u32])
}

/// Tokens per invocation of a sinusoidal pass with `rows` (batch x token x group) work items:
/// up to 32 (the more, the fewer frequency loads and 64-bit products per pair; 32 measured
/// 1.6x over one on CPU drivers), but no fewer than 2^16 invocations left, so that a large
/// GPU still has work for every core.
fn sinusoidal_tokens(rows: u64) -> u64 {
    let mut tokens = 32;
    while tokens > 1 && rows.div_ceil(tokens) < 1 << 16 {
        tokens /= 2;
    }
    tokens
}

/// Head blocks of at most this many heads are dispatched in pairs (see `encode_pass`).
const PAIR_HEADS_UP_TO: u64 = 8;

/// Pairs the blocks that cover the same batches and tokens (different heads), in order;
/// an odd one out goes alone.
fn pair_head_blocks(blocks: &[Block]) -> Vec<(Block, Option<Block>)> {
    let mut units: Vec<(Block, Option<Block>)> = Vec::with_capacity(blocks.len().div_ceil(2));
    let mut open: Vec<usize> = Vec::new();
    for blk in blocks {
        let same = |b: &Block| {
            (b.start[0], b.start[2], b.extent[0], b.extent[2])
                == (blk.start[0], blk.start[2], blk.extent[0], blk.extent[2])
        };
        match open.iter().position(|&u| same(&units[u].0)) {
            Some(i) => {
                let u = open.swap_remove(i);
                units[u].1 = Some(*blk);
            }
            None => {
                open.push(units.len());
                units.push((*blk, None));
            }
        }
    }
    units
}
