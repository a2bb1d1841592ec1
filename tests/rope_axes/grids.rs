//! Position grids ([`PositionGrid`], built on the GPU by `PosEnc::encode_position_grid`):
//! each model's recipe against the ids its library's own code makes
//! (`tests/data/positions/position_ids.py`: FLUX.1's, Kontext's and FLUX.2's pipelines,
//! Qwen-Image's module at odd and even sides, transformers' `get_vision_position_ids`;
//! `tests/data/diffusers/rope_axes.py`: FLUX.1, Wan, HunyuanVideo and Qwen-Image), then rotated in the same encoder and compared with
//! diffusers' rotated rows; random grids on the GPU against the host, bit for bit, in
//! poisoned buffers with guards; bad grids as typed errors.

use super::common::{Rng, ctx, poison, run_on_buffer, test_data};
use super::{from_rows, indices, list, put_rows, u};
use serde_json::Value;
use wgpu_posenc::{
    ArrayView, Dims, Error, GRID_DIMS, GridAxis, GridSegment, Layout, PairLayout, PositionGrid,
    Positions, RopeSpec, TensorView,
};

/// The grid's positions for `batch` rows as the GPU writes them, after `lead` poisoned words
/// and before 5 more, the guards checked.
fn on_gpu(grid: &PositionGrid, batch: u64, lead: usize) -> Vec<f32> {
    let n = (grid.tokens() * batch) as usize * grid.axes;
    let initial: Vec<f32> = (0..lead + n + 5).map(poison).collect();
    let out = run_on_buffer(&initial, |encoder, buffer| {
        ctx()
            .encode_position_grid(encoder, grid, batch, ArrayView::at(buffer, lead as u64 * 4))
            .expect("encode");
    });
    for i in (0..lead).chain(lead + n..lead + n + 5) {
        assert_eq!(
            out[i].to_bits(),
            poison(i).to_bits(),
            "guard {i} overwritten"
        );
    }
    out[lead..lead + n].to_vec()
}

/// The GPU's values equal the host's bit for bit, every one written.
fn check_bits(grid: &PositionGrid, batch: u64, lead: usize) -> Vec<f32> {
    let gpu = on_gpu(grid, batch, lead);
    let host = grid.positions(batch).expect("host");
    assert_eq!(gpu.len(), host.len());
    for (k, (a, b)) in gpu.iter().zip(&host).enumerate() {
        assert_eq!(
            a.to_bits(),
            b.to_bits(),
            "value {k}: {a} on the GPU, {b} on the host"
        );
    }
    gpu
}

/// The recipe of each case of `position_ids.json`.
fn recipe(name: &str) -> PositionGrid {
    match name {
        "flux" => PositionGrid::flux(8, [24, 40]),
        "flux_kontext" => PositionGrid::flux_kontext(8, [24, 40], [16, 20]),
        "flux2" => PositionGrid::flux2(8, [24, 40], &[[16, 20], [12, 8]]),
        "qwen_image" => PositionGrid::qwen_image(5, &[[1, 7, 9], [2, 5, 6]]),
        "qwen2_vl_merge2" => PositionGrid::merge_blocks([2, 12, 20], 2).expect("merge"),
        "qwen2_vl_merge3" => PositionGrid::merge_blocks([1, 9, 15], 3).expect("merge"),
        other => panic!("no recipe for {other}"),
    }
}

#[test]
fn grids_make_the_libraries_position_ids() {
    let data = test_data("positions/position_ids.json");
    for case in data["cases"].as_array().expect("cases") {
        let name = case["name"].as_str().expect("name");
        let grid = recipe(name);
        let (n, axes) = (u(&case["tokens"]) as usize, u(&case["axes"]) as usize);
        assert_eq!((grid.tokens() as usize, grid.axes), (n, axes), "{name}");
        let got = check_bits(&grid, 2, 3);
        let ids = case["ids"].as_array().expect("ids");
        for (t, id) in ids.iter().enumerate() {
            for (a, &want) in list(id).iter().enumerate() {
                for b in 0..2 {
                    let have = got[(a * 2 + b) * n + t];
                    assert_eq!(
                        f64::from(have),
                        want,
                        "{name}: token {t}, axis {a}, row {b}"
                    );
                }
            }
        }
        eprintln!("{name}: {n} tokens x {axes} axes as the library makes them");
    }
}

