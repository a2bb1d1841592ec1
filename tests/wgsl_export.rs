//! The WGSL functions exported for users' kernels (`wgpu_posenc::wgsl`): a user-style kernel
//! (attention scores that rotate q and k as they are loaded) built on them matches the f64
//! reference, for both pair layouts, partial rotary, the inverse rotation, scalings with an
//! attention factor and length-dependent ones, at positions over the whole u32 range.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{Rng, ctx, poison};
use naga::valid::{Capabilities, ValidationFlags, Validator};
use wgpu::util::DeviceExt;
use wgpu_posenc::{HostPositions, Layout, PairLayout, RopeSpec, Scaling, reference, wgsl};

/// Tokens of the toy kernel: scores is `[S, S]`.
const S: u32 = 48;

/// scores[i * S + t] = rope(q_i, pos_i) . rope(k_t, pos_t) over one head of D elements whose
/// first R rotate.
const SCORES: &str = r#"
override S: u32;
override D: u32;
override R: u32;
override INTERLEAVED: bool;
override ATTN: f32;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> pos: array<u32>;
@group(0) @binding(4) var<storage, read_write> scores: array<f32>;

fn pair_elements(j: u32) -> vec2<u32> {
    if INTERLEAVED {
        return vec2(2u * j, 2u * j + 1u);
    }
    return vec2(j, j + R / 2u);
}

fn rotated_dot(i: u32, t: u32) -> f32 {
    var acc = 0.0;
    for (var j = 0u; j < R / 2u; j++) {
        let e = pair_elements(j);
        let cq = posenc_rope_pair_cos_sin(pos[i], j) * ATTN;
        let ck = posenc_rope_pair_cos_sin(pos[t], j) * ATTN;
        let a = posenc_rope_rotate(vec2(q[i * D + e.x], q[i * D + e.y]), cq);
        let b = posenc_rope_rotate(vec2(k[t * D + e.x], k[t * D + e.y]), ck);
        acc += a.x * b.x + a.y * b.y;
    }
    for (var e = R; e < D; e++) {
        acc += q[i * D + e] * k[t * D + e];
    }
    return acc;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if id.x >= S * S {
        return;
    }
    scores[id.x] = rotated_dot(id.x / S, id.x % S);
}
"#;

fn validate(source: &str) -> naga::Module {
    let module = naga::front::wgsl::parse_str(source)
        .unwrap_or_else(|e| panic!("{}", e.emit_to_string(source)));
    Validator::new(ValidationFlags::all(), Capabilities::all())
        .validate(&module)
        .unwrap_or_else(|e| panic!("{}", e.emit_to_string(source)));
    module
}

/// Every module-scope name naga reports, of every kind: functions, named types, global
/// variables, constants, overrides, entry points.
fn module_names(module: &naga::Module) -> Vec<String> {
    let functions = module.functions.iter().filter_map(|(_, f)| f.name.clone());
    let types = module.types.iter().filter_map(|(_, t)| t.name.clone());
    let globals = module
        .global_variables
        .iter()
        .filter_map(|(_, g)| g.name.clone());
    let constants = module.constants.iter().filter_map(|(_, c)| c.name.clone());
    let overrides = module.overrides.iter().filter_map(|(_, o)| o.name.clone());
    let entries = module.entry_points.iter().map(|e| e.name.clone());
    functions
        .chain(types)
        .chain(globals)
        .chain(constants)
        .chain(overrides)
        .chain(entries)
        .collect()
}

