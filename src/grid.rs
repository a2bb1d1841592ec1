//! Multi-axis sin-cos tables as diffusers and timm build them for patch tokens: each axis's
//! 1-D sines and cosines (`w_k = base^(-k/pairs)`) in columns of the row, at the token's f32
//! coordinate on that axis; rows of zeros before the grid (class, register and text tokens).
//! The coordinates are computed on the host in f32 exactly as diffusers computes them in f32,
//! so the angles are exact for the positions the library itself uses.

use crate::error::{Error, Result};
use crate::positions::float_position_ok;
use crate::sinusoid::{SinusoidalLayout, SinusoidalSpec};

/// One axis of a [`SincosGrid`]: `pairs` sines in columns `first..first + pairs`, their
/// cosines `cos_offset` columns further, and every grid token's coordinate on the axis.
#[derive(Clone, Debug, PartialEq)]
pub struct GridBlock {
    /// The column of the first sine.
    pub first: u64,
    /// Sine/cosine pairs, at frequencies `base^(-k/pairs)`.
    pub pairs: u64,
    /// Columns from a sine to its cosine (`pairs` for a `[sin | cos]` block).
    pub cos_offset: u64,
    /// Base of the frequencies (10 000; timm's `temperature`).
    pub base: f64,
    /// The coordinate of each grid token on this axis, in token order.
    pub coords: Vec<f32>,
}

impl GridBlock {
    /// A `[sin | cos]` block of `width` columns from `first`, base 10 000 (diffusers).
    pub fn concatenated(first: u64, width: u64, coords: Vec<f32>) -> Self {
        Self {
            first,
            pairs: width / 2,
            cos_offset: width / 2,
            base: 10_000.0,
            coords,
        }
    }

    /// The 1-D encoding of the block's pairs: `[sin | cos]` over `2 pairs` columns, so
    /// `w_k = base^(-2k/(2 pairs))`.
    pub fn spec(&self) -> SinusoidalSpec {
        SinusoidalSpec::new(2 * self.pairs)
            .base(self.base)
            .layout(SinusoidalLayout::Concatenated)
    }

    /// Columns from the first sine to the last cosine.
    pub fn span(&self) -> u64 {
        self.cos_offset.saturating_add(self.pairs)
    }
}

/// A sin-cos table over a grid of patch tokens: `zero_rows` rows of zeros, then one row per
/// grid token whose columns the [`GridBlock`]s cover, each column once.
#[derive(Clone, Debug, PartialEq)]
pub struct SincosGrid {
    /// Row width (`embed_dim`).
    pub dim: u64,
    /// Rows of zeros before the grid's tokens.
    pub zero_rows: u64,
    /// The axes' blocks.
    pub blocks: Vec<GridBlock>,
}

/// The most tokens (and the longest side) a grid constructor builds coordinates for:
/// 16.7M, 140 times HunyuanVideo's 720p video, so that absurd sizes are an error rather than
/// an allocation that aborts.
pub const MAX_GRID_TOKENS: u64 = 1 << 24;

/// Checks that `sides` hold at most [`MAX_GRID_TOKENS`] tokens.
fn check_tokens(sides: &[u64]) -> Result<()> {
    let n = sides.iter().try_fold(1u64, |acc, &x| acc.checked_mul(x));
    match n {
        Some(n) if n <= MAX_GRID_TOKENS => Ok(()),
        _ => Err(Error::InvalidParameter {
            what: "grid tokens",
            value: n.map_or(f64::INFINITY, |n| n as f64),
            need: "at most 2^24 (wgpu_posenc::MAX_GRID_TOKENS) along the sides given",
        }),
    }
}

/// `0, 1, .., n - 1` as f32, each divided in f32 by each of `divisors` in turn (torch's
/// `arange(n, dtype=float32) / a / b` with Python floats `a`, `b` rounded to f32).
fn arange_div(n: u64, divisors: &[f64]) -> Vec<f32> {
    (0..n)
        .map(|i| divisors.iter().fold(i as f32, |v, &d| v / d as f32))
        .collect()
}

/// diffusers' 2-D grid `[h, w]` coordinates of tokens `(i, j)` in rows `top..top + h`, columns
/// `left..left + w` of a grid of `rows x cols`, row-major: the w coordinates, then the h ones.
fn grid_2d(
    [rows, cols]: [u64; 2],
    [top, left, h, w]: [u64; 4],
    divisors_h: &[f64],
    divisors_w: &[f64],
) -> [Vec<f32>; 2] {
    let (ch, cw) = (arange_div(rows, divisors_h), arange_div(cols, divisors_w));
    let tokens = (top..top + h).flat_map(|i| (left..left + w).map(move |j| (i, j)));
    let (ws, hs) = tokens
        .map(|(i, j)| (cw[j as usize], ch[i as usize]))
        .unzip();
    [ws, hs]
}

