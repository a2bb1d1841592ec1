//! The recording of every variant family, made once per test binary.

use super::Recorder;
use super::common::{Rng, ctx};
use super::encodings::{grids, position_grid, sinusoidal, sinusoidal_bf16, timesteps};
use super::qkv::fused;
use super::rope_calls::{rope, rope_cache, rope_out_of_place, rope_qk};
use std::sync::OnceLock;

use wgpu_posenc::Dims;
use wgpu_posenc::{
    Dtype, FrequencyUnit, HostPositions, Layout, MRopeOrder, OutputOrder, PairLayout, RopeSpec,
    Scaling,
};

/// Every variant family, recorded once per test binary.
pub(super) fn recorded() -> &'static Recorder {
    static RECORDED: OnceLock<Recorder> = OnceLock::new();
    RECORDED.get_or_init(|| {
        let mut rec = Recorder::new(ctx());
        let mut rng = Rng::new(0xda3e);
        let yarn = RopeSpec::new()
            .base(1_000_000.0)
            .scaling(Scaling::yarn(4.0, 32_768));
        let starts = [3u32, 9000];
        let ids: Vec<u32> = (0..2 * 23).map(|i| (i * 977 + 13) % 200_000).collect();
        let cu = [0u32, 5, 5, 17, 30];
        let offsets = [100u32, 0, 7, 65_000];
        let axes: Vec<u32> = (0..3 * 2 * 11).map(|i| (i * 37) % 3000).collect();
        // Qwen-Image-like centered coordinates, negative and fractional, as f32 axes.
        let float_axes: Vec<u32> = (0..3 * 2 * 11)
            .map(|i| ((i as f32 - 33.0) * 1.75).to_bits())
            .collect();
        // FLUX.2-like ids on four axes (f32): the fourth, `l`, a text index.
        let float_axes4: Vec<u32> = (0..4 * 2 * 11)
            .map(|i| ((i % 29) as f32 * 0.5 - 3.0).to_bits())
            .collect();
        // Pooled history tokens (Helios'): 4 sets of three f32 axes, then 2 sets of u32 axes.
        let pooled_f32: Vec<u32> = (0..4 * 3 * 2 * 11)
            .map(|i| ((i % 37) as f32 * 0.75 - 5.0).to_bits())
            .collect();
        let pooled_u32: Vec<u32> = (0..2 * 3 * 2 * 11).map(|i| (i * 53) % 2000).collect();
        // Short factors of 0.003 raise every frequency 333-fold.
        let mut fast = RopeSpec::new()
            .frequency_unit(FrequencyUnit::Revolutions)
            .scaling(Scaling::LongRope(wgpu_posenc::LongRope {
                short_factor: vec![0.003; 8],
                long_factor: vec![1.0; 8],
                original_max_position_embeddings: 4096,
                max_position_embeddings: 8192,
                attention_factor: None,
            }));
        fast.scaling_seq_len = Some(16);
        let float_ids: Vec<u32> = (0..2 * 23)
            .map(|i| (i as f32 * -0.37 + 3.5).to_bits())
            .collect();
        let f32_cases: Vec<(&str, RopeSpec, Layout, HostPositions<'_>)> = vec![
            (
                "rope BHSD interleaved vec4",
                RopeSpec::new().pair_layout(PairLayout::Interleaved),
                Layout::bhsd([2, 3, 17, 64]),
                HostPositions::Start(5),
            ),
            (
                "rope BSHD half-split vec4, YaRN",
                yarn,
                Layout::bshd(Dims {
                    batch: 1,
                    heads: 4,
                    seq: 29,
                    head_dim: 128,
                }),
                HostPositions::Start(40_000),
            ),
            (
                "rope scalar, odd offset, partial rotary, inverse",
                RopeSpec::new().rotary_dim(6).inverse(true),
                Layout::bhsd([1, 2, 9, 10]).with_offset(3),
                HostPositions::Start(77),
            ),
            (
                "rope per-row starts",
                RopeSpec::new(),
                Layout::bshd(Dims {
                    batch: 2,
                    heads: 2,
                    seq: 15,
                    head_dim: 32,
                }),
                HostPositions::BatchStarts(&starts),
            ),
            (
                "rope ids",
                RopeSpec::new().pair_layout(PairLayout::Interleaved),
                Layout::bhsd([2, 3, 23, 16]),
                HostPositions::Ids(&ids),
            ),
            (
                "rope varlen with offsets",
                RopeSpec::new(),
                Layout::bshd(Dims {
                    batch: 1,
                    heads: 2,
                    seq: 30,
                    head_dim: 32,
                }),
                HostPositions::varlen(&cu, Some(&offsets)),
            ),
            (
                "rope varlen",
                RopeSpec::new().pair_layout(PairLayout::Interleaved),
                Layout::bshd(Dims {
                    batch: 1,
                    heads: 3,
                    seq: 30,
                    head_dim: 8,
                }),
                HostPositions::varlen(&cu, None),
            ),
            (
                "rope M-RoPE sections (Qwen2-VL)",
                RopeSpec::new().mrope([4, 6, 6], false),
                Layout::bshd(Dims {
                    batch: 2,
                    heads: 2,
                    seq: 11,
                    head_dim: 32,
                }),
                HostPositions::Axes(&axes),
            ),
            (
                "rope M-RoPE interleaved (Qwen3-VL)",
                RopeSpec::new().mrope([6, 5, 5], true),
                Layout::bhsd([2, 1, 11, 32]),
                HostPositions::Axes(&axes),
            ),
            (
                "rope per-axis frequencies (FLUX) at f32 axes, interleaved",
                RopeSpec::new()
                    .pair_layout(PairLayout::Interleaved)
                    .axes_rope([4, 14, 14]),
                Layout::bshd(Dims {
                    batch: 2,
                    heads: 2,
                    seq: 11,
                    head_dim: 64,
                }),
                HostPositions::FloatAxes(&float_axes),
            ),
            (
                "rope 1-D at f32 positions, half-split",
                RopeSpec::new(),
                Layout::bhsd([2, 3, 23, 16]),
                HostPositions::Float(&float_ids),
            ),
            (
                "rope per-axis frequencies over four axes (FLUX.2) at f32 axes",
                RopeSpec::new()
                    .pair_layout(PairLayout::Interleaved)
                    .axes_rope4([4, 10, 10, 8]),
                Layout::bshd(Dims {
                    batch: 2,
                    heads: 2,
                    seq: 11,
                    head_dim: 64,
                }),
                HostPositions::FloatAxes(&float_axes4),
            ),
            (
                "rope dealt frequencies over two axes (Pixtral's vision tower)",
                RopeSpec::new().axes_dealt([0, 16, 16]),
                Layout::bshd(Dims {
                    batch: 2,
                    heads: 2,
                    seq: 11,
                    head_dim: 64,
                }),
                HostPositions::Axes(&axes),
            ),
            (
                "rope in revolutions a position (DINOv3's periods) at f32 axes",
                RopeSpec::new()
                    .axes_rope([0, 16, 16])
                    .base(100.0)
                    .frequency_unit(FrequencyUnit::Revolutions),
                Layout::bhsd([2, 2, 11, 64]),
                HostPositions::FloatAxes(&float_axes),
            ),
            (
                "rope at f32 positions, 333 whole revolutions a position (LongRoPE factors \
                 of 0.003, in revolutions)",
                fast,
                Layout::bhsd([2, 3, 23, 16]),
                HostPositions::Float(&float_ids),
            ),
            (
                "rope rising from pi/2 after 2 leading lanes (LTX's form over an inner \
                 dimension of 110) at f32 axes",
                RopeSpec::new()
                    .pair_layout(PairLayout::Interleaved)
                    .axes_rising([18, 18, 18], MRopeOrder::Interleaved)
                    .leading_lanes(2)
                    .rotary_dim(108),
                Layout::bshd(Dims {
                    batch: 2,
                    heads: 1,
                    seq: 11,
                    head_dim: 110,
                }),
                HostPositions::FloatAxes(&float_axes),
            ),
            (
                "rope half-split in two blocks, one an axis (Gemma 4's vision tower's form)",
                RopeSpec::new().axes_rope([0, 16, 16]).pair_blocks(2),
                Layout::bhsd([2, 2, 11, 64]),
                HostPositions::Axes(&axes),
            ),
            (
                "rope from a learned table per head on three f32 axes (Mochi's form)",
                RopeSpec::new()
                    .pair_layout(PairLayout::Interleaved)
                    .learned(wgpu_posenc::LearnedFrequencies::new(
                        3,
                        2,
                        (0..3 * 2 * 32)
                            .map(|i| ((i * 37 % 101) as f64 - 50.0) / 40.0)
                            .collect(),
                    )),
                Layout::bhsd([2, 2, 11, 64]),
                HostPositions::FloatAxes(&float_axes),
            ),
            (
                "rope with cos and sin the mean of 4 sets of three f32 axes (Helios' pooled \
                 history tokens)",
                RopeSpec::new()
                    .pair_layout(PairLayout::Interleaved)
                    .axes_rope([10, 11, 11])
                    .pooled(4),
                Layout::bshd(Dims {
                    batch: 2,
                    heads: 2,
                    seq: 11,
                    head_dim: 64,
                }),
                HostPositions::FloatAxes(&pooled_f32),
            ),
            (
                "rope with cos and sin the mean of 2 sets of u32 axes",
                RopeSpec::new().axes_rope([0, 16, 16]).pooled(2),
                Layout::bhsd([2, 2, 11, 64]),
                HostPositions::Axes(&pooled_u32),
            ),
            (
                "rope over interleaved pairs with cos and sin tiled for half-split ones, an \
                 axis a block (V-JEPA 2's table; LANE_ANGLES)",
                RopeSpec::new()
                    .pair_layout(PairLayout::Interleaved)
                    .axes_rope([10, 10, 10])
                    .pair_blocks(3)
                    .rotary_dim(60)
                    .table_layout(PairLayout::HalfSplit),
                Layout::bhsd([2, 2, 11, 64]),
                HostPositions::Axes(&axes),
            ),
            (
                "rope over half-split pairs with an interleaved cos and sin table at f32 axes \
                 (ERNIE-Image's)",
                RopeSpec::new()
                    .axes_rope([8, 12, 12])
                    .base(256.0)
                    .table_layout(PairLayout::Interleaved),
                Layout::bshd(Dims {
                    batch: 2,
                    heads: 2,
                    seq: 11,
                    head_dim: 64,
                }),
                HostPositions::FloatAxes(&float_axes),
            ),
        ];
        for (name, spec, layout, host) in &f32_cases {
            rope(&mut rec, name, spec, *layout, Dtype::F32, *host, &mut rng);
        }
        for (name, spec, layout, host) in f32_cases[..5].iter().chain(&f32_cases[6..8]) {
            let name = format!("{name}, bf16");
            rope(&mut rec, &name, spec, *layout, Dtype::BF16, *host, &mut rng);
        }
        // Blocks: a binding cap that cuts the view along tokens (per-row starts past the
        // first block) and along heads (head blocks dispatched in pairs).
        let capped = rec.ctx.clone().with_max_binding_size(16 << 10);
        let base = std::mem::replace(&mut rec.ctx, capped);
        rope(
            &mut rec,
            "rope per-row starts, cut into token blocks",
            &RopeSpec::new(),
            Layout::bshd(Dims {
                batch: 2,
                heads: 2,
                seq: 150,
                head_dim: 32,
            }),
            Dtype::F32,
            HostPositions::BatchStarts(&starts),
            &mut rng,
        );
        rope(
            &mut rec,
            "rope BHSD cut into head blocks, paired",
            &RopeSpec::new().pair_layout(PairLayout::Interleaved),
            Layout::bhsd([1, 6, 40, 32]),
            Dtype::F32,
            HostPositions::Start(3),
            &mut rng,
        );
        rec.ctx = base;
        for (packed, dtype, name) in [
            (false, Dtype::F32, "rope Q+K, GQA, two buffers"),
            (
                true,
                Dtype::F32,
                "rope Q+K, GQA, views of one packed QKV buffer",
            ),
            (true, Dtype::BF16, "rope Q+K, packed QKV, bf16"),
        ] {
            rope_qk(&mut rec, name, packed, dtype, &mut rng);
        }
        let out_spec = RopeSpec::new().rotary_dim(32).base(10_000.0);
        rope_out_of_place(
            &mut rec,
            "rope out of place, two buffers",
            false,
            out_spec.clone(),
            &mut rng,
        );
        // DeepSeek-V3's HF order (the PAIR_HALVES override), four pairs a lane.
        rope_out_of_place(
            &mut rec,
            "rope out of place, interleaved pairs written as halves",
            false,
            out_spec
                .clone()
                .pair_layout(PairLayout::Interleaved)
                .output_order(OutputOrder::PairHalves),
            &mut rng,
        );
        rope_out_of_place(
            &mut rec,
            "rope out of place, output right after the source in one buffer",
            true,
            out_spec,
            &mut rng,
        );
        rope_cache(&mut rec, &mut rng);
        sinusoidal(&mut rec, &mut rng);
        sinusoidal_bf16(&mut rec);
        timesteps(&mut rec, &mut rng);
        grids(&mut rec, &mut rng);
        position_grid(&mut rec, &mut rng);
        fused(&mut rec, &mut rng);
        rec
    })
}
