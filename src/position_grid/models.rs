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