impl SincosGrid {
    /// diffusers' `get_2d_sincos_pos_embed(embed_dim, (h, w), base_size=, interpolation_scale=)`
    /// (DiT, PixArt, Latte, `PatchEmbed` with `pos_embed_type="sincos"`): token `(i, j)` at
    /// `h = i / (h / base_size) / interpolation_scale` and the same for `w`, computed in f32;
    /// the row is `[sin w | cos w | sin h | cos h]`, each block `embed_dim / 2` wide.
    pub fn diffusers_2d(
        embed_dim: u64,
        [h, w]: [u64; 2],
        base_size: f64,
        interpolation_scale: f64,
    ) -> Result<Self> {
        check_tokens(&[h, w])?;
        let div = |n: u64| [n as f64 / base_size, interpolation_scale];
        let [ws, hs] = grid_2d([h, w], [0, 0, h, w], &div(h), &div(w));
        Ok(Self::two_blocks(embed_dim, ws, hs))
    }

    /// SD3's `PatchEmbed` with `pos_embed_max_size`: the 2-D table of a `max_size x max_size`
    /// grid (as [`SincosGrid::diffusers_2d`]) center-cropped to `h x w` tokens
    /// (`cropped_pos_embed`: `top = (max_size - h) / 2`, the same for `left`).
    pub fn diffusers_cropped(
        embed_dim: u64,
        max_size: u64,
        [h, w]: [u64; 2],
        base_size: f64,
        interpolation_scale: f64,
    ) -> Result<Self> {
        // The table's side is built whole before the crop.
        check_tokens(&[max_size])?;
        let div = [max_size as f64 / base_size, interpolation_scale];
        let (top, left) = (
            max_size.saturating_sub(h) / 2,
            max_size.saturating_sub(w) / 2,
        );
        let [h, w] = [h.min(max_size), w.min(max_size)];
        let [ws, hs] = grid_2d([max_size, max_size], [top, left, h, w], &div, &div);
        Ok(Self::two_blocks(embed_dim, ws, hs))
    }

    /// CogView3Plus' `CogView3PlusPatchEmbed`: the 2-D table of a `max_size x max_size` grid
    /// at base size `max_size` (integer coordinates), of which the forward takes the top-left
    /// `h x w` tokens (`pos_embed[:h, :w]`). Its text tokens come first with zero rows: add
    /// [`SincosGrid::zero_rows`] with their count. A side past `max_size` is an error.
    pub fn diffusers_top_left(embed_dim: u64, max_size: u64, [h, w]: [u64; 2]) -> Result<Self> {
        check_tokens(&[max_size])?;
        if h > max_size || w > max_size {
            return Err(Error::InvalidParameter {
                what: "grid side",
                value: h.max(w) as f64,
                need: "at most the table's max_size (pos_embed_max_size)",
            });
        }
        let div = [1.0, 1.0];
        let [ws, hs] = grid_2d([max_size, max_size], [0, 0, h, w], &div, &div);
        Ok(Self::two_blocks(embed_dim, ws, hs))
    }

    /// diffusers' `get_3d_sincos_pos_embed(embed_dim, (w, h), t, spatial_interpolation_scale,
    /// temporal_interpolation_scale)` (CogVideoX 1.0): tokens frame by frame, each frame's
    /// `h x w` row-major; the row is the temporal block (`embed_dim / 4`, at `t / temporal
    /// scale`), then the spatial 2-D row (`3 embed_dim / 4`: `[w | h]` at `i / spatial
    /// scale`). With CogVideoX's text tokens first, add [`SincosGrid::zero_rows`].
    pub fn diffusers_3d(
        embed_dim: u64,
        [t, h, w]: [u64; 3],
        spatial_interpolation_scale: f64,
        temporal_interpolation_scale: f64,
    ) -> Result<Self> {
        check_tokens(&[t, h, w])?;
        let s = [spatial_interpolation_scale];
        let [ws, hs] = grid_2d([h, w], [0, 0, h, w], &s, &s);
        let ct = arange_div(t, &[temporal_interpolation_scale]);
        let frames =
            |c: &[f32]| -> Vec<f32> { ct.iter().flat_map(|_| c.iter().copied()).collect() };
        let per_frame = (h * w) as usize;
        let temporal: Vec<f32> = ct
            .iter()
            .flat_map(|&v| std::iter::repeat_n(v, per_frame))
            .collect();
        let spatial = 3 * embed_dim / 4;
        Ok(Self {
            dim: embed_dim,
            zero_rows: 0,
            blocks: vec![
                GridBlock::concatenated(0, embed_dim / 4, temporal),
                GridBlock::concatenated(embed_dim / 4, spatial / 2, frames(&ws)),
                GridBlock::concatenated(embed_dim / 4 + spatial / 2, spatial / 2, frames(&hs)),
            ],
        })
    }

