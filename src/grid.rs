//! Multi-axis sin-cos tables as diffusers builds them for patch tokens: each axis's 1-D table
//! (`[sin | cos]`, `w_k = 10000^(-2k/width)`) in its own block of the row, at the token's f32
//! coordinate on that axis; rows of zeros before the grid (class, register and text tokens).
//! The coordinates are computed on the host in f32 exactly as diffusers computes them in f32,
//! so the angles are exact for the positions diffusers itself uses.

use crate::error::{Error, Result};
use crate::positions::float_position_ok;
use crate::sinusoid::{SinusoidalLayout, SinusoidalSpec};

/// One axis of a [`SincosGrid`]: a block of `width` columns and every grid token's coordinate.
#[derive(Clone, Debug, PartialEq)]
pub struct GridBlock {
    /// Columns of the block: `width / 2` sines, then as many cosines (even, at least 2).
    pub width: u64,
    /// The coordinate of each grid token on this axis, in token order.
    pub coords: Vec<f32>,
}

impl GridBlock {
    /// The 1-D encoding of the block: `[sin | cos]`, base 10 000 over its width.
    pub fn spec(&self) -> SinusoidalSpec {
        SinusoidalSpec::new(self.width).layout(SinusoidalLayout::Concatenated)
    }
}

/// A sin-cos table over a grid of patch tokens: `zero_rows` rows of zeros, then one row per
/// grid token made of the [`GridBlock`]s side by side (their widths sum to `dim`).
#[derive(Clone, Debug, PartialEq)]
pub struct SincosGrid {
    /// Row width (`embed_dim`).
    pub dim: u64,
    /// Rows of zeros before the grid's tokens.
    pub zero_rows: u64,
    /// The axes' blocks, in row order.
    pub blocks: Vec<GridBlock>,
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
    ) -> Self {
        let div = |n: u64| [n as f64 / base_size, interpolation_scale];
        let [ws, hs] = grid_2d([h, w], [0, 0, h, w], &div(h), &div(w));
        Self::two_blocks(embed_dim, ws, hs)
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
    ) -> Self {
        let div = [max_size as f64 / base_size, interpolation_scale];
        let (top, left) = (
            max_size.saturating_sub(h) / 2,
            max_size.saturating_sub(w) / 2,
        );
        let [h, w] = [h.min(max_size), w.min(max_size)];
        let [ws, hs] = grid_2d([max_size, max_size], [top, left, h, w], &div, &div);
        Self::two_blocks(embed_dim, ws, hs)
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
    ) -> Self {
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
        Self {
            dim: embed_dim,
            zero_rows: 0,
            blocks: vec![
                GridBlock {
                    width: embed_dim / 4,
                    coords: temporal,
                },
                GridBlock {
                    width: spatial / 2,
                    coords: frames(&ws),
                },
                GridBlock {
                    width: spatial - spatial / 2,
                    coords: frames(&hs),
                },
            ],
        }
    }

    fn two_blocks(embed_dim: u64, ws: Vec<f32>, hs: Vec<f32>) -> Self {
        let half = embed_dim / 2;
        Self {
            dim: embed_dim,
            zero_rows: 0,
            blocks: vec![
                GridBlock {
                    width: half,
                    coords: ws,
                },
                GridBlock {
                    width: embed_dim - half,
                    coords: hs,
                },
            ],
        }
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

    /// Checks the grid: at least one block, each of even width at least 2, widths summing to
    /// `dim`, every block with a coordinate per token, each finite with `|c| < 2^32`.
    pub fn validate(&self) -> Result<()> {
        let widths: u64 = self.blocks.iter().map(|b| b.width).sum();
        let bad_width = self.blocks.iter().any(|b| b.width < 2 || b.width % 2 == 1);
        if self.blocks.is_empty() || bad_width || widths != self.dim {
            return Err(Error::InvalidParameter {
                what: "grid dim",
                value: self.dim as f64,
                need: "the sum of the blocks' widths, each even and at least 2 (diffusers: \
                       embed_dim divisible by 4 in 2-D, by 16 in 3-D)",
            });
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

    /// Each block's first column in a row.
    pub(crate) fn columns(&self) -> impl Iterator<Item = (u64, &GridBlock)> {
        self.blocks.iter().scan(0u64, |at, b| {
            let first = *at;
            *at += b.width;
            Some((first, b))
        })
    }
}
