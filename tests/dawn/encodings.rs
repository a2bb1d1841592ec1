//! The recorded sinusoidal calls: tables in f32 and bf16, diffusers' timestep projection,
//! sin-cos grids, and a position grid feeding RoPE in one encoder.

use super::common::{Rng, guarded_input, poison, widen};
use super::{Check, Kind, Recorder, to_bf16, widen_bf16};

use wgpu_posenc::Dims;
use wgpu_posenc::{
    ArrayView, Dtype, HostPositions, Layout, PairLayout, PositionGrid, Positions, RopeSpec,
    SincosGrid, SinusoidalLayout, SinusoidalSpec, TensorView, reference,
};

/// The sinusoidal table in bf16 (whole words per vec4 group, and a scalar row width).
pub(super) fn sinusoidal_bf16(rec: &mut Recorder) {
    for d in [64u64, 6] {
        let spec = SinusoidalSpec::new(d);
        let layout = Layout::rows(21, d).with_offset(2);
        let initial: Vec<u16> = (0..(layout.end().expect("valid") + 5) as usize)
            .map(|i| 0x7fc0 | (i as u16 & 0x3f))
            .collect();
        let mut expected = widen_bf16(&initial);
        let rows = reference::sinusoidal_table(&spec, 21, 77);
        expected[2..2 + rows.len()].copy_from_slice(&rows);
        let buffer = rec.u16(&initial);
        let check = rec.check_bf16(&buffer, &initial, expected);
        rec.call(
            &format!("sinusoidal table, d_model {d}, bf16"),
            |ctx, encoder| {
                let view = TensorView::new(&buffer, layout).with_dtype(Dtype::BF16);
                ctx.encode_sinusoidal_table(encoder, &spec, &view, 77)
                    .map(drop)
            },
            vec![check],
        );
    }
}

pub(super) fn sinusoidal(rec: &mut Recorder, rng: &mut Rng) {
    for (layout, name) in [
        (SinusoidalLayout::Interleaved, "interleaved"),
        (SinusoidalLayout::Concatenated, "concatenated"),
    ] {
        let spec = SinusoidalSpec::new(96).layout(layout);
        let table_layout = Layout::rows(37, 96).with_offset(4);
        let initial: Vec<f32> = (0..table_layout.end().expect("valid") as usize + 7)
            .map(poison)
            .collect();
        let mut expected = widen(&initial);
        let rows = reference::sinusoidal_table(&spec, 37, 1000);
        expected[4..4 + rows.len()].copy_from_slice(&rows);
        let buffer = rec.f32(&initial);
        let check = rec.check_f32(&buffer, &initial, expected);
        rec.call(
            &format!("sinusoidal table, {name}"),
            |ctx, encoder| {
                let view = TensorView::new(&buffer, table_layout);
                ctx.encode_sinusoidal_table(encoder, &spec, &view, 1000)
                    .map(drop)
            },
            vec![check],
        );
    }
    // Fused add at per-token ids with a padding index, f32 and bf16.
    let spec = SinusoidalSpec::new(64).padding_idx(1);
    let layout = Layout::bsd(2, 13, 64);
    let ids: Vec<u32> = (0..26)
        .map(|i| if i % 5 == 0 { 1 } else { 2 + i * 3 })
        .collect();
    let host = HostPositions::Ids(&ids);
    for dtype in [Dtype::F32, Dtype::BF16] {
        let input = guarded_input(rng, &layout, 9);
        let gpu = host.map(|v| rec.u32(v));
        let (buffer, check) = if dtype == Dtype::BF16 {
            let data = to_bf16(&input);
            let mut expected = widen_bf16(&data);
            reference::sinusoidal_add(&spec, &layout, &mut expected, host, 8.0);
            let b = rec.u16(&data);
            let c = rec.check_bf16(&b, &data, expected);
            (b, c)
        } else {
            let mut expected = widen(&input);
            reference::sinusoidal_add(&spec, &layout, &mut expected, host, 8.0);
            let b = rec.f32(&input);
            let c = rec.check_f32(&b, &input, expected);
            (b, c)
        };
        rec.call(
            &format!("sinusoidal add, ids with padding, {dtype:?}"),
            |ctx, encoder| {
                let view = TensorView::new(&buffer, layout).with_dtype(dtype);
                ctx.encode_sinusoidal_add(
                    encoder,
                    &spec,
                    &view,
                    gpu.as_ref().map(ArrayView::new),
                    8.0,
                )
                .map(drop)
            },
            vec![check],
        );
    }
}

