//! The grids of the models, each as its library builds the position ids: the pipeline's or
//! the rotary module's own code is named on each, and `tests/position_grids.rs` checks each
//! against the positions that code makes.

use super::{GridAxis, GridSegment, PositionGrid};
use crate::error::{Error, Result};

impl PositionGrid {
    /// FLUX.1: `text` tokens at `(0, 0, 0)` (the pipeline's `txt_ids`, zeros), then a packed
    /// latent of `[h, w]` tokens at `(0, row, column)` (`FluxPipeline._prepare_latent_image_ids`),
    /// in the order `FluxTransformer2DModel` concatenates them (`cat((txt_ids, img_ids))`).
    /// A 1024 x 1024 image with a 512-token prompt: `flux(512, [64, 64])`, 4 608 tokens.
    pub fn flux(text: u32, [h, w]: [u32; 2]) -> Self {
        Self::new(3).text_zeros(text).then(image(3, 0, [h, w], 0))
    }

    /// FLUX.1 Kontext: [`PositionGrid::flux`], then the reference image's `[rh, rw]` tokens
    /// at `(1, row, column)` (`FluxKontextPipeline.prepare_latents`: `image_ids[..., 0] = 1`,
    /// concatenated after the latent's ids).
    pub fn flux_kontext(text: u32, size: [u32; 2], [rh, rw]: [u32; 2]) -> Self {
        Self::flux(text, size).then(image(3, 1, [rh, rw], 0))
    }

    /// FLUX.2: four axes `(t, h, w, l)`. `text` tokens at `(0, 0, 0, k)`
    /// (`Flux2Pipeline._prepare_text_ids`), the latent's `[h, w]` at `(0, row, column, 0)`
    /// (`_prepare_latent_ids`), then reference image `i` at `(10 + 10 i, row, column, 0)`
    /// (`_prepare_image_ids`, its `scale` 10), text first as `Flux2Transformer2DModel`
    /// concatenates them.
    pub fn flux2(text: u32, size: [u32; 2], references: &[[u32; 2]]) -> Self {
        let mut grid = Self::new(4);
        if text > 0 {
            let zero = GridAxis::constant(0);
            grid = grid.then(GridSegment::new(
                &[text],
                &[zero, zero, zero, GridAxis::index(0)],
            ));
        }
        grid = grid.then(image(4, 0, size, 0));
        for (i, &r) in references.iter().enumerate() {
            let t = 10i32.saturating_add(10i32.saturating_mul(int(i as u32)));
            grid = grid.then(image(4, t, r, 0));
        }
        grid
    }

    /// A video's `[frames, h, w]` patch grid at `(t, row, column)`, row-major: Wan's
    /// (`WanRotaryPosEmbed`), HunyuanVideo's (`HunyuanVideoRotaryPosEmbed`, whose text tokens
    /// after the video are not rotated: add them with [`PositionGrid::text_zeros`]), and the
    /// other modules that make the positions from the latent's shape.
    pub fn video([f, h, w]: [u32; 3]) -> Self {
        let axes = [GridAxis::index(0), GridAxis::index(1), GridAxis::index(2)];
        Self::new(3).then(GridSegment::new(&[f, h, w], &axes))
    }

    /// Qwen-Image (`QwenEmbedRope`, `scale_rope`): `text` tokens on the diagonal from
    /// `max(h / 2, w / 2)` over the images, then image `k` of `[frames, h, w]` at frames
    /// `k..k + frames`, rows `-(h - h / 2)..h / 2` and columns `-(w - w / 2)..w / 2`
    /// (centered), text first as the joint attention concatenates them.
    pub fn qwen_image(text: u32, images: &[[u32; 3]]) -> Self {
        let start = images
            .iter()
            .map(|&[_, h, w]| (h / 2).max(w / 2))
            .max()
            .unwrap_or(0);
        let mut grid = Self::new(3);
        if text > 0 {
            let diagonal = GridAxis::index(0).plus(int(start));
            grid = grid.then(GridSegment::new(&[text], &[diagonal; 3]));
        }
        for (k, &[f, h, w]) in images.iter().enumerate() {
            let centered = |d: usize, n: u32| GridAxis::index(d).plus(-int(n - n / 2));
            let frame = GridAxis::index(0).plus(int(k as u32));
            grid = grid.then(GridSegment::new(
                &[f, h, w],
                &[frame, centered(1, h), centered(2, w)],
            ));
        }
        grid
    }

