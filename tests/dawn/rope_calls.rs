//! The recorded RoPE calls: in place over f32 or bf16, Q and K in one dispatch (two buffers or
//! one packed QKV buffer), out of place, and from a cos/sin cache at ids past its end.

use super::common::{Rng, guarded_input, poison, widen};
use super::{Check, Kind, Recorder, to_bf16, widen_bf16};

use wgpu_posenc::Dims;
use wgpu_posenc::{
    ArrayView, CosSinCache, Dtype, HostPositions, Layout, PairLayout, Positions, RopeCall,
    RopeSpec, Scaling, TensorView, reference,
};

/// RoPE in place over one tensor of `dtype` (F32 or BF16).
pub(super) fn rope(
    rec: &mut Recorder,
    name: &str,
    spec: &RopeSpec,
    layout: Layout,
    dtype: Dtype,
    host: HostPositions<'_>,
    rng: &mut Rng,
) {
    let input = guarded_input(rng, &layout, 11);
    let gpu = host.map(|v| rec.u32(v));
    let (buffer, check) = match dtype {
        Dtype::BF16 => {
            let data = to_bf16(&input);
            let mut expected = widen_bf16(&data);
            reference::rope(spec, &layout, &mut expected, host);
            let buffer = rec.u16(&data);
            let check = rec.check_bf16(&buffer, &data, expected);
            (buffer, check)
        }
        _ => {
            let mut expected = widen(&input);
            reference::rope(spec, &layout, &mut expected, host);
            let buffer = rec.f32(&input);
            let check = rec.check_f32(&buffer, &input, expected);
            (buffer, check)
        }
    };
    rec.call(
        name,
        |ctx, encoder| {
            let view = TensorView::new(&buffer, layout).with_dtype(dtype);
            ctx.encode_rope(encoder, spec, &view, gpu.as_ref().map(ArrayView::new))
                .map(drop)
        },
        vec![check],
    );
}

/// Q and K in one call: two buffers, or two views of one packed QKV buffer.
pub(super) fn rope_qk(rec: &mut Recorder, name: &str, packed: bool, dtype: Dtype, rng: &mut Rng) {
    let spec = RopeSpec::new()
        .base(500_000.0)
        .scaling(Scaling::llama3())
        .pair_layout(PairLayout::HalfSplit);
    let (t, hq, hkv, d) = (19u64, 4u64, 2u64, 64u64);
    let host = HostPositions::Start(4090);
    let (q_layout, k_layout) = if packed {
        let row = (hq + 2 * hkv) * d;
        (
            Layout::strided([1, hq, t, d], [0, d, row]),
            Layout::strided([1, hkv, t, d], [0, d, row]).with_offset(hq * d),
        )
    } else {
        (
            Layout::bshd(Dims {
                batch: 1,
                heads: hq,
                seq: t,
                head_dim: d,
            }),
            Layout::bshd(Dims {
                batch: 1,
                heads: hkv,
                seq: t,
                head_dim: d,
            }),
        )
    };
    let whole = |l: &Layout| l.end().expect("valid") as usize;
    let mut q_in: Vec<f32> = (0..whole(&q_layout).max(whole(&k_layout)) + 64)
        .map(poison)
        .collect();
    let k_in = if packed {
        Vec::new()
    } else {
        guarded_input(rng, &k_layout, 17)
    };
    // Random values at every element of Q (and, packed, of K and V).
    for v in q_in.iter_mut().take(if packed {
        (t * (hq + 2 * hkv) * d) as usize
    } else {
        whole(&q_layout)
    }) {
        *v = rng.value();
    }
    let mut expected_q = widen(&q_in);
    reference::rope(&spec, &q_layout, &mut expected_q, host);
    let expected_k = if packed {
        reference::rope(&spec, &k_layout, &mut expected_q, host);
        Vec::new()
    } else {
        let mut e = widen(&k_in);
        reference::rope(&spec, &k_layout, &mut e, host);
        e
    };
    let gpu = host.map(|v| rec.u32(v));
    let (q_buf, k_buf, checks) = if dtype == Dtype::BF16 {
        let q16 = to_bf16(&q_in);
        let k16 = to_bf16(&k_in);
        let mut eq = widen_bf16(&q16);
        reference::rope(&spec, &q_layout, &mut eq, host);
        let mut ek = widen_bf16(&k16);
        if packed {
            reference::rope(&spec, &k_layout, &mut eq, host);
        } else {
            reference::rope(&spec, &k_layout, &mut ek, host);
        }
        let qb = rec.u16(&q16);
        let kb = (!packed).then(|| rec.u16(&k16));
        let mut checks = vec![rec.check_bf16(&qb, &q16, eq)];
        if let Some(kb) = &kb {
            checks.push(rec.check_bf16(kb, &k16, ek));
        }
        (qb, kb, checks)
    } else {
        let qb = rec.f32(&q_in);
        let kb = (!packed).then(|| rec.f32(&k_in));
        let mut checks = vec![rec.check_f32(&qb, &q_in, expected_q)];
        if let Some(kb) = &kb {
            checks.push(rec.check_f32(kb, &k_in, expected_k));
        }
        (qb, kb, checks)
    };
    rec.call(
        name,
        |ctx, encoder| {
            let q = TensorView::new(&q_buf, q_layout).with_dtype(dtype);
            let k = TensorView::new(k_buf.as_ref().unwrap_or(&q_buf), k_layout).with_dtype(dtype);
            let report =
                ctx.encode_rope_qk(encoder, &spec, &q, &k, gpu.as_ref().map(ArrayView::new))?;
            assert_eq!(report.dispatches, 1, "{name}: Q and K in one dispatch");
            Ok(())
        },
        checks,
    );
}

