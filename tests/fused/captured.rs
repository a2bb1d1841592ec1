//! Fused calls read through their recorded dispatches: QK-norm sums by subgroups where the
//! device has them, and every block of a split call within its binding.

use super::common::ctx;
use super::{Case, norm, run_on};
use wgpu_posenc::{NormWeight, Positions};

#[cfg(feature = "capture")]
#[test]
fn qk_norm_sums_by_subgroups_where_the_device_has_them() {
    use wgpu_posenc::capture::Capture;
    // Qwen3's shapes in small: head_dim 128 in vec4 lanes is 16 lane groups, two to each of
    // a token's 8 invocations.
    let case = Case {
        norm: Some(norm(128, NormWeight::Scale)),
        cache_offsets: [8, 20],
        ..Case::new(
            "QK-norm, head_dim 128, vec4, GQA 4/2",
            [2, 9, 4, 2, 128],
            Positions::Start(3),
        )
    };
    let device = ctx().device();
    let fits = device.features().contains(wgpu::Features::SUBGROUP)
        && device.adapter_info().subgroup_min_size >= 8;
    if device.adapter_info().backend == wgpu::Backend::Vulkan {
        // lavapipe's subgroups are 8 wide; so are or wider those of every Vulkan GPU.
        assert!(fits, "no subgroups of 8 on {:?}", device.adapter_info());
    }
    let mut outputs = Vec::new();
    for (on, subgroups) in [(true, fits), (false, false), (true, fits)] {
        let capture = Capture::new();
        let posenc = ctx().clone().with_subgroups(on).with_capture(&capture);
        outputs.push(run_on(&posenc, &case, 21).expect("run").bytes);
        let passes = capture.take_passes();
        let sources: Vec<&str> = passes
            .iter()
            .flat_map(|p| &p.dispatches)
            .map(|d| d.source.as_str())
            .collect();
        assert!(!sources.is_empty());
        for source in sources {
            assert_eq!(source.contains("enable subgroups;"), subgroups, "on: {on}");
        }
    }
    // Both sums are checked against the reference above; each is the same to the bit from
    // one run to the next.
    assert!(outputs[0] == outputs[2], "two runs of the same call differ");
}

#[cfg(feature = "capture")]
#[test]
fn every_block_of_a_split_call_fits_its_binding() {
    use wgpu_posenc::capture::Capture;
    // A packed BSHD projection at odd element offsets, two batch rows, Q in place and out,
    // under binding limits a few bytes around a block of tokens. A token is 5 heads of 10
    // f32 (200 bytes; 40 in Q out; neither a multiple of the 256-byte alignment), so blocks
    // of one size start at other distances from an aligned offset: a plan sized by its first block only had
    // later windows past the limit (BindingTooSmall for a valid call). Each run is checked
    // against the reference (`run_on`), and every storage window recorded against the limit.
    let align = 256;
    let mut runs = 0;
    for offset in [1u64, 3, 13, 29, 47, 63] {
        for q_out in [false, true] {
            let case = Case {
                offset,
                q_out,
                cache_len: 37,
                ..Case::new("split", [2, 37, 3, 1, 10], Positions::Start(0))
            };
            // Both caches are bound whole: 2 x 37 x 10 f32 = 2960 bytes each, with slack at
            // most 3232. Q out is BHSD: n tokens of its 3 heads span 2 x 37 + n rows of 40
            // bytes.
            let (fixed, token, sizes) = if q_out {
                (2 * 37 * 40, 40, [8u64, 9, 13])
            } else {
                (0, 200, [17, 18, 23])
            };
            for tokens in sizes {
                for delta in (0..align).step_by(24) {
                    let cap = fixed + tokens * token + delta;
                    let capture = Capture::new();
                    let posenc = ctx()
                        .clone()
                        .with_storage_offset_alignment(align)
                        .with_max_binding_size(cap)
                        .with_capture(&capture);
                    let ran = run_on(&posenc, &case, 7 + offset).unwrap_or_else(|e| {
                        panic!("offset {offset}, q_out {q_out}, cap {cap}: {e}")
                    });
                    assert!(
                        ran.dispatches > 2,
                        "cap {cap}: {} dispatches",
                        ran.dispatches
                    );
                    for d in capture.take_passes().iter().flat_map(|p| &p.dispatches) {
                        for b in d.bindings.iter().filter(|b| !b.uniform) {
                            assert!(
                                b.size <= cap,
                                "offset {offset}, cap {cap}: binding {} spans {} bytes",
                                b.binding,
                                b.size
                            );
                        }
                    }
                    runs += 1;
                }
            }
        }
    }
    assert_eq!(runs, 6 * 2 * 3 * 11);
}
