//! Splitting a pass into blocks that each fit one storage binding and one dispatch.
//!
//! A block is a box of (batch, head, token) rows. Its rows must all lie inside one binding
//! window of at most `cap` elements (per tensor), its position ids inside one window of `cap_ids` ids,
//! and its invocations (batch x token x pair groups; heads are looped inside an invocation)
//! under `max_invocations`. Blocks grow greedily along the axes in order of increasing
//! stride, so a contiguous tensor that fits is one block, and one that does not is cut along
//! its slowest axes first.

use bytemuck::{Pod, Zeroable};

/// The uniform block of `shaders/common.wgsl`, field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct Params {
    pub base: u32,
    pub stride_b: u32,
    pub stride_h: u32,
    pub stride_s: u32,
    pub base2: u32,
    pub stride2_b: u32,
    pub stride2_h: u32,
    pub stride2_s: u32,
    pub n_b: u32,
    pub n_h: u32,
    pub n_h2: u32,
    pub n_s: u32,
    pub groups: u32,
    pub half: u32,
    pub tail: u32,
    pub tail_chunk: u32,
    pub pos_start: u32,
    pub ids_base: u32,
    pub ids_stride_b: u32,
    pub axis_stride: u32,
    pub aux_base: u32,
    pub num_seqs: u32,
    pub tok0: u32,
    pub pad_pos: u32,
    pub max_pos: u32,
    pub cos_base: u32,
    pub sin_base: u32,
    pub cache_stride: u32,
    pub flag_base: u32,
    pub total: u32,
    pub grid_x: u32,
    pub sin_sign: f32,
    pub scale: f32,
    pub span: u32,
    pub tokens: u32,
    pub k_base: u32,
    pub v_base: u32,
    pub cache_stride_b: u32,
    pub cache_stride_h: u32,
    pub cache_stride_p: u32,
    pub cache_len: u32,
    pub norm_eps: f32,
    pub norm_groups: u32,
    /// Pairs per half-split block (`RopeSpec::pair_blocks`; read where `BLOCKS` is set).
    pub block: u32,
    /// A caller's table (`RopeSpec::learned`): `freq` entries between its axes and heads,
    /// and the first head of view A's block and of view B's.
    pub dense_axis: u32,
    pub dense_head: u32,
    pub dense_h0: u32,
    pub dense_h0_b: u32,
}

/// One tensor a block touches: its strides along (batch, head, token), its head count,
/// the elements a row touches from its start, and the largest span one binding may cover.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ViewSpan {
    pub strides: [u64; 3],
    pub heads: u64,
    pub row_len: u64,
    pub cap: u64,
}

/// Which ids a block reads.
#[derive(Clone, Copy, Debug)]
pub(crate) enum IdsSpan {
    None,
    /// One per batch row.
    PerBatch,
    /// `[batch, seq]`.
    PerToken {
        seq: u64,
    },
    /// `planes` planes `[planes, batch, seq]` (3 or 4), `axis_stride` apart.
    Axes {
        seq: u64,
        axis_stride: u64,
        planes: u64,
    },
    /// All of them, whatever the block (cu_seqlens).
    Whole(u64),
}

/// What the planner needs to know about a pass. Axes are (batch, head, token) of view A.
#[derive(Clone, Debug)]
pub(crate) struct PlanInput {
    pub extents: [u64; 3],
    /// View A first, then view B if the pass has one.
    pub views: Vec<ViewSpan>,
    /// False when view B has a head count of its own: blocks then take every head.
    pub split_heads: bool,
    pub ids: IdsSpan,
    /// Largest span of ids one binding may cover.
    pub cap_ids: u64,
    /// Pair groups per row.
    pub groups: u64,
    /// Largest number of invocations in one dispatch.
    pub max_invocations: u64,
}

/// A box of rows: `start` and `extent` per axis (batch, head, token).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Block {
    pub start: [u64; 3],
    pub extent: [u64; 3],
}

impl PlanInput {
    /// Heads of `view` a block of extents `e` covers.
    fn heads(&self, view: &ViewSpan, e: [u64; 3]) -> u64 {
        if view.heads == self.extents[1] {
            e[1]
        } else {
            view.heads
        }
    }

    /// Elements of `view` spanned by a block of extents `e` (all >= 1).
    pub fn span(&self, view: &ViewSpan, e: [u64; 3]) -> u64 {
        let e = [e[0], self.heads(view, e), e[2]];
        (0..3).fold(view.row_len, |acc, i| {
            acc.saturating_add((e[i].max(1) - 1).saturating_mul(view.strides[i]))
        })
    }

