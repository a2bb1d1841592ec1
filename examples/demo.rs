//! The main job on the default adapter: fill a sinusoidal table, rotate a realistic
//! `[1, 32, seq, 128]` f32 tensor in place, check both against the f64 reference, and print
//! the adapter, sizes, times, errors, and the rotation's rate beside the identity shader's
//! over the same buffer (the adapter's roofline).
//!
//! Native: `cargo run --release --example demo [-- --seq N]` (WGPU_BACKEND /
//! WGPU_ADAPTER_NAME pick the adapter; default seq 8192). In a browser: `scripts/web-demo.sh`
//! builds this file for wasm32 and opens it on WebGPU (`?seq=N` in the page's address;
//! default 2048). The same async code runs in both.

#[cfg(not(target_arch = "wasm32"))]
use std::time::Instant;
#[cfg(target_arch = "wasm32")]
use web_time::Instant;

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use wgpu::util::DeviceExt;
use wgpu_posenc::reference::{self, HostCacheIndex};
use wgpu_posenc::roofline::{Roofline, Timer};
use wgpu_posenc::{
    CacheIndex, Dims, HostPositions, KvCache, Layout, NormWeight, PairLayout, PosEnc, Positions,
    QkNorm, QkvCall, RopeSpec, SinusoidalSpec, TensorView,
};

#[cfg(not(target_arch = "wasm32"))]
mod common;

type Failure = Box<dyn std::error::Error>;

