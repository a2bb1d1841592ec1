//! Splitting a pass into blocks that each fit one storage binding and one dispatch.
//!
//! A block is a box of (batch, head, token) rows. Its rows must all lie inside one binding
//! window of at most `cap_x` elements, its position ids inside one window of `cap_ids` ids,
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
    pub n_b: u32,
    pub n_h: u32,
    pub n_s: u32,
    pub groups: u32,
    pub half: u32,
    pub pos_start: u32,
    pub ids_base: u32,
    pub ids_stride_b: u32,
    pub total: u32,
    pub grid_x: u32,
    pub sin_sign: f32,
    pub scale: f32,
}

/// What the planner needs to know about a pass. Axes are (batch, head, token).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PlanInput {
    pub extents: [u64; 3],
    /// Element strides of the three axes.
    pub strides: [u64; 3],
    /// Elements a row touches from its start (the rotary dim, or d_model).
    pub row_len: u64,
    /// With position ids: the sequence length (the ids' batch stride).
    pub ids_seq: Option<u64>,
    /// Pair groups per row.
    pub groups: u64,
    /// Largest span of elements one binding may cover.
    pub cap_x: u64,
    /// Largest span of ids one binding may cover.
    pub cap_ids: u64,
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
    /// Elements spanned by a block of extents `e` (all >= 1).
    pub fn span(&self, e: [u64; 3]) -> u64 {
        (0..3).fold(self.row_len, |acc, i| {
            acc.saturating_add((e[i] - 1).saturating_mul(self.strides[i]))
        })
    }

    /// Ids spanned by a block of extents `e`.
    pub fn ids_span(&self, e: [u64; 3]) -> u64 {
        match self.ids_seq {
            Some(seq) => (e[0] - 1).saturating_mul(seq).saturating_add(e[2]),
            None => 0,
        }
    }

    fn fits(&self, e: [u64; 3]) -> bool {
        self.span(e) <= self.cap_x
            && self.ids_span(e) <= self.cap_ids
            && e[0].saturating_mul(e[2]).saturating_mul(self.groups) <= self.max_invocations
            // Strides of axes a block steps along are passed to the shader as u32.
            && (0..3).all(|i| e[i] == 1 || self.strides[i] <= u32::MAX as u64)
    }

    /// The block shape: the largest extents, axis by axis in order of increasing stride,
    /// that fit; `None` if not even one row fits.
    pub fn block_shape(&self) -> Option<[u64; 3]> {
        let mut e = [1u64; 3];
        if !self.fits(e) {
            return None;
        }
        let mut order = [0usize, 1, 2];
        order.sort_by_key(|&i| (self.strides[i], i));
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

    fn input(extents: [u64; 3], strides: [u64; 3], row_len: u64, cap_x: u64) -> PlanInput {
        PlanInput {
            extents,
            strides,
            row_len,
            ids_seq: None,
            groups: 4,
            cap_x,
            cap_ids: u64::MAX,
            max_invocations: 1 << 30,
        }
    }

    /// Every row is covered exactly once and every block fits its binding.
    fn check_tiling(p: &PlanInput) {
        let blocks = p.blocks().expect("plan");
        let mut seen = vec![0u8; (p.extents[0] * p.extents[1] * p.extents[2]) as usize];
        for blk in &blocks {
            assert!(p.span(blk.extent) <= p.cap_x, "{blk:?} spans too much");
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
    fn a_row_larger_than_the_binding_has_no_plan() {
        assert!(input([1, 1, 1], [0, 0, 0], 100, 99).blocks().is_none());
    }

    #[test]
    fn ids_and_invocations_bound_the_block() {
        let mut p = input([4, 2, 100], [200 * 8 * 2, 8, 16], 8, u64::MAX);
        p.ids_seq = Some(100);
        p.cap_ids = 150;
        p.max_invocations = 1000;
        for blk in p.blocks().unwrap() {
            assert!(p.ids_span(blk.extent) <= 150);
            assert!(blk.extent[0] * blk.extent[2] * 4 <= 1000);
        }
        check_tiling(&p);
    }
}
