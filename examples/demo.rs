//! The main job on the default adapter: fill a sinusoidal table, rotate a realistic
//! `[1, 32, 8192, 128]` f32 tensor in place, check both against the f64 reference, and print
//! the adapter, sizes, times and errors.
//!
//! `cargo run --release --example demo [-- --seq N]` (WGPU_BACKEND / WGPU_ADAPTER_NAME pick
//! the adapter).

use std::time::Instant;

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use wgpu::util::DeviceExt;
use wgpu_posenc::{
    HostPositions, Layout, PairLayout, PosEnc, Positions, RopeSpec, SinusoidalSpec, TensorView,
    reference,
};

/// Errors print their message (not their Debug form) and exit with status 1.
fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("demo: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// `--seq N`: a whole number of tokens from 1 to 2^20.
fn parse_seq(args: &[String]) -> Result<u64, String> {
    let Some(i) = args.iter().position(|a| a == "--seq") else {
        return Ok(8192);
    };
    let value = args
        .get(i + 1)
        .ok_or("--seq needs a value, e.g. --seq 4096")?;
    match value.parse::<u64>() {
        Ok(n) if (1..=1 << 20).contains(&n) => Ok(n),
        _ => Err(format!(
            "--seq {value:?}: give a whole number of tokens from 1 to 1048576"
        )),
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let seq = parse_seq(&args)?;
    let ctx = PosEnc::with_default_adapter()?;
    let info = ctx.adapter_info().ok_or("no adapter info")?;
    println!(
        "adapter: {} ({:?}, {:?})",
        info.name, info.backend, info.device_type
    );

    // 1. Sinusoidal table [seq, 4096] at positions 0..seq.
    let table_spec = SinusoidalSpec::new(4096);
    let t0 = Instant::now();
    let table = ctx.sinusoidal_table_host(&table_spec, seq, 0)?;
    let table_time = t0.elapsed();
    let mut table_err = 0.0f64;
    for s in sample_rows(seq) {
        let row = reference::sinusoidal_row(&table_spec, s as u32);
        let got = &table[(s * 4096) as usize..((s + 1) * 4096) as usize];
        table_err = got
            .iter()
            .zip(&row)
            .map(|(&g, &r)| (f64::from(g) - r).abs())
            .fold(table_err, f64::max);
    }
    println!(
        "sinusoidal table [{seq}, 4096] f32 ({:.0} MiB): {:.1} ms with upload and readback, max |error| {table_err:.2e}",
        (seq * 4096 * 4) as f64 / (1 << 20) as f64,
        table_time.as_secs_f64() * 1e3,
    );

    // 2. RoPE in place over q [1, 32, seq, 128], half-split (HF), Llama 3 base.
    let shape = [1, 32, seq, 128];
    let layout = Layout::bhsd(shape);
    let n = (32 * seq * 128) as usize;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(0x2545_f491_4f6c_dd1d);
    let q: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
    let spec = RopeSpec::new()
        .pair_layout(PairLayout::HalfSplit)
        .base(500_000.0);
    let buffer = ctx
        .device()
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("q"),
            contents: bytemuck::cast_slice(&q),
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        });
    let view = TensorView::new(&buffer, layout);
    // The first run compiles the pipeline; time the ones after.
    let mut times = Vec::new();
    let mut rotated = None;
    for run in 0..4 {
        let mut encoder = ctx.device().create_command_encoder(&Default::default());
        let t0 = Instant::now();
        let report = ctx.encode_rope(&mut encoder, &spec, &view, Positions::Start(0))?;
        ctx.queue().submit([encoder.finish()]);
        ctx.device().poll(wgpu::PollType::wait_indefinitely())?;
        if run > 0 {
            times.push(t0.elapsed().as_secs_f64());
        } else {
            rotated = Some((read(&ctx, &buffer)?, report));
        }
    }
    let (rotated, report) = rotated.ok_or("no run")?;
    let mut rope_err = 0.0f64;
    for s in sample_rows(seq) {
        for h in [0, 17, 31] {
            let at = reference::row_start(&layout, 0, h, s) as usize;
            let mut expected: Vec<f64> = q[at..at + 128].iter().map(|&v| f64::from(v)).collect();
            let row = Layout::bhsd([1, 1, 1, 128]);
            reference::rope(&spec, &row, &mut expected, HostPositions::Start(s as u32));
            rope_err = rotated[at..at + 128]
                .iter()
                .zip(&expected)
                .map(|(&g, &r)| (f64::from(g) - r).abs())
                .fold(rope_err, f64::max);
        }
    }
    times.sort_by(f64::total_cmp);
    let best = *times.first().ok_or("no timed run")?;
    let bytes = 2.0 * (n * 4) as f64;
    println!(
        "rope in place {shape:?} f32 ({:.0} MiB, {} dispatch(es)): {:.2} ms per submit+wait, {:.2} GB/s read+write, max |error| {rope_err:.2e}",
        (n * 4) as f64 / (1 << 20) as f64,
        report.dispatches,
        best * 1e3,
        bytes / best / 1e9,
    );
    Ok(())
}

/// The first and last rows and a few in between.
fn sample_rows(seq: u64) -> Vec<u64> {
    let mut rows: Vec<u64> = (0..16).map(|k| k * seq / 16).collect();
    rows.push(seq - 1);
    rows
}

fn read(ctx: &PosEnc, buffer: &wgpu::Buffer) -> Result<Vec<f32>, Box<dyn std::error::Error>> {
    Ok(bytemuck::cast_slice(&ctx.read_buffer(buffer)?).to_vec())
}