/// Out of place: into another buffer, or into the same buffer right after the source.
pub(super) fn rope_out_of_place(
    rec: &mut Recorder,
    name: &str,
    same_buffer: bool,
    spec: RopeSpec,
    rng: &mut Rng,
) {
    let src_layout = Layout::bshd(Dims {
        batch: 1,
        heads: 3,
        seq: 21,
        head_dim: 48,
    });
    let n = src_layout.end().expect("valid");
    let dst_layout = if same_buffer {
        Layout::bhsd([1, 3, 21, 48]).with_offset(n + 4)
    } else {
        Layout::bhsd([1, 3, 21, 48]).with_offset(8)
    };
    let host = HostPositions::Start(7);
    let mut src = guarded_input(rng, &src_layout, 0);
    let mut expected_dst;
    let checks;
    let (src_buf, dst_buf) = if same_buffer {
        src.resize((dst_layout.end().expect("valid") + 9) as usize, 0.0);
        for (i, v) in src.iter_mut().enumerate().skip(n as usize) {
            *v = poison(i);
        }
        let s = widen(&src);
        expected_dst = s.clone();
        reference::rope_out(
            &spec,
            &src_layout,
            &s,
            &dst_layout,
            &mut expected_dst,
            host,
            None,
        );
        let b = rec.f32(&src);
        checks = vec![rec.check_f32(&b, &src, expected_dst)];
        (b.clone(), b)
    } else {
        let dst: Vec<f32> = (0..dst_layout.end().expect("valid") as usize + 9)
            .map(poison)
            .collect();
        expected_dst = widen(&dst);
        reference::rope_out(
            &spec,
            &src_layout,
            &widen(&src),
            &dst_layout,
            &mut expected_dst,
            host,
            None,
        );
        let (sb, db) = (rec.f32(&src), rec.f32(&dst));
        checks = vec![
            rec.check_f32(&db, &dst, expected_dst),
            rec.check_f32(&sb, &src, widen(&src)),
        ];
        (sb, db)
    };
    rec.call(
        name,
        |ctx, encoder| {
            let call = RopeCall::new(TensorView::new(&src_buf, src_layout), host_start(&host))
                .with_output(TensorView::new(&dst_buf, dst_layout));
            ctx.encode_rope_call(encoder, &spec, &call).map(drop)
        },
        checks,
    );
}

fn host_start(host: &HostPositions<'_>) -> Positions<ArrayView<'static>> {
    match *host {
        HostPositions::Start(p) => Positions::Start(p),
        _ => unreachable!("a start"),
    }
}

/// RoPE with angles from a vLLM-style cos/sin cache, at ids past its end (clamped, flagged).
pub(super) fn rope_cache(rec: &mut Recorder, rng: &mut Rng) {
    let (max_pos, r) = (64u64, 32u64);
    let spec = RopeSpec::new();
    let layout = Layout::bshd(Dims {
        batch: 1,
        heads: 2,
        seq: 9,
        head_dim: 32,
    });
    let mut cache = vec![0f32; (max_pos * r) as usize];
    for p in 0..max_pos {
        for (j, f) in reference::inv_freq(r, 10_000.0).iter().enumerate() {
            let (s, c) = reference::sincos(p as u32, *f);
            cache[(p * r) as usize + j] = c as f32;
            cache[(p * r + r / 2) as usize + j] = s as f32;
        }
    }
    let ids: Vec<u32> = (0..9).map(|i| (i * 9) as u32 % 80).collect();
    let clamped: Vec<u32> = ids.iter().map(|&p| p.min(max_pos as u32 - 1)).collect();
    let input = guarded_input(rng, &layout, 5);
    let mut expected = widen(&input);
    let table = reference::HostCache {
        values: &cache,
        max_pos,
        row_stride: r,
        cos_offset: 0,
        sin_offset: r / 2,
    };
    reference::rope_out(
        &spec,
        &layout,
        &widen(&input),
        &layout,
        &mut expected,
        HostPositions::Ids(&clamped),
        Some(&table),
    );
    let (x, cache_buf, ids_buf) = (rec.f32(&input), rec.f32(&cache), rec.u32(&ids));
    let flag = rec.u32(&[0, 0, 0, 0]);
    let checks = vec![
        rec.check_f32(&x, &input, expected),
        Check {
            buffer: flag.clone(),
            kind: Kind::U32,
            initial: vec![0; 16],
            expected: vec![1.0, 0.0, 0.0, 0.0],
        },
    ];
    rec.call(
        "rope, vLLM cos/sin cache, ids past the cache (clamped and flagged)",
        |ctx, encoder| {
            let cache =
                CosSinCache::vllm(&cache_buf, max_pos, r).with_overflow_flag(ArrayView::new(&flag));
            let call = RopeCall::new(
                TensorView::new(&x, layout),
                Positions::Ids(ArrayView::new(&ids_buf)),
            )
            .with_cache(cache);
            ctx.encode_rope_call(encoder, &spec, &call).map(drop)
        },
        checks,
    );
}
