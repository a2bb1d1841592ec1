//! Runs a drawn call through its entry point and compares it with the reference, counting
//! the calls compared; the cos/sin cache and host tables it needs.

use super::common::{ctx, u32_buffer, widen};
use super::{
    CHECKED, Case, Entry, POOLED, Pos, TABLED, buffer, check, data, read, sinusoidal, to_bytes,
    values,
};
use std::sync::atomic::Ordering;

use wgpu_posenc::Dims;
use wgpu_posenc::{
    ArrayView, CosSinCache, Dtype, HostPositions, Layout, OutputOrder, PairLayout, Positions,
    RopeCall, RopeSpec, SinusoidalSpec, TensorView, reference,
};

/// HF's pair-halves order is written only out of place, over interleaved pairs, and leading
/// lanes only in place: any other RoPE call with them that ran is a failure.
fn refuses_order(case: &Case, ran: bool) -> Result<(), String> {
    let rope = matches!(
        case.entry,
        Entry::Rope | Entry::RopeQk | Entry::RopeOut | Entry::RopeCache | Entry::RopeHost
    );
    let allowed =
        matches!(case.entry, Entry::RopeOut) && case.spec.pair_layout == PairLayout::Interleaved;
    if ran && rope && case.spec.output_order == OutputOrder::PairHalves && !allowed {
        return Err(format!("{:?} ran in PairHalves order", case.entry));
    }
    // Leading lanes rotate in place only; pair blocks are half-split pairs'.
    if ran && matches!(case.entry, Entry::RopeOut) && case.spec.leading_lanes > 0 {
        return Err("an out-of-place call ran after leading lanes".into());
    }
    // Interleaved pairs in blocks only under a table of the other layout (V-JEPA 2's).
    let blocks = case.spec.pair_blocks;
    let split = case.spec.pair_layout == PairLayout::HalfSplit || case.spec.lane_angles();
    if ran && rope && (blocks == 0 || (blocks > 1 && !split)) {
        return Err(format!("{:?} ran with {blocks} pair blocks", case.entry));
    }
    // A table of the other layout: forward, in the pairs' order, from the spec's
    // frequencies, not through a cos/sin cache.
    let tabled_ok = !case.spec.lane_angles()
        || (case.spec.learned.is_none()
            && !case.spec.inverse
            && case.spec.output_order == OutputOrder::Pairs
            && !matches!(case.entry, Entry::RopeCache));
    if ran && rope && !tabled_ok {
        return Err(format!(
            "{:?} ran with a table of the other layout",
            case.entry
        ));
    }
    // Pools of 1, 2, 4 or 8 sets, over position axes, without a learned table or a cache.
    let pool = case.spec.pool;
    let pooled_ok = pool == 1
        || ([2, 4, 8].contains(&pool)
            && case.spec.mrope.is_some()
            && case.spec.learned.is_none()
            && !matches!(case.entry, Entry::RopeCache));
    if ran && rope && !pooled_ok {
        return Err(format!("{:?} ran with a pool of {pool}", case.entry));
    }
    Ok(())
}

/// GPU buffers of a case's positions (an empty array is one word, viewed from its end).
fn gpu_positions(p: &Pos) -> Positions<(wgpu::Buffer, u64)> {
    p.host().map(|v| {
        if v.is_empty() {
            (u32_buffer(&[0]), 4)
        } else {
            (u32_buffer(v), 0)
        }
    })
}

/// Runs one case; `Ok` when it returned an error or matched the reference.
pub fn run(case: &Case) -> Result<(), String> {
    let checked = run_case(case)?;
    if checked {
        CHECKED.fetch_add(1, Ordering::Relaxed);
        if case.spec.pool > 1 {
            POOLED.fetch_add(1, Ordering::Relaxed);
        }
        if case.spec.lane_angles() {
            TABLED.fetch_add(1, Ordering::Relaxed);
        }
    }
    Ok(())
}