    /// Ids spanned by a block of extents `e`.
    pub fn ids_span(&self, e: [u64; 3]) -> u64 {
        let per_token = |seq: u64| (e[0] - 1).saturating_mul(seq).saturating_add(e[2]);
        match self.ids {
            IdsSpan::None => 0,
            IdsSpan::PerBatch => e[0],
            IdsSpan::PerToken { seq } => per_token(seq),
            IdsSpan::Axes {
                seq,
                axis_stride,
                planes,
            } => {
                let others = planes.saturating_sub(1);
                per_token(seq).saturating_add(axis_stride.saturating_mul(others))
            }
            IdsSpan::Whole(n) => n,
        }
    }

    fn fits(&self, e: [u64; 3]) -> bool {
        self.views.iter().all(|v| {
            let stepped = [e[0], self.heads(v, e), e[2]];
            self.span(v, e) <= v.cap
                // Strides of axes a block steps along are passed to the shader as u32.
                && (0..3).all(|i| stepped[i] <= 1 || v.strides[i] <= u32::MAX as u64)
        }) && self.ids_span(e) <= self.cap_ids
            && e[0].saturating_mul(e[2]).saturating_mul(self.groups) <= self.max_invocations
    }

    /// The block shape: the largest extents, axis by axis in order of increasing stride of
    /// view A, that fit; `None` if not even one row (one token of every head, when heads
    /// cannot be split) fits.
    pub fn block_shape(&self) -> Option<[u64; 3]> {
        let mut e = [1, if self.split_heads { 1 } else { self.extents[1] }, 1];
        if !self.fits(e) {
            return None;
        }
        let strides = self.views[0].strides;
        let mut order: Vec<usize> = (0..3).filter(|&i| i != 1 || self.split_heads).collect();
        order.sort_by_key(|&i| (strides[i], i));
        for i in order {
            // Largest n in [1, extent] with the block still fitting (fits is monotone in n).
            let (mut lo, mut hi) = (1u64, self.extents[i]);
            while lo < hi {
                let mid = lo + (hi - lo).div_ceil(2);
                let mut trial = e;
                trial[i] = mid;
                if self.fits(trial) {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
            e[i] = lo;
            if lo < self.extents[i] {
                break;
            }
        }
        Some(e)
    }

    /// Tiles the whole view with blocks of the planned shape (edge blocks are smaller).
    pub fn blocks(&self) -> Option<Vec<Block>> {
        if self.extents.contains(&0) {
            return Some(Vec::new());
        }
        let shape = self.block_shape()?;
        let mut blocks = Vec::new();
        let count = |i: usize| self.extents[i].div_ceil(shape[i]);
        for bb in 0..count(0) {
            for hb in 0..count(1) {
                for sb in 0..count(2) {
                    let start = [bb * shape[0], hb * shape[1], sb * shape[2]];
                    let extent = [0, 1, 2].map(|i| shape[i].min(self.extents[i] - start[i]));
                    blocks.push(Block { start, extent });
                }
            }
        }
        Some(blocks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Params` is mirrored by hand in `shaders/common.wgsl`: the offset of every field, as
    /// naga lays out the WGSL struct, must be the Rust one, and so must the size.
    #[test]
    fn params_layout_matches_the_shader() {
        macro_rules! offsets {
            ($($f:ident),* $(,)?) => {
                vec![$((stringify!($f), std::mem::offset_of!(Params, $f) as u32)),*]
            };
        }
        let rust = offsets!(
            base,
            stride_b,
            stride_h,
            stride_s,
            base2,
            stride2_b,
            stride2_h,
            stride2_s,
            n_b,
            n_h,
            n_h2,
            n_s,
            groups,
            half,
            tail,
            tail_chunk,
            pos_start,
            ids_base,
            ids_stride_b,
            axis_stride,
            aux_base,
            num_seqs,
            tok0,
            pad_pos,
            max_pos,
            cos_base,
            sin_base,
            cache_stride,
            flag_base,
            total,
            grid_x,
            sin_sign,
            scale,
            span,
            tokens,
            k_base,
            v_base,
            cache_stride_b,
            cache_stride_h,
            cache_stride_p,
            cache_len,
            norm_eps,
            norm_groups,
            block,
            dense_axis,
            dense_head,
            dense_h0,
            dense_h0_b,
        );
        let spec = crate::kernels::Specialization::new(
            crate::kernels::Kernel::Rope,
            crate::spec::PairLayout::HalfSplit,
            crate::kernels::Width::X4,
            crate::spec::Dtype::F32,
        );
        let module = naga::front::wgsl::parse_str(spec.source()).expect("wgsl");
        let (_, ty) = module
            .types
            .iter()
            .find(|(_, t)| t.name.as_deref() == Some("Params"))
            .expect("struct Params");
        let naga::TypeInner::Struct { members, span } = &ty.inner else {
            panic!("Params is a struct");
        };
        let wgsl: Vec<(&str, u32)> = members
            .iter()
            .map(|m| (m.name.as_deref().unwrap_or(""), m.offset))
            .collect();
        assert_eq!(wgsl, rust);
        assert_eq!(*span as usize, size_of::<Params>());
    }

    fn input(extents: [u64; 3], strides: [u64; 3], row_len: u64, cap: u64) -> PlanInput {
        PlanInput {
            extents,
            views: vec![ViewSpan {
                strides,
                heads: extents[1],
                row_len,
                cap,
            }],
            split_heads: true,
            ids: IdsSpan::None,
            groups: 4,
            cap_ids: u64::MAX,
            max_invocations: 1 << 30,
        }
    }

    /// Every row is covered exactly once and every block fits its binding.
    fn check_tiling(p: &PlanInput) {
        let blocks = p.blocks().expect("plan");
        let mut seen = vec![0u8; (p.extents[0] * p.extents[1] * p.extents[2]) as usize];
        for blk in &blocks {
            for v in &p.views {
                assert!(p.span(v, blk.extent) <= v.cap, "{blk:?} spans too much");
            }
            for b in 0..blk.extent[0] {
                for h in 0..blk.extent[1] {
                    for s in 0..blk.extent[2] {
                        let (b, h, s) = (blk.start[0] + b, blk.start[1] + h, blk.start[2] + s);
                        seen[((b * p.extents[1] + h) * p.extents[2] + s) as usize] += 1;
                    }
                }
            }
        }
        assert!(seen.iter().all(|&n| n == 1));
    }

    #[test]
    fn a_view_that_fits_is_one_block() {
        let p = input([2, 4, 16], [4096, 1024, 64], 64, 1 << 20);
        assert_eq!(p.blocks().unwrap().len(), 1);
    }

    #[test]
    fn large_bhsd_is_cut_along_heads() {
        // [1, 40, 8192, 128] f32 with a 128 MiB binding: 32 heads fit, then 8.
        let cap = (128 << 20) / 4 - 64;
        let p = input([1, 40, 8192], [40 * 8192 * 128, 8192 * 128, 128], 128, cap);
        let blocks = p.blocks().unwrap();
        assert_eq!(
            blocks.iter().map(|b| b.extent[1]).collect::<Vec<_>>(),
            vec![31, 9]
        );
        check_tiling(&p);
    }

    #[test]
    fn tilings_cover_every_row_once() {
        for (extents, strides, row, cap) in [
            ([3, 5, 7], [5 * 7 * 16, 7 * 16, 16], 16, 200),
            ([3, 5, 7], [7 * 5 * 16, 16, 5 * 16], 12, 333),
            ([2, 1, 9], [9 * 8, 1000, 8], 8, 8),
            ([4, 3, 2], [100, 30, 10], 10, 75),
        ] {
            check_tiling(&input(extents, strides, row, cap));
        }
    }

    #[test]
    fn a_second_view_with_its_own_heads_keeps_all_heads() {
        // Q [1, 8, 64, 16] BSHD and K [1, 2, 64, 16] BSHD: blocks split tokens only.
        let mut p = input([1, 8, 64], [64 * 8 * 16, 16, 8 * 16], 16, 8 * 16 * 10);
        p.views.push(ViewSpan {
            strides: [64 * 2 * 16, 16, 2 * 16],
            heads: 2,
            row_len: 16,
            cap: 1 << 20,
        });
        p.split_heads = false;
        let blocks = p.blocks().unwrap();
        assert!(blocks.len() > 1);
        assert!(blocks.iter().all(|b| b.extent[1] == 8));
        check_tiling(&p);
    }

    #[test]
    fn a_row_larger_than_the_binding_has_no_plan() {
        assert!(input([1, 1, 1], [0, 0, 0], 100, 99).blocks().is_none());
    }

    #[test]
    fn ids_and_invocations_bound_the_block() {
        let mut p = input([4, 2, 100], [200 * 8 * 2, 8, 16], 8, u64::MAX);
        p.ids = IdsSpan::PerToken { seq: 100 };
        p.cap_ids = 150;
        p.max_invocations = 1000;
        for blk in p.blocks().unwrap() {
            assert!(p.ids_span(blk.extent) <= 150);
            assert!(blk.extent[0] * blk.extent[2] * 4 <= 1000);
        }
        check_tiling(&p);
    }
}