/// Errors print their message (not their Debug form) and exit with status 1.
#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    // SAFETY: first in main, before any thread is started.
    unsafe { common::ensure_xdg_runtime_dir() };
    let args: Vec<String> = std::env::args().collect();
    let seq = match args.iter().position(|a| a == "--seq") {
        None => Ok(DEFAULT_SEQ),
        Some(i) => args
            .get(i + 1)
            .ok_or_else(|| "--seq needs a value, e.g. --seq 4096".to_string())
            .and_then(|value| parse_seq(value)),
    };
    let result = seq
        .map_err(Failure::from)
        .and_then(|seq| pollster::block_on(run(seq)));
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("demo: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// In the page: `?seq=N`; the lines go to the page and the console, the last one is
/// `demo: done` or `demo: <error>`.
#[cfg(target_arch = "wasm32")]
fn main() {
    let search = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .unwrap_or_default();
    let value = search
        .trim_start_matches('?')
        .split('&')
        .find_map(|kv| kv.strip_prefix("seq="))
        .map(str::to_string);
    wasm_bindgen_futures::spawn_local(async move {
        let result = match value.map_or(Ok(DEFAULT_SEQ), |v| parse_seq(&v)) {
            Ok(seq) => run(seq).await,
            Err(e) => Err(e.into()),
        };
        match result {
            Ok(()) => say("demo: done"),
            Err(e) => say(&format!("demo: {e}")),
        }
    });
}

/// One line of output: stdout natively, the page and the console on the web.
fn say(line: &str) {
    #[cfg(not(target_arch = "wasm32"))]
    println!("{line}");
    #[cfg(target_arch = "wasm32")]
    {
        web_sys::console::log_1(&line.into());
        if let Some(body) = web_sys::window().and_then(|w| w.document()?.body()) {
            let _ = body.append_with_str_1(&format!("{line}\n"));
        }
    }
}

/// The default token count: a long context natively, less in a browser's CPU adapter.
const DEFAULT_SEQ: u64 = if cfg!(target_arch = "wasm32") {
    2048
} else {
    8192
};

/// The value of `--seq N` / `?seq=N`: a whole number of tokens from 1 to 2^20.
fn parse_seq(value: &str) -> Result<u64, String> {
    match value.parse::<u64>() {
        Ok(n) if (1..=1 << 20).contains(&n) => Ok(n),
        _ => Err(format!(
            "--seq {value:?}: give a whole number of tokens from 1 to 1048576"
        )),
    }
}

async fn run(seq: u64) -> Result<(), Failure> {
    let ctx = PosEnc::with_default_adapter_async().await?;
    let info = ctx.adapter_info().ok_or("no adapter info")?;
    // A browser may keep the adapter's name to itself.
    let name = if info.name.is_empty() {
        "(unnamed by the browser)"
    } else {
        &info.name
    };
    say(&format!(
        "adapter: {name} ({:?}, {:?})",
        info.backend, info.device_type
    ));

    // 1. Sinusoidal table [seq, 4096] at positions 0..seq.
    let table_spec = SinusoidalSpec::new(4096);
    let t0 = Instant::now();
    let table = ctx.sinusoidal_table_host_async(&table_spec, seq, 0).await?;
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
    say(&format!(
        "sinusoidal table [{seq}, 4096] f32 ({:.0} MiB): {:.1} ms with upload and readback, max |error| {table_err:.2e}",
        (seq * 4096 * 4) as f64 / (1 << 20) as f64,
        table_time.as_secs_f64() * 1e3,
    ));
    drop(table);

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
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
        });
    let view = TensorView::new(&buffer, layout);
    // The first run is checked (and compiles the pipeline); the ones after are timed.
    let mut encoder = ctx.device().create_command_encoder(&Default::default());
    let report = ctx.encode_rope(&mut encoder, &spec, &view, Positions::Start(0))?;
    ctx.queue().submit([encoder.finish()]);
    let rotated: Vec<f32> = bytemuck::cast_slice(&ctx.read_buffer_async(&buffer).await?).to_vec();
    let rope_err = rope_error(&q, &rotated, &spec, &layout, seq);

    // 3. The rotation's rate beside the identity shader's over the same bytes, alternated.
    let timer = Timer::new(&ctx);
    let roofline = Roofline::new(&ctx);
    let bytes = (n * 4) as u64;
    let beside = Beside {
        ctx: &ctx,
        timer: &timer,
        roofline: &roofline,
        buffer: &buffer,
        bytes,
    };
    let timed = beside
        .time(|e| {
            ctx.encode_rope(e, &spec, &view, Positions::Start(0))
                .map(drop)
        })
        .await?;
    let (rope, identity) = (timed.kernel, timed.identity);
    let rate = |seconds: f64| 2.0 * bytes as f64 / seconds / 1e9;
    say(&format!(
        "rope in place {shape:?} f32 ({:.0} MiB, {} dispatch(es)): {:.2} ms, {:.2} GB/s read+write, max |error| {rope_err:.2e}",
        bytes as f64 / (1 << 20) as f64,
        report.dispatches,
        rope * 1e3,
        rate(rope),
    ));
    say(&format!(
        "identity shader over the same buffer: {:.2} ms, {:.2} GB/s; rope / identity = {} ({} timer)",
        identity * 1e3,
        rate(identity),
        timed.ratio(),
        timer.kind(),
    ));

    // 4. The fused QKV call with Qwen3's QK-norm over the same bytes, read as a packed
    // projection [1, seq, 24 + 2 x 4, 128] (BSHD): Q normalized and rotated in place, K
    // normalized and rotated into its cache, V copied into its own; beside the identity.
    ctx.queue()
        .write_buffer(&buffer, 0, bytemuck::cast_slice(&q));
    let qkv = Qkv::new(&ctx, &buffer, seq);
    let mut encoder = ctx.device().create_command_encoder(&Default::default());
    qkv.encode(&ctx, &mut encoder, &spec)?;
    ctx.queue().submit([encoder.finish()]);
    let got: Vec<f32> = bytemuck::cast_slice(&ctx.read_buffer_async(&buffer).await?).to_vec();
    let k_cache: Vec<f32> =
        bytemuck::cast_slice(&ctx.read_buffer_async(&qkv.kv[0]).await?).to_vec();
    let qkv_err = qkv.error(&q, &got, &k_cache, &spec);
    let timed = beside.time(|e| qkv.encode(&ctx, e, &spec)).await?;
    let (fused, identity) = (timed.kernel, timed.identity);
    let device = ctx.device();
    let sum = if device.features().contains(wgpu::Features::SUBGROUP)
        && device.adapter_info().subgroup_min_size >= 8
    {
        "by subgroups"
    } else {
        "through workgroup memory"
    };
    say(&format!(
        "fused QKV with QK-norm [1, {seq}, 24 + 2 x 4, 128] f32, Q in place, head sums {sum}: {:.2} ms, {:.2} GB/s, max |error| {qkv_err:.2e}",
        fused * 1e3,
        rate(fused),
    ));
    say(&format!(
        "identity shader over the same buffer: {:.2} ms; fused QKV with QK-norm / identity = {}",
        identity * 1e3,
        timed.ratio(),
    ));
    Ok(())
}