/// `Ok(true)` when the call ran and matched the reference, `Ok(false)` when it returned an
/// error (or could not be set up on the host).
fn run_case(case: &Case) -> Result<bool, String> {
    let layout = case.layout;
    let Some(input) = data(&layout, 9, case.seed) else {
        return Ok(false); // too large to hold on the host; the shape checks run elsewhere
    };
    let dtype = case.dtype;
    let n = input.len();
    let bytes = to_bytes(&input, dtype);
    let before = values(&bytes, dtype, n);
    let sin_spec = sinusoidal::spec(
        layout.shape[3],
        case.sin_layout,
        case.spec.base,
        case.sin_form,
        case.seed,
    );
    let host = case.positions.host();
    match case.entry {
        Entry::RopeHost | Entry::SinAddHost | Entry::SinTableHost => {
            // Host paths are f32.
            let mut out = input.clone();
            let result = match case.entry {
                Entry::RopeHost => ctx().rope_host(&case.spec, layout, &mut out, host),
                Entry::SinAddHost => {
                    ctx().sinusoidal_add_host(&sin_spec, layout, &mut out, host, case.scale)
                }
                _ => {
                    let Pos::Start(start) = case.positions else {
                        return table_at_host(&sin_spec, &layout, host);
                    };
                    let s = layout.shape[2];
                    return match ctx().sinusoidal_table_host(&sin_spec, s, start) {
                        Err(_) => Ok(false),
                        Ok(table) => {
                            let expected = reference::sinusoidal_table(&sin_spec, s, start);
                            check(
                                &vec![f64::NAN; table.len()],
                                &widen(&table),
                                &expected,
                                Dtype::F32,
                                false,
                            )
                            .map(|()| true)
                        }
                    };
                }
            };
            refuses_order(case, result.is_ok())?;
            if result.is_err() {
                if out
                    .iter()
                    .zip(&input)
                    .any(|(a, b)| a.to_bits() != b.to_bits())
                {
                    return Err("an error left the data changed".into());
                }
                return Ok(false);
            }
            let mut expected = widen(&input);
            match case.entry {
                Entry::RopeHost => reference::rope(&case.spec, &layout, &mut expected, host),
                _ => reference::sinusoidal_add(
                    &sin_spec,
                    &layout,
                    &mut expected,
                    host,
                    f64::from(case.scale),
                ),
            }
            check(
                &widen(&input),
                &widen(&out),
                &expected,
                Dtype::F32,
                case.spec.cos_sin_bf16,
            )
            .map(|()| true)
        }
        _ => {
            let x = buffer(&bytes);
            let view = TensorView::new(&x, layout).with_dtype(dtype);
            let pos_bufs = gpu_positions(&case.positions);
            let pos = pos_bufs.as_ref().map(|(b, at)| ArrayView::at(b, *at));
            let mut encoder = ctx().device().create_command_encoder(&Default::default());
            // A second tensor (K, or the output) with its own guard.
            let second_layout = match case.entry {
                Entry::RopeQk => {
                    let [b, _, s, d] = layout.shape;
                    Layout::bshd(Dims {
                        batch: b,
                        heads: case.k_heads,
                        seq: s,
                        head_dim: d,
                    })
                }
                _ => Layout::bhsd(layout.shape).with_offset(3),
            };
            let second = data(&second_layout, 5, case.seed ^ 1);
            let Some(second) = second else {
                return Ok(false);
            };
            let second_bytes = to_bytes(&second, dtype);
            let y = buffer(&second_bytes);
            let y_view = TensorView::new(&y, second_layout).with_dtype(dtype);
            let table = cache_table(&layout, &case.spec);
            let cache_buf = buffer(bytemuck::cast_slice(&table.0));
            let flag = buffer(&[0u8; 16]);
            let result = match case.entry {
                Entry::Rope => ctx().encode_rope(&mut encoder, &case.spec, &view, pos),
                Entry::RopeQk => {
                    ctx().encode_rope_qk(&mut encoder, &case.spec, &view, &y_view, pos)
                }
                Entry::RopeOut => ctx().encode_rope_call(
                    &mut encoder,
                    &case.spec,
                    &RopeCall::new(view, pos).with_output(y_view),
                ),
                Entry::RopeCache => ctx().encode_rope_call(
                    &mut encoder,
                    &case.spec,
                    &RopeCall::new(view, pos).with_cache(
                        CosSinCache::vllm(&cache_buf, table.1, table.2)
                            .with_overflow_flag(ArrayView::new(&flag)),
                    ),
                ),
                Entry::SinTable => {
                    ctx().encode_sinusoidal_table_at(&mut encoder, &sin_spec, &view, pos)
                }
                _ => ctx().encode_sinusoidal_add(&mut encoder, &sin_spec, &view, pos, case.scale),
            };
            refuses_order(case, result.is_ok())?;
            if result.is_err() {
                return Ok(false); // nothing was submitted
            }
            ctx().queue().submit([encoder.finish()]);
            let got_x = values(&read(&x), dtype, n);
            let got_y = values(&read(&y), dtype, second.len());
            let before_y = values(&second_bytes, dtype, second.len());
            let mut want_x = before.clone();
            let mut want_y = before_y.clone();
            match case.entry {
                Entry::Rope => reference::rope(&case.spec, &layout, &mut want_x, host),
                Entry::RopeQk => {
                    reference::rope(&case.spec, &layout, &mut want_x, host);
                    reference::rope(&case.spec, &second_layout, &mut want_y, host);
                }
                Entry::RopeOut => reference::rope_out(
                    &case.spec,
                    &layout,
                    &before,
                    &second_layout,
                    &mut want_y,
                    host,
                    None,
                ),
                Entry::RopeCache => {
                    if read(&flag)[0] != 0 {
                        return Ok(false); // positions past the cache: clamped and flagged
                    }
                    let cache = reference::HostCache {
                        values: &table.0,
                        max_pos: table.1,
                        row_stride: table.2,
                        cos_offset: 0,
                        sin_offset: table.2 / 2,
                    };
                    let src = want_x.clone();
                    reference::rope_out(
                        &case.spec,
                        &layout,
                        &src,
                        &layout,
                        &mut want_x,
                        host,
                        Some(&cache),
                    );
                }
                Entry::SinTable => {
                    reference::sinusoidal_table_at(&sin_spec, &layout, &mut want_x, host);
                }
                _ => reference::sinusoidal_add(
                    &sin_spec,
                    &layout,
                    &mut want_x,
                    host,
                    f64::from(case.scale),
                ),
            }
            let bf16_cos_sin = case.spec.cos_sin_bf16;
            check(&before, &got_x, &want_x, dtype, bf16_cos_sin)?;
            check(&before_y, &got_y, &want_y, dtype, bf16_cos_sin).map(|()| true)
        }
    }
}