    /// A vision tower's patches in merge-block order (Qwen2-VL through Qwen3-VL, GLM-4V and
    /// the others that call transformers' `get_vision_position_ids`): each of `frames`
    /// frames of `[h, w]` patches in `merge x merge` blocks, row-major over the blocks and
    /// within each, at `(0, row, column)` (the planes the vision readers' specs take: `t`
    /// unused). `h` and `w` must be multiples of `merge`.
    pub fn merge_blocks([f, h, w]: [u32; 3], merge: u32) -> Result<Self> {
        if merge == 0 || !h.is_multiple_of(merge) || !w.is_multiple_of(merge) {
            return Err(Error::InvalidPositionGrid {
                reason: format!(
                    "a {h} x {w} patch grid in {merge} x {merge} merge blocks: the merge size \
                     must be non-zero and divide both sides (spatial_merge_size)"
                ),
            });
        }
        let m = merge as i32;
        let row = GridAxis::sum([0, m, 0, 1, 0]);
        let column = GridAxis::sum([0, 0, m, 0, 1]);
        let shape = [f, h / merge, w / merge, merge, merge];
        Ok(Self::new(3).then(GridSegment::new(
            &shape,
            &[GridAxis::constant(0), row, column],
        )))
    }

    /// CogVideoX 1.0 (`CogVideoXPipeline._prepare_rotary_positional_embeddings`): `text`
    /// tokens first (its attention rotates only the video tokens after them), then `frames`
    /// latent frames of `[h, w]` patches at `(t, row, column)`, rows and columns on the
    /// crop linspace of `get_3d_rotary_pos_embed`: the grid fitted into the transformer's
    /// base grid `[base_h, base_w]` (`sample_height / patch_size`, `sample_width /
    /// patch_size`; 30 x 45) by `get_resize_crop_region_for_grid`, then
    /// `linspace(start, stop * (n - 1) / n, n)`. A coordinate is the linspace's fraction in
    /// lowest terms, its integer numerator times the f32 of `1 / denominator`: whole numbers
    /// exact (the base grid), fractions within an ulp or so of torch's f32 linspace (1 ulp
    /// at 768 x 1360). CogVideoX 1.5 takes integer positions: [`PositionGrid::video`].
    pub fn cogvideox(text: u32, frames: u32, [h, w]: [u32; 2], base: [u32; 2]) -> Result<Self> {
        if [h, w, base[0], base[1]].contains(&0) {
            return Err(Error::InvalidPositionGrid {
                reason: format!(
                    "a {h} x {w} latent grid in a {} x {} base grid: every side non-zero",
                    base[0], base[1]
                ),
            });
        }
        let ([top, left], [bottom, right]) = crop_region([h, w], base);
        let axes = [
            GridAxis::index(0),
            crop_linspace(1, top, bottom, h),
            crop_linspace(2, left, right, w),
        ];
        Ok(Self::new(3)
            .text_zeros(text)
            .then(GridSegment::new(&[frames, h, w], &axes)))
    }

    /// Mochi (`MochiRoPE._get_positions`): `[frames, h, w]` patches at `(t, y, x)`, the rows
    /// and columns the centers of `h` (`w`) equal cells spanning `±n s / 2`, `s =
    /// sqrt(192 * 192 / (h w))` (its target area): `s (2 i + 1 - n) / 2`, an integer times
    /// the f32 of `s / 2` (diffusers averages f32 linspace edges: the last bits differ).
    pub fn mochi([f, h, w]: [u32; 3]) -> Self {
        let s = (192.0f64 * 192.0 / (f64::from(h) * f64::from(w))).sqrt();
        let centered = |dim: usize, n: u32| {
            let mut steps = [0; super::GRID_DIMS];
            steps[dim] = 2;
            GridAxis::sum(steps)
                .plus(1 - int(n))
                .scaled((s / 2.0) as f32)
        };
        let axes = [GridAxis::index(0), centered(1, h), centered(2, w)];
        Self::new(3).then(GridSegment::new(&[f, h, w], &axes))
    }

    /// DINOv3's patch-center coordinates (transformers' `get_patches_center_coordinates`,
    /// timm's `centered` grid): `prefix` tokens (class and register tokens, left unrotated)
    /// at 0, then `[h, w]` patches at `(0, row, column)` in (-1, 1), `((i + 0.5) / n) 2 - 1`
    /// as `(2 i + 1 - n)` times the f32 of `1 / n` (within an ulp of the library's f32).
    pub fn dinov3(prefix: u32, [h, w]: [u32; 2]) -> Self {
        let centered = |dim: usize, n: u32| {
            let mut steps = [0; super::GRID_DIMS];
            steps[dim] = 2;
            GridAxis::sum(steps)
                .plus(1 - int(n))
                .scaled((1.0 / f64::from(n)) as f32)
        };
        let axes = [GridAxis::constant(0), centered(0, h), centered(1, w)];
        Self::new(3)
            .text_zeros(prefix)
            .then(GridSegment::new(&[h, w], &axes))
    }