/// The recipe of each case of `rope_axes.json`.
fn pipeline_recipe(case: &Value) -> PositionGrid {
    let grid: Vec<u32> = case["grid"]
        .as_array()
        .expect("grid")
        .iter()
        .map(|g| u(g) as u32)
        .collect();
    let text = u(&case["text_tokens"]) as u32;
    match case["name"].as_str().expect("name") {
        "flux1" => PositionGrid::flux(text, [grid[0], grid[1]]),
        "wan21" | "hunyuan_video" => PositionGrid::video([grid[0], grid[1], grid[2]]),
        "qwen_image" => PositionGrid::qwen_image(text, &[[grid[0], grid[1], grid[2]]]),
        other => panic!("no recipe for {other}"),
    }
}

/// FLUX.1, Wan 2.1, HunyuanVideo and Qwen-Image: the grid written on the GPU and RoPE over
/// it in one encoder, against diffusers' rotated rows at the pipelines' own positions.
#[test]
fn grid_positions_rotate_as_diffusers() {
    let data = test_data("diffusers/rope_axes.json");
    for case in data["cases"].as_array().expect("cases") {
        let name = case["name"].as_str().expect("name");
        let grid = pipeline_recipe(case);
        let (s, heads, d) = (u(&case["tokens"]), u(&case["heads"]), u(&case["head_dim"]));
        assert_eq!(grid.tokens(), s, "{name}");
        let host = check_bits(&grid, 1, 0);
        if let Some(all) = case.get("all_positions") {
            let all = list(all);
            assert_eq!(host.len(), all.len(), "{name}");
            for (k, (&mine, &theirs)) in host.iter().zip(&all).enumerate() {
                assert_eq!(
                    f64::from(mine),
                    theirs,
                    "{name}: value {k}, the module's own"
                );
            }
        }
        let dims: Vec<u64> = case["axes_dims"]
            .as_array()
            .expect("dims")
            .iter()
            .map(u)
            .collect();
        let spec = RopeSpec::new()
            .base(case["theta"].as_f64().expect("theta"))
            .pair_layout(PairLayout::Interleaved)
            .axes_rope([dims[0] / 2, dims[1] / 2, dims[2] / 2]);
        let rows = indices(&case["rows"]);
        let row = (heads * d) as usize;
        let mut q = Rng::new(29).values(s as usize * row);
        put_rows(&mut q, &case["q"], &rows, 0, row);
        for (k, &r) in rows.iter().enumerate() {
            let sampled: Vec<f64> = list(&case["positions"][k]);
            let mine: Vec<f64> = (0..3)
                .map(|a| f64::from(host[a * s as usize + r]))
                .collect();
            assert_eq!(mine, sampled, "{name}: token {r}");
        }
        let shape = Dims {
            batch: 1,
            seq: s,
            heads,
            head_dim: d,
        };
        let positions = wgpu::util::DeviceExt::create_buffer_init(
            ctx().device(),
            &wgpu::util::BufferInitDescriptor {
                label: Some("grid positions"),
                contents: &vec![0xffu8; host.len() * 4],
                usage: wgpu::BufferUsages::STORAGE,
            },
        );
        let got = run_on_buffer(&q, |encoder, buffer| {
            let out = ArrayView::new(&positions);
            ctx()
                .encode_position_grid(encoder, &grid, 1, out)
                .expect("grid");
            let view = TensorView::new(buffer, Layout::bshd(shape));
            ctx()
                .encode_rope(encoder, &spec, &view, Positions::FloatAxes(out))
                .expect("rope");
        });
        let theirs = from_rows(&got, &case["rotated"], &rows, 0, row);
        // As `diffusion_transformer_rotations_match_diffusers`: the modules that build
        // their angles in f32 are off by up to `max_own_error`.
        let own = case["max_own_error"].as_f64().expect("own error");
        let slack = if own > 1.5e-7 { own } else { 0.0 };
        assert!(
            theirs <= slack + 4e-7,
            "{name}: {theirs:e} from diffusers ({own:e})"
        );
        eprintln!("{name}: grid on the GPU, rotated within {theirs:.2e} of diffusers");
    }
}

/// A random segment of `axes` axes: 1 to 5 dimensions, integer steps and offsets (some
/// negative), a scale of 1, a power of two or an arbitrary f32.
fn random_segment(rng: &mut Rng, axes: usize) -> GridSegment {
    let dims = rng.range(1, GRID_DIMS as u64 + 1) as usize;
    let shape: Vec<u32> = (0..dims).map(|_| rng.range(1, 7) as u32).collect();
    let coords: Vec<GridAxis> = (0..axes)
        .map(|_| {
            let mut steps = [0i32; GRID_DIMS];
            for s in steps.iter_mut().take(dims) {
                *s = rng.range(0, 9) as i32 - 4;
            }
            let offset = rng.range(0, 20_001) as i32 - 10_000;
            let scale = match rng.range(0, 3) {
                0 => 1.0,
                1 => 2f32.powi(rng.range(0, 9) as i32 - 4),
                _ => (rng.range(1, 1 << 20) as f32) / 997.0,
            };
            GridAxis::sum(steps).plus(offset).scaled(scale)
        })
        .collect();
    GridSegment::new(&shape, &coords)
}