    fn two_blocks(embed_dim: u64, ws: Vec<f32>, hs: Vec<f32>) -> Self {
        let half = embed_dim / 2;
        Self {
            dim: embed_dim,
            zero_rows: 0,
            blocks: vec![
                GridBlock::concatenated(0, half, ws),
                GridBlock::concatenated(half, half, hs),
            ],
        }
    }

    /// timm's `build_sincos2d_pos_embed(feat_shape, dim, temperature, reverse_coord,
    /// interleave_sin_cos)`: tokens row-major over `feat_shape` (reversed with
    /// `reverse_coord`, which then also orders the tokens column-major), `dim / 4` pairs per
    /// axis at `temperature^(-k/(dim/4))` and integer coordinates; the row is `[sin a0 | sin
    /// a1 | cos a0 | cos a1]`, or `[sin a0 | cos a0 | sin a1 | cos a1]` interleaved (`a0` the
    /// first axis of the shape used).
    pub fn timm_2d(
        dim: u64,
        feat_shape: [u64; 2],
        temperature: f64,
        reverse_coord: bool,
        interleave_sin_cos: bool,
    ) -> Result<Self> {
        check_tokens(&feat_shape)?;
        let [s0, s1] = if reverse_coord {
            [feat_shape[1], feat_shape[0]]
        } else {
            feat_shape
        };
        let tokens = (0..s0).flat_map(|i| (0..s1).map(move |j| (i as f32, j as f32)));
        let (a0, a1): (Vec<f32>, Vec<f32>) = tokens.unzip();
        let pd = dim / 4;
        let (starts, cos_offset) = if interleave_sin_cos {
            ([0, 2 * pd], pd)
        } else {
            ([0, pd], 2 * pd)
        };
        let block = |first, coords| GridBlock {
            first,
            pairs: pd,
            cos_offset,
            base: temperature,
            coords,
        };
        Ok(Self {
            dim,
            zero_rows: 0,
            blocks: vec![block(starts[0], a0), block(starts[1], a1)],
        })
    }

    /// `n` rows of zeros before the grid (diffusers' `cls_token` / `extra_tokens`,
    /// CogVideoX's `max_text_seq_length` text rows).
    pub fn zero_rows(mut self, n: u64) -> Self {
        self.zero_rows = n;
        self
    }

    /// Grid tokens (rows after the zero rows).
    pub fn tokens(&self) -> u64 {
        self.blocks.first().map_or(0, |b| b.coords.len() as u64)
    }

    /// Rows of the table: the zero rows and the grid tokens.
    pub fn rows(&self) -> u64 {
        self.zero_rows.saturating_add(self.tokens())
    }

    /// Checks the grid: every column of `dim` covered by exactly one sine or cosine of one
    /// block, bases finite above 1, every block with a coordinate per token, each finite with
    /// `|c| < 2^32`.
    pub fn validate(&self) -> Result<()> {
        if !self.covers_each_column_once() {
            return Err(Error::InvalidParameter {
                what: "grid dim",
                value: self.dim as f64,
                need: "every column covered once by the blocks' sines and cosines (diffusers: \
                       embed_dim divisible by 4 in 2-D, by 16 in 3-D)",
            });
        }
        for b in &self.blocks {
            b.spec().validate()?;
        }
        let n = self.tokens();
        if let Some(b) = self.blocks.iter().find(|b| b.coords.len() as u64 != n) {
            return Err(Error::PositionIdsTooShort {
                what: "grid coordinates (every block has one per grid token)",
                needed: n,
                available: b.coords.len() as u64,
            });
        }
        let coords = self.blocks.iter().flat_map(|b| &b.coords);
        if let Some(&c) = coords.into_iter().find(|&&c| !float_position_ok(c)) {
            return Err(Error::InvalidParameter {
                what: "grid coordinate",
                value: f64::from(c),
                need: "finite, with |c| < 2^32 (check the interpolation scale and base size)",
            });
        }
        Ok(())
    }

    fn covers_each_column_once(&self) -> bool {
        let spans: u64 = self.blocks.iter().map(|b| b.pairs.saturating_mul(2)).sum();
        if self.blocks.is_empty() || spans != self.dim || self.dim > 1 << 24 {
            return false;
        }
        let mut seen = vec![false; self.dim as usize];
        for b in &self.blocks {
            if b.pairs == 0 || b.cos_offset < b.pairs {
                return false;
            }
            for k in 0..b.pairs {
                for col in [
                    b.first.saturating_add(k),
                    b.first.saturating_add(b.cos_offset + k),
                ] {
                    match seen.get_mut(col as usize) {
                        Some(s) if !*s => *s = true,
                        _ => return false,
                    }
                }
            }
        }
        true
    }
}
