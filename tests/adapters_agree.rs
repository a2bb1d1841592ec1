//! The f32-position sinusoids give the same bits on every adapter of the machine: the
//! timestep projections of diffusers' forms and a 2-D sin-cos table, on each adapter (Vulkan
//! through lavapipe and GL through llvmpipe in CI), compared bit for bit. The angle is reduced
//! exactly in integer arithmetic; what could still differ is the f32 polynomial, where one
//! compiler may contract a multiply and an add into a fused multiply-add and another not. Both
//! CI adapters compile through LLVM: on a machine with a GPU and a CPU adapter this test is
//! the stronger check.
//!
//! With one adapter there is nothing to compare: the test says so and passes, unless
//! `POSENC_REQUIRE_ADAPTERS` names the backends that must be there (CI: `vulkan,gl`).
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::Rng;
use wgpu_posenc::{HostPositions, Layout, PosEnc, SincosGrid, SinusoidalSpec};

/// One context per backend the machine has among Vulkan, GL, Metal and DX12.
fn contexts() -> Vec<(wgpu::Backend, PosEnc)> {
    let mut out = Vec::new();
    for backend in [
        wgpu::Backends::VULKAN,
        wgpu::Backends::GL,
        wgpu::Backends::METAL,
        wgpu::Backends::DX12,
    ] {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends: backend,
            ..wgpu::InstanceDescriptor::new_without_display_handle_from_env()
        });
        let adapters = pollster::block_on(instance.enumerate_adapters(backend));
        let Some(adapter) = adapters.into_iter().next() else {
            continue;
        };
        let info = adapter.get_info();
        let (device, queue) = pollster::block_on(PosEnc::request_device(&adapter)).expect("device");
        eprintln!("adapter: {} ({:?})", info.name, info.backend);
        out.push((info.backend, PosEnc::new(&device, &queue).expect("context")));
    }
    out
}

fn required() -> Vec<String> {
    std::env::var("POSENC_REQUIRE_ADAPTERS")
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.trim().to_lowercase())
        .collect()
}

/// The outputs of one adapter: timestep tables of several diffusers forms and a 2-D table.
fn outputs(ctx: &PosEnc, t: &[f32]) -> Vec<Vec<f32>> {
    let specs = [
        SinusoidalSpec::timesteps(256, true, 0.0),
        SinusoidalSpec::timesteps(257, false, 1.0),
        SinusoidalSpec::timesteps(3072, true, 0.0).freq_scale(1000.0),
        SinusoidalSpec::timesteps(128, true, 0.0).max_period(2000.0),
    ];
    let mut out: Vec<Vec<f32>> = specs
        .iter()
        .map(|spec| {
            let layout = Layout::rows(t.len() as u64, spec.d_model);
            ctx.sinusoidal_table_at_host(spec, layout, HostPositions::float(t))
                .expect("table")
        })
        .collect();
    let grid = SincosGrid::diffusers_2d(1152, [32, 48], 32.0, 2.0).expect("grid");
    out.push(ctx.sincos_grid_host(&grid).expect("grid table"));
    out
}

#[test]
fn every_adapter_gives_the_same_bits() {
    let contexts = contexts();
    let names: Vec<String> = contexts
        .iter()
        .map(|(b, _)| format!("{b:?}").to_lowercase())
        .collect();
    for want in required() {
        assert!(
            names.contains(&want),
            "POSENC_REQUIRE_ADAPTERS names {want}, and the machine has {names:?}"
        );
    }
    if contexts.len() < 2 {
        eprintln!("one adapter ({names:?}): nothing to compare");
        return;
    }
    // Timesteps as pipelines pass them (sigmas, t * 1000, guidance), and random ones over
    // the whole exact range, negative ones included.
    let mut rng = Rng::new(29);
    let mut t: Vec<f32> = vec![0.0, 0.5, 1.0, 999.0, 3500.0, 0.001, -7.25, 4.0e9];
    let unit = |rng: &mut Rng| rng.next_u64() as f64 / u64::MAX as f64;
    for _ in 0..56 {
        let (sign, exponent) = (unit(&mut rng) * 2.0 - 1.0, unit(&mut rng) * 9.0);
        t.push((sign * 10f64.powf(exponent)) as f32);
    }
    let (first, rest) = contexts.split_first().expect("two");
    let want = outputs(&first.1, &t);
    for (backend, ctx) in rest {
        for (k, (a, b)) in want.iter().zip(outputs(ctx, &t)).enumerate() {
            let differ = a
                .iter()
                .zip(&b)
                .filter(|(x, y)| x.to_bits() != y.to_bits())
                .count();
            assert_eq!(
                differ,
                0,
                "case {k}: {differ} of {} values differ between {:?} and {backend:?}",
                a.len(),
                first.0
            );
        }
    }
    eprintln!(
        "{} adapters, {} values each: identical bits",
        contexts.len(),
        want.iter().map(Vec::len).sum::<usize>()
    );
}