#[test]
fn random_grids_on_the_gpu_equal_the_host_bit_for_bit() {
    let mut rng = Rng::new(2812);
    for _ in 0..40 {
        let axes = [1, 3, 4][rng.range(0, 3) as usize];
        let mut grid = PositionGrid::new(axes);
        for _ in 0..rng.range(1, 7) {
            grid = grid.then(random_segment(&mut rng, axes));
        }
        let batch = rng.range(1, 4);
        check_bits(&grid, batch, rng.range(0, 70) as usize);
    }
    // A grid of many tokens: 75 600 (Wan 720p's 21 x 45 x 80), two rows.
    check_bits(&PositionGrid::video([21, 45, 80]).text_zeros(512), 2, 1);
}

#[test]
fn bad_grids_are_typed_errors() {
    let bad = |grid: &PositionGrid| {
        let e = grid.validate().expect_err("refused");
        assert!(matches!(e, Error::InvalidPositionGrid { .. }), "{e}");
        let out = super::common::u32_buffer(&[0; 64]);
        let mut encoder = ctx().device().create_command_encoder(&Default::default());
        let e = ctx()
            .encode_position_grid(&mut encoder, grid, 1, ArrayView::new(&out))
            .expect_err("refused on the GPU path");
        assert!(matches!(e, Error::InvalidPositionGrid { .. }), "{e}");
        e.to_string()
    };
    let ok = PositionGrid::video([2, 3, 4]);
    assert!(
        bad(&PositionGrid {
            axes: 2,
            ..ok.clone()
        })
        .contains("1, 3 or 4")
    );
    bad(&PositionGrid::new(3));
    let many = (0..17).fold(PositionGrid::new(1), |g, _| {
        g.then(GridSegment::constant(1, &[0]))
    });
    bad(&many);
    bad(&PositionGrid::new(3).then(GridSegment::constant(0, &[0, 0, 0])));
    bad(&PositionGrid::new(3).then(GridSegment::new(&[1; 6], &[GridAxis::constant(0); 3])));
    bad(&PositionGrid::new(3).then(GridSegment::constant(4, &[0, 0])));
    bad(&PositionGrid::new(1).then(GridSegment::new(&[4], &[GridAxis::index(1)])));
    bad(&PositionGrid::new(1).then(GridSegment::new(&[4], &[GridAxis::index(7)])));
    let far = GridAxis::index(0).plus(1 << 24);
    assert!(bad(&PositionGrid::new(1).then(GridSegment::new(&[4], &[far]))).contains("2^24"));
    let nan = GridAxis::index(0).scaled(f32::NAN);
    bad(&PositionGrid::new(1).then(GridSegment::new(&[4], &[nan])));
    let huge = GridAxis::index(0).scaled(1e30);
    assert!(bad(&PositionGrid::new(1).then(GridSegment::new(&[4], &[huge]))).contains("2^32"));
    let tiny = GridAxis::index(0).scaled(1e-30);
    bad(&PositionGrid::new(1).then(GridSegment::new(&[4], &[tiny])));
    let e = PositionGrid::merge_blocks([1, 9, 16], 2).expect_err("merge");
    assert!(matches!(e, Error::InvalidPositionGrid { .. }), "{e}");
    // The output: room for every value, STORAGE, a 4-byte offset.
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    let short = super::common::u32_buffer(&[0; 23]);
    let e = ctx()
        .encode_position_grid(&mut encoder, &ok, 1, ArrayView::new(&short))
        .expect_err("short");
    assert!(
        matches!(
            e,
            Error::PositionIdsTooShort {
                needed: 72,
                available: 23,
                ..
            }
        ),
        "{e}"
    );
    let e = ctx()
        .encode_position_grid(&mut encoder, &ok, 1, ArrayView::at(&short, 2))
        .expect_err("misaligned");
    assert!(matches!(e, Error::MisalignedOffset { .. }), "{e}");
    let mapped = ctx().device().create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 1024,
        usage: wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let e = ctx()
        .encode_position_grid(&mut encoder, &ok, 1, ArrayView::new(&mapped))
        .expect_err("no STORAGE");
    assert!(matches!(e, Error::MissingUsage { .. }), "{e}");
    // No rows: nothing written, no error.
    let e = ctx().encode_position_grid(&mut encoder, &ok, 0, ArrayView::new(&short));
    assert_eq!(e.expect("empty").dispatches, 0);
}

