//! RoPE over position axes as diffusion transformers rotate: FLUX.1 (axes 16/56/56, text ids
//! of zeros then the image's `(0, row, column)`), Wan 2.1 (44/42/42 of a 128-wide head,
//! `(frame, row, column)`) and FLUX.2 (four axes 32/32/32/32, base 2 000, text ids
//! `(0, 0, 0, l)` then the image's `(0, row, column, 0)`), Q and K in one dispatch over the
//! cases' buffer read as `[1, S, 32, 128]` (BSHD, as diffusers' attention holds them): Q the
//! first 16 heads, K the other 16. The positions are in one buffer `[3 or 4, S]`; no cos/sin
//! table is read. Mochi's form: a learned table `[3, 16, 64]` (one frequency a pair, head and
//! axis) at Wan's grid, so that every head computes angles of its own.

use wgpu_posenc::{LearnedFrequencies, PairLayout, RopeSpec};

/// Which model's axes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AxesModel {
    /// FLUX.1: 512 text tokens (at 1024 px) then 64-wide image rows.
    Flux,
    /// Wan 2.1 at 480 x 832: frames of 30 x 52 patches.
    Wan,
    /// FLUX.2: as FLUX.1's tokens, on four axes.
    Flux2,
    /// Mochi: a learned table per head over Wan's grid.
    Mochi,
}

/// The position planes of a model's spec.
pub fn planes(model: AxesModel) -> usize {
    if model == AxesModel::Flux2 { 4 } else { 3 }
}

/// The model's RoPE: interleaved pairs, one frequency list per axis, base 10 000.
pub fn axes_spec(model: AxesModel) -> RopeSpec {
    let spec = RopeSpec::new().pair_layout(PairLayout::Interleaved);
    match model {
        AxesModel::Flux => spec.axes_rope([8, 28, 28]),
        AxesModel::Wan => spec.axes_rope([22, 21, 21]),
        AxesModel::Flux2 => spec.base(2000.0).axes_rope4([16, 16, 16, 16]),
        AxesModel::Mochi => spec.learned(mochi_table(None)),
    }
}

/// A `[3, 16, 64]` table as RoPE-Mixed fills one (pair k: 10 000^(-2k/128) along a direction
/// of its own), deterministic; `head` takes one head's rows alone.
pub fn mochi_table(head: Option<u64>) -> LearnedFrequencies {
    let heads: Vec<u64> = head.map_or((0..16).collect(), |h| vec![h]);
    let mut values = Vec::new();
    for a in 0..3u64 {
        for &h in &heads {
            for k in 0..64u64 {
                let angle = (h * 64 + k) as f64 * 0.7;
                let dir = [angle.cos() * 0.6, angle.sin() * 0.6, 0.53];
                values.push(dir[a as usize] * 10_000f64.powf(-((2 * k) as f64) / 128.0));
            }
        }
    }
    LearnedFrequencies::new(3, heads.len() as u64, values)
}

/// The `(t, h, w)` (FLUX.2: `(t, h, w, l)`) position of token `s` of `seq`.
pub fn axes_position(model: AxesModel, seq: u64, s: u64) -> Vec<u32> {
    // The text takes 512 of FLUX's 4 608 tokens; proportionally at other lengths.
    let text = (seq / 9).min(512);
    match model {
        AxesModel::Flux => match s.checked_sub(text) {
            None => vec![0, 0, 0],
            Some(i) => vec![0, (i / 64) as u32, (i % 64) as u32],
        },
        AxesModel::Flux2 => match s.checked_sub(text) {
            None => vec![0, 0, 0, s as u32],
            Some(i) => vec![0, (i / 64) as u32, (i % 64) as u32, 0],
        },
        AxesModel::Wan | AxesModel::Mochi => {
            let (h, w) = (30, 52);
            vec![(s / (h * w)) as u32, ((s / w) % h) as u32, (s % w) as u32]
        }
    }
}

/// Every token's positions, `[t.. | h.. | w.. (| l..)]` (`Positions::Axes`).
pub fn axes_positions(model: AxesModel, seq: u64) -> Vec<u32> {
    let n = seq as usize;
    let mut out = vec![0; planes(model) * n];
    for s in 0..seq {
        let p = axes_position(model, seq, s);
        for (a, v) in p.into_iter().enumerate() {
            out[a * n + s as usize] = v;
        }
    }
    out
}
