//! RoPE from a cos/sin cache filled by the sinusoidal kernel: the same bits as on the fly,
//! and positions past the cache.

use super::common::{
    self, Rng, assert_matches, bits, ctx, f32_buffer, guarded_input, read_back, run_on_buffers,
    u32_buffer, widen,
};
use super::{LAYOUTS, TOL};
use wgpu_posenc::Dims;
use wgpu_posenc::{
    ArrayView, CosSinCache, Error, HostPositions, Layout, Positions, RopeCall, RopeSpec,
    SinusoidalLayout, SinusoidalSpec, TensorView, reference,
};

/// A cos/sin cache filled by the sinusoidal kernel: concatenated rows of width r are exactly
/// vLLM's layout with sin first, so cos is at r/2 and sin at 0.
struct TableCache {
    r: u64,
    max_pos: u64,
    table: Vec<f32>,
    buffer: wgpu::Buffer,
}

impl TableCache {
    fn new(r: u64, max_pos: u64) -> Self {
        let spec = SinusoidalSpec::new(r).layout(SinusoidalLayout::Concatenated);
        let table = ctx()
            .sinusoidal_table_host(&spec, max_pos, 0)
            .expect("table");
        let buffer = f32_buffer(&table);
        Self {
            r,
            max_pos,
            table,
            buffer,
        }
    }

    /// The cache as the kernels take it (no overflow flag).
    fn gpu(&self) -> CosSinCache<'_> {
        CosSinCache {
            cos: ArrayView::at(&self.buffer, self.r / 2 * 4),
            sin: ArrayView::new(&self.buffer),
            max_pos: self.max_pos,
            row_stride: self.r,
            overflow_flag: None,
        }
    }

    /// The reference's RoPE of `x` with the angles from this cache.
    fn expected(
        &self,
        spec: &RopeSpec,
        layout: &Layout,
        x: &[f32],
        positions: HostPositions<'_>,
    ) -> Vec<f64> {
        let cache = reference::HostCache {
            values: &self.table,
            max_pos: self.max_pos,
            row_stride: self.r,
            cos_offset: self.r / 2,
            sin_offset: 0,
        };
        let mut expected = widen(x);
        reference::rope_out(
            spec,
            layout,
            &widen(x),
            layout,
            &mut expected,
            positions,
            Some(&cache),
        );
        expected
    }
}

#[test]
fn cache_path_matches_on_the_fly_bit_for_bit() {
    let mut rng = Rng::new(45);
    let table = TableCache::new(64, 300);
    let cache = table.gpu();
    for pair_layout in LAYOUTS {
        let spec = RopeSpec::new().pair_layout(pair_layout);
        let layout = Layout::bshd(Dims {
            batch: 2,
            heads: 4,
            seq: 50,
            head_dim: 64,
        });
        let x = guarded_input(&mut rng, &layout, 3);
        let out = run_on_buffers(&[&x, &x], |encoder, b| {
            let cached = RopeCall::new(TensorView::new(&b[0], layout), Positions::Start(250))
                .with_cache(cache);
            ctx()
                .encode_rope_call(encoder, &spec, &cached)
                .expect("cached");
            ctx()
                .encode_rope(
                    encoder,
                    &spec,
                    &TensorView::new(&b[1], layout),
                    Positions::Start(250),
                )
                .expect("fly");
        });
        assert_eq!(
            bits(&out[0]),
            bits(&out[1]),
            "{pair_layout:?}: cache and on-the-fly differ"
        );
        let expected = table.expected(&spec, &layout, &x, HostPositions::Start(250));
        assert_matches(&x, &out[0], &expected, TOL, "cache vs reference");
    }
}

#[test]
fn cache_positions_out_of_range() {
    let table = TableCache::new(32, 64);
    let max_pos = table.max_pos;
    let spec = RopeSpec::new();
    let layout = Layout::bhsd([1, 2, 8, 32]);
    let mut rng = Rng::new(46);
    let x = guarded_input(&mut rng, &layout, 3);
    let cache = table.gpu();
    // Known on the host: refused before anything is recorded.
    let buffer = f32_buffer(&x);
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    let call =
        RopeCall::new(TensorView::new(&buffer, layout), Positions::Start(57)).with_cache(cache);
    let e = ctx()
        .encode_rope_call(&mut encoder, &spec, &call)
        .expect_err("past the cache");
    assert!(
        matches!(
            e,
            Error::PositionOutOfCache {
                position: 64,
                max_pos: 64
            }
        ),
        "{e}"
    );
    // On the GPU without a flag: refused.
    let ids: Vec<u32> = vec![1, 2, 3, 70, 5, 6, 1000, 8];
    let ids_buffer = u32_buffer(&ids);
    let call = RopeCall::new(
        TensorView::new(&buffer, layout),
        Positions::Ids(ArrayView::new(&ids_buffer)),
    )
    .with_cache(cache);
    let e = ctx()
        .encode_rope_call(&mut encoder, &spec, &call)
        .expect_err("no flag");
    assert!(matches!(e, Error::PositionsMismatch(_)), "{e}");
    // On the GPU with a flag: clamped to the last row and flagged; in range, flag stays 0.
    for (ids, flagged) in [(ids.clone(), 1u32), (vec![0, 1, 2, 3, 63, 62, 61, 60], 0)] {
        let ids_buffer = u32_buffer(&ids);
        let flag = common::f32_buffer(&[f32::from_bits(0); 4]);
        let out = run_on_buffers(&[&x], |encoder, b| {
            let call = RopeCall::new(
                TensorView::new(&b[0], layout),
                Positions::Ids(ArrayView::new(&ids_buffer)),
            )
            .with_cache(cache.with_overflow_flag(ArrayView::at(&flag, 4)));
            ctx()
                .encode_rope_call(encoder, &spec, &call)
                .expect("clamped");
        });
        let flag = read_back(
            &flag,
            ctx().device().create_command_encoder(&Default::default()),
        );
        assert_eq!(bits(&flag), vec![0, flagged, 0, 0]);
        let clamped: Vec<u32> = ids.iter().map(|&p| p.min(max_pos as u32 - 1)).collect();
        let expected = table.expected(&spec, &layout, &x, HostPositions::Ids(&clamped));
        assert_matches(&x, &out[0], &expected, TOL, "clamped");
    }
}