#[test]
fn every_exported_name_is_prefixed_and_sits_beside_the_users_own() {
    for source in [
        wgsl::ROPE_FUNCTIONS.to_string(),
        wgsl::rope_functions_with_binding(2, 7),
    ] {
        let names = module_names(&validate(&source));
        assert!(
            names.iter().any(|n| n == "posenc_rope_cos_sin"),
            "{names:?}"
        );
        for name in &names {
            assert!(name.starts_with("posenc_"), "{name} is not prefixed");
        }
        // Only what the exported functions use: not the kernels' width helpers.
        for internal in ["posenc_lanes", "posenc_first_lane", "posenc_LANES"] {
            assert!(!names.iter().any(|n| n == internal), "{internal} exported");
        }
        // Comments keep their words: the crate's API is named as it is.
        assert!(
            !source.contains("RopeSpec::posenc_") && !source.contains("wgsl::posenc_"),
            "{source}"
        );
    }
    // The names the crate's own shaders use, declared by a user kernel too, of every kind.
    let user = "alias FV = vec2<f32>;\nfn turns(x: u32) -> u32 { return x; }\n\
                struct SinCos { a: f32 }\nconst LANES: u32 = 4u;\noverride UV: u32 = 1u;\n\
                fn lanes(g: u32) -> u32 { return g * LANES; }\n\
                fn first_lane(v: u32) -> u32 { return v + UV; }\n";
    validate(&wgsl::with_functions(wgsl::ROPE_FUNCTIONS, user));
    validate(&wgsl::with_functions(
        &wgsl::rope_functions_with_binding(0, 3),
        user,
    ));
    let bound = wgsl::rope_functions_with_binding(2, 7);
    assert!(bound.contains("@group(2) @binding(7)"), "{bound}");
}

#[test]
fn a_kernel_with_directives_keeps_them_first() {
    // Directives (enable, requires, diagnostic) must precede every declaration: the
    // functions go after them, the rest of the kernel after the functions.
    let kernel = "// my kernel\nenable f16;\n/* a comment */ diagnostic(off, derivative_uniformity);\n\
                  @group(0) @binding(1) var<storage, read_write> out: array<f32>;\n\
                  @compute @workgroup_size(1)\n\
                  fn main() { let h: f16 = 1.0h; out[0] = posenc_rope_cos_sin(7u, vec2(1u, 2u)).x + f32(h); }\n";
    let source = wgsl::with_functions(wgsl::ROPE_FUNCTIONS, kernel);
    let functions_at = source.find("fn posenc_").expect("functions");
    for directive in ["enable f16;", "diagnostic(off"] {
        assert!(source.find(directive).unwrap() < functions_at, "{source}");
    }
    let requires = wgsl::with_functions("fn f() {}\n", "requires a, b;\nfn g() {}\n");
    assert_eq!(requires, "requires a, b;\nfn f() {}\nfn g() {}\n");
    assert!(source.find("var<storage, read_write> out").unwrap() > functions_at);
    let names = module_names(&validate(&source));
    assert!(names.iter().any(|n| n == "main"), "{names:?}");
    // Put in front of the kernel, as the plain text would be, it does not compile.
    assert!(
        naga::front::wgsl::parse_str(&(wgsl::ROPE_FUNCTIONS.to_string() + kernel)).is_err(),
        "directives after declarations must be refused"
    );
    // No directives: the functions first, the kernel unchanged after them.
    let plain = "fn main2() {}\n";
    assert_eq!(
        wgsl::with_functions(wgsl::ROPE_FUNCTIONS, plain),
        format!("{}{plain}", wgsl::ROPE_FUNCTIONS)
    );
}

#[test]
fn a_binding_past_the_devices_limits_is_an_error() {
    let device = ctx().device();
    let limits = device.limits();
    let ok = wgsl::rope_functions_for_device(device, limits.max_bind_groups - 1, 0)
        .expect("the last group");
    assert_eq!(
        ok,
        wgsl::rope_functions_with_binding(limits.max_bind_groups - 1, 0)
    );
    for (group, binding, limit) in [
        (limits.max_bind_groups, 0, "max_bind_groups"),
        (u32::MAX, 0, "max_bind_groups"),
        (
            0,
            limits.max_bindings_per_bind_group,
            "max_bindings_per_bind_group",
        ),
    ] {
        match wgsl::rope_functions_for_device(device, group, binding) {
            Err(wgpu_posenc::Error::DeviceLimit { limit: l, .. }) => assert_eq!(l, limit),
            other => panic!("group {group} binding {binding}: {other:?}"),
        }
    }
}