/// Q heads of the fused QKV step (and KV heads: 24 + 2 x 4 = the 32 heads of the RoPE step).
const QKV_Q_HEADS: u64 = 24;
const QKV_KV_HEADS: u64 = 4;

/// The fused QKV step over the RoPE step's buffer: its caches and Qwen3's QK-norm (weights
/// of one, eps 1e-6).
struct Qkv<'a> {
    qkv: TensorView<'a>,
    kv: [wgpu::Buffer; 2],
    cache: Layout,
    norm: QkNorm,
    seq: u64,
}

impl<'a> Qkv<'a> {
    fn new(ctx: &PosEnc, buffer: &'a wgpu::Buffer, seq: u64) -> Self {
        let heads = QKV_Q_HEADS + 2 * QKV_KV_HEADS;
        let qkv = Layout::bshd(Dims {
            batch: 1,
            heads,
            seq,
            head_dim: 128,
        });
        let cache = Layout::bshd(Dims {
            batch: 1,
            heads: QKV_KV_HEADS,
            seq,
            head_dim: 128,
        });
        let kv = ["k cache", "v cache"].map(|label| {
            ctx.device().create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: seq * QKV_KV_HEADS * 128 * 4,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            })
        });
        let norm = QkNorm {
            q_weight: vec![1.0; 128],
            k_weight: vec![1.0; 128],
            eps: 1e-6,
            weight: NormWeight::Scale,
        };
        Self {
            qkv: TensorView::new(buffer, qkv),
            kv,
            cache,
            norm,
            seq,
        }
    }

    fn encode(
        &self,
        ctx: &PosEnc,
        encoder: &mut wgpu::CommandEncoder,
        spec: &RopeSpec,
    ) -> wgpu_posenc::Result<()> {
        let cache = KvCache {
            k: TensorView::new(&self.kv[0], self.cache),
            v: TensorView::new(&self.kv[1], self.cache),
            index: CacheIndex::Position,
            overflow_flag: None,
        };
        let call = QkvCall::new(self.qkv, QKV_KV_HEADS, Positions::Start(0), cache)
            .with_qk_norm(&self.norm);
        ctx.encode_qkv(encoder, spec, &call).map(drop)
    }

    /// The largest difference from the reference over the Q heads and K cache rows of
    /// sampled tokens (each token alone through `reference::qkv_cache` at its position).
    fn error(&self, input: &[f32], q: &[f32], k_cache: &[f32], spec: &RopeSpec) -> f64 {
        let heads = QKV_Q_HEADS + 2 * QKV_KV_HEADS;
        let token = (heads * 128) as usize;
        let one = Layout::bshd(Dims {
            batch: 1,
            heads,
            seq: 1,
            head_dim: 128,
        });
        let one_cache = Layout::bshd(Dims {
            batch: 1,
            heads: QKV_KV_HEADS,
            seq: 1,
            head_dim: 128,
        });
        let mut err = 0.0f64;
        for s in sample_rows(self.seq) {
            let at = s as usize * token;
            let mut x: Vec<f64> = input[at..at + token]
                .iter()
                .map(|&v| f64::from(v))
                .collect();
            let kv_len = (QKV_KV_HEADS * 128) as usize;
            let (mut k, mut v) = (vec![0.0; kv_len], vec![0.0; kv_len]);
            reference::qkv_cache(
                spec,
                &one,
                &mut x,
                QKV_KV_HEADS,
                HostPositions::Start(s as u32),
                None,
                (&one_cache, &mut k),
                (&one_cache, &mut v),
                HostCacheIndex::Slots(&[0]),
                Some(&self.norm),
            );
            let q_len = (QKV_Q_HEADS * 128) as usize;
            let k_at = s as usize * kv_len;
            let pairs = q[at..at + q_len]
                .iter()
                .zip(&x[..q_len])
                .chain(k_cache[k_at..k_at + kv_len].iter().zip(&k));
            err = pairs
                .map(|(&g, &r)| (f64::from(g) - r).abs())
                .fold(err, f64::max);
        }
        err
    }
}