/// The table at any host positions in a new tensor of `layout` (zeros outside its rows).
fn table_at_host(
    spec: &SinusoidalSpec,
    layout: &Layout,
    host: HostPositions<'_>,
) -> Result<bool, String> {
    match ctx().sinusoidal_table_at_host(spec, *layout, host) {
        Err(_) => Ok(false),
        Ok(table) => {
            let zeros = vec![0.0; table.len()];
            let mut expected = zeros.clone();
            reference::sinusoidal_table_at(spec, layout, &mut expected, host);
            check(&zeros, &widen(&table), &expected, Dtype::F32, false).map(|()| true)
        }
    }
}

/// A vLLM-style cache `[64, r]` of cos then sin for the spec's rotary pairs.
fn cache_table(layout: &Layout, spec: &RopeSpec) -> (Vec<f32>, u64, u64) {
    let r = spec.rotary_dim.unwrap_or(layout.shape[3]).clamp(2, 256) & !1;
    let max_pos = 64u64;
    let mut values = vec![0f32; (max_pos * r) as usize];
    for p in 0..max_pos {
        for (j, f) in reference::inv_freq(r, 10_000.0).iter().enumerate() {
            let (s, c) = reference::sincos(p as u32, *f);
            values[(p * r) as usize + j] = c as f32;
            values[(p * r + r / 2) as usize + j] = s as f32;
        }
    }
    (values, max_pos, r)
}