/// Runs the toy kernel for `spec` over random q, k and positions; returns the largest
/// difference from the reference's scores.
fn run_scores(spec: &RopeSpec, head_dim: u64, seed: u64) -> f64 {
    let ctx = ctx();
    let device = ctx.device();
    let mut rng = Rng::new(seed);
    let n = (S as u64 * head_dim) as usize;
    let (q, k) = (rng.values(n), rng.values(n));
    // Small positions, and positions anywhere in the u32 range.
    let pos: Vec<u32> = (0..S)
        .map(|i| if i % 2 == 0 { i } else { rng.next_u64() as u32 })
        .collect();
    let seq_len = pos.iter().map(|&p| u64::from(p) + 1).max().unwrap_or(0);
    let words = spec.angle_words(head_dim, seq_len).expect("angle words");
    let r = spec.rotary_dim.unwrap_or(head_dim);
    assert_eq!(words.words.len() as u64, r / 2);

    let source = wgsl::with_functions(&wgsl::rope_functions_with_binding(0, 0), SCORES);
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("user scores"),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    let interleaved = spec.pair_layout == PairLayout::Interleaved;
    let constants = [
        ("S", f64::from(S)),
        ("D", head_dim as f64),
        ("R", r as f64),
        ("INTERLEAVED", if interleaved { 1.0 } else { 0.0 }),
        ("ATTN", f64::from(words.attention_factor)),
    ];
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("user scores"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: wgpu::PipelineCompilationOptions {
            constants: &constants,
            ..Default::default()
        },
        cache: None,
    });
    let storage = |contents: &[u8], usage| {
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: None,
            contents,
            usage: wgpu::BufferUsages::STORAGE | usage,
        })
    };
    let none = wgpu::BufferUsages::empty();
    // Scores, then a guard: poisoned, so an unwritten or overwritten value shows.
    let cells = (S * S) as usize;
    let initial: Vec<f32> = (0..cells + 64).map(poison).collect();
    let buffers = [
        storage(words.as_bytes(), none),
        storage(bytemuck::cast_slice(&q), none),
        storage(bytemuck::cast_slice(&k), none),
        storage(bytemuck::cast_slice(&pos), none),
        storage(bytemuck::cast_slice(&initial), wgpu::BufferUsages::COPY_SRC),
    ];
    let entries: Vec<wgpu::BindGroupEntry> = [0, 1, 2, 3, 4]
        .iter()
        .map(|&i| wgpu::BindGroupEntry {
            binding: i,
            resource: buffers[i as usize].as_entire_binding(),
        })
        .collect();
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &entries,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        pass.dispatch_workgroups((cells as u32).div_ceil(64), 1, 1);
    }
    let got = common::read_back(&buffers[4], encoder);

    let layout = Layout::bhsd([1, 1, u64::from(S), head_dim]);
    let rotated = |x: &[f32]| {
        let mut x: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
        reference::rope(spec, &layout, &mut x, HostPositions::Ids(&pos));
        x
    };
    let (qr, kr) = (rotated(&q), rotated(&k));
    let d = head_dim as usize;
    let mut worst = 0.0f64;
    for (cell, &g) in got[..cells].iter().enumerate() {
        let (i, t) = (cell / S as usize, cell % S as usize);
        let expected: f64 = (0..d).map(|e| qr[i * d + e] * kr[t * d + e]).sum();
        assert!(g.is_finite(), "score {cell} unwritten: {g}");
        worst = worst.max((f64::from(g) - expected).abs());
    }
    for (i, (&g, &p)) in got[cells..].iter().zip(&initial[cells..]).enumerate() {
        assert_eq!(g.to_bits(), p.to_bits(), "guard {i} written");
    }
    worst
}