/// CogVideoX 1.0 at 480 x 720 (its base grid: integer positions) and 768 x 1360 (a crop
/// linspace: fractional ones): the grid's coordinates against `get_3d_rotary_pos_embed`'s
/// f32 linspace, and the rotation in one encoder against diffusers' `apply_rotary_emb` of
/// its table, the text tokens left as they are.
#[test]
fn cogvideox_crop_linspace_rotates_as_diffusers() {
    let data = test_data("positions/cogvideox_rope.json");
    for case in data["cases"].as_array().expect("cases") {
        let name = case["name"].as_str().expect("name");
        let pair = |k: &str| {
            let v: Vec<u32> = case[k]
                .as_array()
                .expect(k)
                .iter()
                .map(|x| u(x) as u32)
                .collect();
            [v[0], v[1]]
        };
        let (text, frames) = (u(&case["text"]) as u32, u(&case["frames"]) as u32);
        let grid = PositionGrid::cogvideox(text, frames, pair("grid"), pair("base")).expect("grid");
        let [gh, gw] = pair("grid");
        let n = grid.tokens() as usize;
        let host = check_bits(&grid, 1, 2);
        // Rows and columns against diffusers' linspace: f32 values a few units of the last
        // place apart where they are fractions (torch steps from both ends; the grid rounds
        // its reduced scale once), the same integers at the base grid.
        let mut off = 0.0f64;
        for (k, axis, len) in [(1, "grid_h", gw as usize), (2, "grid_w", 1)] {
            for (i, &want) in list(&case[axis]).iter().enumerate() {
                let token = text as usize + i * len;
                let have = f64::from(host[k * n + token]);
                off = off.max((have - want).abs());
            }
        }
        assert!(
            off <= 4e-6,
            "{name}: coordinates {off:e} from diffusers' linspace"
        );
        let (heads, d) = (u(&case["heads"]), u(&case["head_dim"]));
        let spec = RopeSpec::new()
            .pair_layout(PairLayout::Interleaved)
            .axes_rope([d / 8, 3 * d / 16, 3 * d / 16]);
        let row = (heads * d) as usize;
        let rows = indices(&case["rows"]);
        let mut q = Rng::new(31).values(n * row);
        put_rows(&mut q, &case["q"], &rows, 0, row);
        let shape = Dims {
            batch: 1,
            seq: n as u64,
            heads,
            head_dim: d,
        };
        let positions = super::common::u32_buffer(&vec![u32::MAX; 3 * n]);
        let got = run_on_buffer(&q, |encoder, buffer| {
            let out = ArrayView::new(&positions);
            ctx()
                .encode_position_grid(encoder, &grid, 1, out)
                .expect("grid");
            let view = TensorView::new(buffer, Layout::bshd(shape));
            ctx()
                .encode_rope(encoder, &spec, &view, Positions::FloatAxes(out))
                .expect("rope");
        });
        assert_eq!(
            got[..text as usize * row],
            q[..text as usize * row],
            "{name}: text rotated"
        );
        // The f64 reference at the grid's positions (every token) and at diffusers' own
        // coordinates (its own error: f32 angles from f32 frequencies).
        let layout = Layout::bshd(shape);
        let reference = |words: &[u32]| {
            let mut x: Vec<f64> = q.iter().map(|&v| f64::from(v)).collect();
            wgpu_posenc::reference::rope(&spec, &layout, &mut x, Positions::FloatAxes(words));
            x
        };
        let mine: Vec<u32> = host.iter().map(|p| p.to_bits()).collect();
        let exact = reference(&mine);
        let ours = got
            .iter()
            .zip(&exact)
            .map(|(&a, &b)| (f64::from(a) - b).abs())
            .fold(0.0, f64::max);
        let (gh_list, gw_list) = (list(&case["grid_h"]), list(&case["grid_w"]));
        let mut own_words = vec![0u32; 3 * n];
        for t in 0..frames as usize {
            for (i, &row_at) in gh_list.iter().enumerate() {
                for (j, &column_at) in gw_list.iter().enumerate() {
                    let token = text as usize + (t * gh as usize + i) * gw as usize + j;
                    own_words[token] = (t as f32).to_bits();
                    own_words[n + token] = (row_at as f32).to_bits();
                    own_words[2 * n + token] = (column_at as f32).to_bits();
                }
            }
        }
        let at_theirs = reference(&own_words);
        let theirs = from_rows(&got, &case["rotated"], &rows, 0, row);
        let own = from_rows(&at_theirs, &case["rotated"], &rows, 0, row);
        // The GPU within the contract of the reference; diffusers off the exact rotation by
        // its own error, and the coordinates' last bits turn the fastest pair by `off` more.
        assert!(ours <= 4e-7, "{name}: {ours:e} from the reference");
        let allowed = own + 4e-7 + off * 5.0;
        assert!(
            theirs <= allowed,
            "{name}: {theirs:e} from diffusers (allowed {allowed:e})"
        );
        eprintln!(
            "{name} ({n} tokens, grid {gh} x {gw}): {theirs:.2e} from diffusers (its own error \
             {own:.2e}), {ours:.2e} from the reference; coordinates within {off:.1e} of its linspace"
        );
    }
}

