//! RoPE over three position axes as diffusion transformers rotate: FLUX.1 (axes 16/56/56,
//! text ids of zeros then the image's `(0, row, column)`) and Wan 2.1 (44/42/42 of a 128-wide
//! head, `(frame, row, column)`), Q and K in one dispatch over the cases' buffer read as
//! `[1, S, 32, 128]` (BSHD, as diffusers' attention holds them): Q the first 16 heads, K the
//! other 16. The positions are in one buffer `[3, S]`; no cos/sin table is read.

use wgpu_posenc::{PairLayout, RopeSpec};

/// Which model's axes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AxesModel {
    /// FLUX.1: 512 text tokens (at 1024 px) then 64-wide image rows.
    Flux,
    /// Wan 2.1 at 480 x 832: frames of 30 x 52 patches.
    Wan,
}

/// The model's RoPE: interleaved pairs, one frequency list per axis, base 10 000.
pub fn axes_spec(model: AxesModel) -> RopeSpec {
    let section = match model {
        AxesModel::Flux => [8, 28, 28],
        AxesModel::Wan => [22, 21, 21],
    };
    RopeSpec::new()
        .pair_layout(PairLayout::Interleaved)
        .axes_rope(section)
}

/// The `(t, h, w)` position of token `s` of `seq`.
pub fn axes_position(model: AxesModel, seq: u64, s: u64) -> [u32; 3] {
    match model {
        AxesModel::Flux => {
            // The text takes 512 of FLUX's 4 608 tokens; proportionally at other lengths.
            let text = (seq / 9).min(512);
            match s.checked_sub(text) {
                None => [0, 0, 0],
                Some(i) => [0, (i / 64) as u32, (i % 64) as u32],
            }
        }
        AxesModel::Wan => {
            let (h, w) = (30, 52);
            [(s / (h * w)) as u32, ((s / w) % h) as u32, (s % w) as u32]
        }
    }
}

/// Every token's positions, `[t.. | h.. | w..]` (`Positions::Axes`).
pub fn axes_positions(model: AxesModel, seq: u64) -> Vec<u32> {
    let n = seq as usize;
    let mut out = vec![0; 3 * n];
    for s in 0..seq {
        let p = axes_position(model, seq, s);
        for (a, v) in p.into_iter().enumerate() {
            out[a * n + s as usize] = v;
        }
    }
    out
}