/// The largest difference from the reference over sampled rows of three heads.
fn rope_error(q: &[f32], rotated: &[f32], spec: &RopeSpec, layout: &Layout, seq: u64) -> f64 {
    let mut err = 0.0f64;
    for s in sample_rows(seq) {
        for h in [0, 17, 31] {
            let at = reference::row_start(layout, 0, h, s) as usize;
            let mut expected: Vec<f64> = q[at..at + 128].iter().map(|&v| f64::from(v)).collect();
            let row = Layout::bhsd([1, 1, 1, 128]);
            reference::rope(spec, &row, &mut expected, HostPositions::Start(s as u32));
            err = rotated[at..at + 128]
                .iter()
                .zip(&expected)
                .map(|(&g, &r)| (f64::from(g) - r).abs())
                .fold(err, f64::max);
        }
    }
    err
}

/// A kernel timed beside the identity shader over the same bytes.
struct Beside<'a> {
    ctx: &'a PosEnc,
    timer: &'a Timer,
    roofline: &'a Roofline,
    buffer: &'a wgpu::Buffer,
    bytes: u64,
}

/// Pairs of runs (the kernel, then the identity shader) timed in turn: enough that the
/// ratio holds still from one run of the demo to the next.
const PAIRS: usize = 31;

/// A kernel's time beside the identity shader's over the same bytes.
struct Timed {
    /// Median of the kernel's times, seconds.
    kernel: f64,
    /// Median of the identity shader's times, seconds.
    identity: f64,
    /// `identity / kernel` of each pair, sorted.
    ratios: Vec<f64>,
}

impl Timed {
    /// The median ratio, and its quartiles: `0.91 (quartiles 0.89–0.93)`.
    fn ratio(&self) -> String {
        let r = &self.ratios;
        let (q1, q2, q3) = (r[r.len() / 4], r[r.len() / 2], r[3 * r.len() / 4]);
        format!(
            "{q2:.2} (quartiles {q1:.2}\u{2013}{q3:.2} of {} pairs taken in turn)",
            r.len()
        )
    }
}

impl Beside<'_> {
    /// [`PAIRS`] runs of `kernel` and of the identity shader, taken in turn after one of each
    /// to warm up; the ratio of each pair, so that a drift of the machine's speed between
    /// pairs (other load, clocks) cancels.
    async fn time(
        &self,
        kernel: impl Fn(&mut wgpu::CommandEncoder) -> wgpu_posenc::Result<()>,
    ) -> wgpu_posenc::Result<Timed> {
        let identity = |e: &mut wgpu::CommandEncoder| {
            self.roofline
                .encode_identity(e, self.buffer, 0, self.bytes)
                .map(drop)
        };
        self.timer.time_async(self.ctx, &kernel).await?;
        self.timer.time_async(self.ctx, identity).await?;
        let (mut kernel_times, mut identity_times, mut ratios) = (vec![], vec![], vec![]);
        for _ in 0..PAIRS {
            let k = self.timer.time_async(self.ctx, &kernel).await?;
            let i = self.timer.time_async(self.ctx, identity).await?;
            kernel_times.push(k);
            identity_times.push(i);
            ratios.push(i / k);
        }
        ratios.sort_by(f64::total_cmp);
        Ok(Timed {
            kernel: median(kernel_times),
            identity: median(identity_times),
            ratios,
        })
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The first and last rows and a few in between.
fn sample_rows(seq: u64) -> Vec<u64> {
    let mut rows: Vec<u64> = (0..16).map(|k| k * seq / 16).collect();
    rows.push(seq - 1);
    rows
}