/// DINOv3's coordinates (every model type whose tower takes
/// `get_patches_center_coordinates`, `tests/data/hf/vision_rope.json`): the recipe against
/// the positions transformers made, every token, prefix tokens included.
#[test]
fn dinov3_grid_gives_transformers_patch_centers() {
    let data = test_data("hf/vision_rope.json");
    let (mut seen, mut worst) = (0, 0.0f64);
    for case in data["cases"].as_array().expect("cases") {
        let source = case["position_source"].as_str().unwrap_or("");
        let Some(rest) = source.strip_prefix("get_patches_center_coordinates(") else {
            continue;
        };
        let sides: Vec<u32> = rest
            .split(')')
            .next()
            .expect("sides")
            .split(',')
            .map(|v| v.trim().parse().expect("side"))
            .collect();
        let rows: Vec<Vec<f64>> = case["position_rows"]
            .as_array()
            .expect("rows")
            .iter()
            .map(list)
            .collect();
        // The recorded tokens' positions (every prefix token among them).
        let n = u(&case["num_tokens"]) as usize;
        let tokens: Vec<usize> = case["token_index"]
            .as_array()
            .expect("tokens")
            .iter()
            .map(|t| u(t) as usize)
            .collect();
        let prefix = n as u32 - sides[0] * sides[1];
        let grid = PositionGrid::dinov3(prefix, [sides[0], sides[1]]);
        assert_eq!(grid.tokens() as usize, n);
        let made = check_bits(&grid, 1, 1);
        let mut off = 0.0f64;
        for (k, row) in rows.iter().enumerate() {
            for (&t, &want) in tokens.iter().zip(row) {
                off = off.max((f64::from(made[(k + 1) * n + t]) - want).abs());
            }
        }
        // A coordinate in (-1, 1) and two f32 roundings on either side: within 2^-23.
        assert!(
            off <= 2.0 * 2f64.powi(-24),
            "{}: {off:e} from transformers",
            case["model_type"]
        );
        seen += 1;
        worst = worst.max(off);
    }
    assert!(seen >= 3, "{seen} DINOv3-style cases");
    eprintln!(
        "{seen} towers with DINOv3's patch centers: the grid within {worst:.1e} of transformers"
    );
}

/// LTX-Video's coordinates (`rope_configs.py`: its module's `_prepare_video_coords` for a
/// 9 x 24 x 40 latent at 25 fps, as `2 g - 1`): the recipe at the sampled tokens.
#[test]
fn ltx_video_grid_gives_the_modules_coordinates() {
    let data = test_data("diffusers/rope_configs.json");
    let golden = &data["builds"]["LTXVideoTransformer3DModel"]["golden"][0];
    let grid = PositionGrid::ltx_video([9, 24, 40], 25).expect("grid");
    let n = grid.tokens() as usize;
    let made = check_bits(&grid, 1, 0);
    let mut worst = [0.0f64; 3];
    for (k, row) in golden["rows"].as_array().expect("rows").iter().enumerate() {
        let t = u(row) as usize;
        for (a, &want) in list(&golden["positions"][k]).iter().enumerate() {
            worst[a] = worst[a].max((f64::from(made[a * n + t]) - want).abs());
        }
    }
    // Rows and columns exact (dyadic); frames one f32 rounding apart in (-1, 1).
    assert_eq!(worst[1..], [0.0, 0.0], "rows and columns");
    assert!(
        worst[0] <= 2f64.powi(-23),
        "frames {:e} from the module",
        worst[0]
    );
    assert!(PositionGrid::ltx_video([9, 24, 40], 0).is_err());
    eprintln!(
        "LTX-Video: rows and columns exact, frames within {:.1e} of the module",
        worst[0]
    );
}