    /// LTX-Video (`LTXVideoRotaryPosEmbed._prepare_video_coords` at the pipeline's
    /// `rope_interpolation_scale` `(8 / frame_rate, 32, 32)`, patches of 1): `[frames, h, w]`
    /// latent tokens at each coordinate's fraction `g` of the base size (20 frames, 2048 x
    /// 2048 pixels) as `2 g - 1`, the form [`RotaryModule`](crate::RotaryModule) reads LTX's
    /// modules in. `2 i s / base - 1` is the fraction `(2 i s_num - base s_den) / (base
    /// s_den)` in lowest terms: rows and columns exact, frames within an ulp of the
    /// module's f32 arithmetic. `frame_rate` in frames a second (25 in the pipeline's
    /// default); 0 is refused.
    pub fn ltx_video([f, h, w]: [u32; 3], frame_rate: u32) -> Result<Self> {
        if frame_rate == 0 {
            return Err(Error::InvalidPositionGrid {
                reason: "LTX-Video at 0 frames a second: the frame rate must be positive".into(),
            });
        }
        // Axis a at index i: 2 i num / (base den) - 1, with scale num / den.
        let axis = |dim: usize, num: i64, den: i64, base: i64| {
            let denominator = base.saturating_mul(den);
            let step = 2i64.saturating_mul(num);
            fraction(dim, step, denominator.saturating_neg(), denominator)
        };
        let axes = [
            axis(0, 8, i64::from(frame_rate), 20),
            axis(1, 32, 1, 2048),
            axis(2, 32, 1, 2048),
        ];
        Ok(Self::new(3).then(GridSegment::new(&[f, h, w], &axes)))
    }

    /// The same grid with `tokens` more at position 0 on every axis: FLUX's text ids, and
    /// tokens that are not rotated (HunyuanVideo's text after the video, class and register
    /// tokens): angle 0 leaves them as they are. No segment for 0 tokens.
    pub fn text_zeros(self, tokens: u32) -> Self {
        if tokens == 0 {
            return self;
        }
        let axes = self.axes;
        self.then(GridSegment::constant(tokens, &vec![0; axes]))
    }
}

/// An image's `[h, w]` tokens at `(t, row, column)` (and `l` on a fourth axis).
fn image(axes: usize, t: i32, [h, w]: [u32; 2], l: i32) -> GridSegment {
    let mut coords = vec![
        GridAxis::constant(t),
        GridAxis::index(0),
        GridAxis::index(1),
    ];
    if axes == 4 {
        coords.push(GridAxis::constant(l));
    }
    GridSegment::new(&[h, w], &coords)
}

/// `v` as an offset; past `i32::MAX` it saturates, and the grid's check refuses the sums.
fn int(v: u32) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

/// `get_resize_crop_region_for_grid((h, w), base_w, base_h)`: the grid resized into the base
/// grid keeping its aspect, centered; Python's `round` (half to even) on f64 as there.
fn crop_region([h, w]: [u32; 2], [th, tw]: [u32; 2]) -> ([i64; 2], [i64; 2]) {
    let (h, w, th, tw) = (f64::from(h), f64::from(w), f64::from(th), f64::from(tw));
    let (rh, rw) = if h / w > th / tw {
        (th, (th / h * w).round_ties_even())
    } else {
        ((tw / w * h).round_ties_even(), tw)
    };
    let top = ((th - rh) / 2.0).round_ties_even() as i64;
    let left = ((tw - rw) / 2.0).round_ties_even() as i64;
    ([top, left], [top + rh as i64, left + rw as i64])
}

/// `linspace(start, stop * (n - 1) / n, n)` on dimension `dim`: token `i` at
/// `(start n (n - 1) + i (stop (n - 1) - start n)) / (n (n - 1))`.
fn crop_linspace(dim: usize, start: i64, stop: i64, n: u32) -> GridAxis {
    if n == 1 {
        return GridAxis::constant(start.clamp(i32::MIN.into(), i32::MAX.into()) as i32);
    }
    let n = i64::from(n);
    let denominator = n.saturating_mul(n - 1);
    let step = stop
        .saturating_mul(n - 1)
        .saturating_sub(start.saturating_mul(n));
    fraction(dim, step, start.saturating_mul(denominator), denominator)
}

/// `(offset + step i) / denominator` on dimension `dim`, the fraction reduced (so that whole
/// numbers come out exact): its integer numerator times the f32 of `1 / denominator`.
fn fraction(dim: usize, step: i64, offset: i64, denominator: i64) -> GridAxis {
    let clamp = |v: i64| v.clamp(i32::MIN.into(), i32::MAX.into()) as i32;
    let g = gcd(gcd(offset, step), denominator).max(1);
    let mut steps = [0; super::GRID_DIMS];
    steps[dim] = clamp(step / g);
    GridAxis::sum(steps)
        .plus(clamp(offset / g))
        .scaled((1.0 / (denominator / g) as f64) as f32)
}

fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    i64::try_from(a).unwrap_or(i64::MAX)
}