/// diffusers' timestep projection at f32 timesteps: `[cos | sin]` of width 256 as a table
/// (four pairs a lane), and an odd width (33: the scalar kernel, the tail element) added to
/// bf16 rows, with scale 1000 (whole revolutions in the third frequency word).
pub(super) fn timesteps(rec: &mut Recorder, rng: &mut Rng) {
    let t: Vec<f32> = (0..12).map(|i| i as f32 * 83.25 - 1.5).collect();
    let host = HostPositions::float(&t);
    let spec = SinusoidalSpec::timesteps(256, true, 0.0);
    let layout = Layout::rows(12, 256).with_offset(4);
    let initial: Vec<f32> = (0..layout.end().expect("valid") as usize + 7)
        .map(poison)
        .collect();
    let mut expected = widen(&initial);
    reference::sinusoidal_table_at(&spec, &layout, &mut expected, host);
    let buffer = rec.f32(&initial);
    let check = rec.check_f32(&buffer, &initial, expected);
    let ids = host.map(|v| rec.u32(v));
    rec.call(
        "sinusoidal table at f32 timesteps, [cos | sin]",
        |ctx, encoder| {
            let view = TensorView::new(&buffer, layout);
            ctx.encode_sinusoidal_table_at(encoder, &spec, &view, ids.as_ref().map(ArrayView::new))
                .map(drop)
        },
        vec![check],
    );
    let spec = SinusoidalSpec::timesteps(33, false, 1.0).freq_scale(1000.0);
    let layout = Layout::bsd(2, 6, 33);
    let data = to_bf16(&guarded_input(rng, &layout, 5));
    let mut expected = widen_bf16(&data);
    reference::sinusoidal_add(&spec, &layout, &mut expected, host, 2.0);
    let buffer = rec.u16(&data);
    let check = rec.check_bf16(&buffer, &data, expected);
    rec.call(
        "sinusoidal add at f32 positions, odd width, scale 1000, bf16",
        |ctx, encoder| {
            let view = TensorView::new(&buffer, layout).with_dtype(Dtype::BF16);
            ctx.encode_sinusoidal_add(encoder, &spec, &view, ids.as_ref().map(ArrayView::new), 2.0)
                .map(drop)
        },
        vec![check],
    );
}

/// Sin-cos grids: timm's layout (cosines two blocks after their sines: a pair distance
/// other than the pair count) with a zero row, added to f32 patch embeddings.
pub(super) fn grids(rec: &mut Recorder, rng: &mut Rng) {
    let grid = SincosGrid::timm_2d(64, [3, 5], 10_000.0, false, false)
        .expect("grid")
        .zero_rows(1);
    let layout = Layout::bsd(2, grid.rows(), 64);
    let input = guarded_input(rng, &layout, 7);
    let table = reference::sincos_grid(&grid);
    let mut expected = widen(&input);
    for b in 0..2 {
        for s in 0..grid.rows() {
            let at = reference::row_start(&layout, b, 0, s) as usize;
            for k in 0..64 {
                expected[at + k] = expected[at + k] * 0.5 + table[(s * 64) as usize + k];
            }
        }
    }
    let buffer = rec.f32(&input);
    let check = rec.check_f32(&buffer, &input, expected);
    rec.call(
        "sin-cos grid add, timm's layout, a zero row",
        |ctx, encoder| {
            let view = TensorView::new(&buffer, layout);
            ctx.encode_sincos_grid_add(encoder, &grid, &view, 0.5)
                .map(drop)
        },
        vec![check],
    );
}

/// FLUX.2's ids made on the GPU by a position grid (text, the latent, a reference image; two
/// batch rows) after 5 poisoned words, then RoPE over four f32 axes at them, in one encoder.
pub(super) fn position_grid(rec: &mut Recorder, rng: &mut Rng) {
    let grid = PositionGrid::flux2(3, [4, 6], &[[2, 3]]);
    let positions = grid.positions(2).expect("grid");
    let guard = 5;
    let initial: Vec<u32> = (0..2 * guard + positions.len())
        .map(|i| poison(i).to_bits())
        .collect();
    let mut expected_ids: Vec<f64> = initial.iter().map(|&w| f64::from(w)).collect();
    for (k, p) in positions.iter().enumerate() {
        expected_ids[guard + k] = f64::from(p.to_bits());
    }
    let ids = rec.u32(&initial);
    let ids_check = Check {
        buffer: ids.clone(),
        kind: Kind::U32,
        initial: bytemuck::cast_slice(&initial).to_vec(),
        expected: expected_ids,
    };
    let spec = RopeSpec::new()
        .base(2000.0)
        .pair_layout(PairLayout::Interleaved)
        .axes_rope4([16, 16, 16, 16]);
    let layout = Layout::bshd(Dims {
        batch: 2,
        seq: grid.tokens(),
        heads: 2,
        head_dim: 128,
    })
    .with_offset(9);
    let input = guarded_input(rng, &layout, 9);
    let words: Vec<u32> = positions.iter().map(|p| p.to_bits()).collect();
    let mut expected = widen(&input);
    reference::rope(&spec, &layout, &mut expected, Positions::FloatAxes(&words));
    let x = rec.f32(&input);
    let x_check = rec.check_f32(&x, &input, expected);
    rec.call(
        "position grid (FLUX.2's ids, two rows), then RoPE over four f32 axes at them",
        |ctx, encoder| {
            let out = ArrayView::at(&ids, guard as u64 * 4);
            ctx.encode_position_grid(encoder, &grid, 2, out)?;
            let view = TensorView::new(&x, layout);
            ctx.encode_rope(encoder, &spec, &view, Positions::FloatAxes(out))
                .map(drop)
        },
        vec![ids_check, x_check],
    );
}