#[test]
fn a_user_kernel_on_the_exported_functions_matches_the_reference() {
    let cases = [
        ("half-split, default", RopeSpec::new(), 64),
        (
            "interleaved, YaRN (attention factor), inverse",
            RopeSpec::new()
                .pair_layout(PairLayout::Interleaved)
                .base(500_000.0)
                .scaling(Scaling::yarn(4.0, 4096))
                .inverse(true),
            64,
        ),
        (
            "partial rotary 32 of 64, Llama 3",
            RopeSpec::new()
                .rotary_dim(32)
                .base(500_000.0)
                .scaling(Scaling::llama3()),
            64,
        ),
        (
            "dynamic NTK past the original length (length-dependent)",
            RopeSpec::new().scaling(Scaling::DynamicNtk {
                factor: 4.0,
                original_max_position_embeddings: 2048,
            }),
            128,
        ),
    ];
    for (i, (what, spec, head_dim)) in cases.into_iter().enumerate() {
        let worst = run_scores(&spec, head_dim, 40 + i as u64);
        // head_dim products of values in [-1, 1], q and k each rotated within the 1.5e-7
        // contract, summed in f32.
        let bound = head_dim as f64 * 2e-7;
        eprintln!("{what}: max |score error| {worst:.2e} (bound {bound:.1e})");
        assert!(worst <= bound, "{what}: {worst:e} > {bound:e}");
    }
}

#[test]
fn angle_words_are_the_kernels_fixed_point_revolutions() {
    // F = round(f / 2pi * 2^64) against the reference's f64 frequency, and the inverse's
    // words as the same fraction of a turn backwards (2^64 - F), against it too.
    let spec = RopeSpec::new().base(10_000.0);
    let forward = spec.angle_words(128, 0).expect("words");
    let inverse = spec
        .clone()
        .inverse(true)
        .angle_words(128, 0)
        .expect("words");
    let freqs = reference::inv_freq(128, 10_000.0);
    for (j, (f, (w, wi))) in freqs
        .iter()
        .zip(forward.words.iter().zip(&inverse.words))
        .enumerate()
    {
        let fixed = u64::from(w[0]) | u64::from(w[1]) << 32;
        // Within half a unit of the 64-bit fraction (plus f64's rounding of the product).
        let exact = f / std::f64::consts::TAU * 2f64.powi(64);
        assert!(
            (fixed as f64 - exact).abs() <= 0.5 + exact * 1e-15,
            "pair {j}: {fixed} vs {exact}"
        );
        let backwards = (u64::from(wi[0]) | u64::from(wi[1]) << 32).wrapping_neg();
        assert!(
            (backwards as f64 - exact).abs() <= 0.5 + exact * 1e-15,
            "pair {j}: inverse {backwards} vs {exact}"
        );
    }
    assert_eq!(forward.attention_factor, 1.0);
    assert!(forward.axes.iter().all(|&a| a == 0));
    // Bad input is an error, not a panic.
    assert!(RopeSpec::new().angle_words(63, 0).is_err());
    // Widths past RopeSpec::MAX_HEAD_DIM are refused before any table is sized by them.
    for head_dim in [
        RopeSpec::MAX_HEAD_DIM + 2,
        (1 << 32) + 2,
        1 << 33,
        1 << 40,
        1 << 62,
        u64::MAX - 1,
    ] {
        assert!(
            matches!(
                RopeSpec::new().angle_words(head_dim, 1),
                Err(wgpu_posenc::Error::InvalidHeadDim { .. })
            ),
            "{head_dim}"
        );
        let mrope = wgpu_posenc::MRope {
            section: [head_dim / 2, 0, 0],
            fourth: 0,
            order: wgpu_posenc::MRopeOrder::Chunks,
            frequencies: wgpu_posenc::AxisFrequencies::Shared,
        };
        assert!(mrope.axes(head_dim / 2).is_err(), "{head_dim}");
    }
    assert!(
        RopeSpec::new()
            .angle_words(RopeSpec::MAX_HEAD_DIM, 1)
            .is_ok()
    );
    assert!(RopeSpec::new().base(-1.0).angle_words(64, 0).is_err());
}
