//! Throughput at the bandwidth limit: each kernel's bytes per second next to the adapter's
//! roofline measured in the same run (an in-place identity shader over the same buffer, and
//! `copy_buffer_to_buffer`), the error of a sample of rows against the f64 reference, and
//! the latency of one decoded token against an empty dispatch.
//!
//! ```text
//! cargo bench --bench throughput -- [--seq N[,N...]] [--json] [--svg FILE]
//!     [--reps N] [--decode-submits N] [--kernels NAME[,NAME...]] [--max-binding BYTES]
//! ```
//!
//! `--seq`: sequence lengths (default 1024,4096,16384; sizes over the adapter's largest buffer
//! are skipped). `--json`: one JSON object per row on stdout (keys `kernel, layout, dtype,
//! seq, bytes, seconds, gbps, identity_gbps, ratio, timer, max_error`), the table on stderr.
//! `--svg FILE`: GB/s against S, one line per kernel and the identity roofline. `--reps`:
//! timed runs per case (default: about a second's worth, 3 to 25). `--decode-submits`: submits
//! per decode figure (default 1000; 0 skips). `--kernels`: only the kernels whose names start
//! with one of these (the identity always runs). `--max-binding`: cap the bytes of one storage
//! binding, to compare a tensor split over many bindings with the same tensor in one.
//!
//! Times are GPU timestamps where the device has `TIMESTAMP_QUERY`, else wall time around a
//! submit and a full wait (the `timer` column says which); each figure is the median of
//! `--reps` runs, the cases taken in turn so that drift hits all of them alike, and on
//! buffers of up to 256 MiB each timed run follows an untimed one of the same case (so that
//! no case inherits a cold cache from the one before). The decode step is always wall time
//! (encode, submit, wait): the median of `--decode-submits`, in runs of 100 taken in turn
//! with runs of the empty dispatch; `rope-decode` is two `encode_rope` calls (Q, then K),
//! `rope-decode-qk` one `encode_rope_qk` (one dispatch).
//! GB/s counts bytes read plus bytes written. `ratio` is the identity shader's time over the
//! same buffer divided by the kernel's: for the kernels that read and write every byte, their
//! GB/s over the identity's; for the table fill, which only writes, its write rate over the
//! identity's. For the decode rows it is the latency over the empty dispatch's.

mod cases;

use std::fmt::Write as _;
use std::io::Write as _;
use std::time::Instant;

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

use cases::{Buffers, Case, D_MODEL, Decode, HEAD_DIM, HEADS};
use wgpu_posenc::roofline::{Timer, TimerKind};
use wgpu_posenc::{HostPositions, Layout, PairLayout, PosEnc, reference};

type Error = Box<dyn std::error::Error>;

/// Buffers up to this size get an untimed run before each timed one.
const WARM_BELOW: u64 = 256 << 20;

struct Options {
    seqs: Vec<u64>,
    json: bool,
    svg: Option<String>,
    reps: Option<usize>,
    decode_submits: usize,
    kernels: Option<Vec<String>>,
    max_binding: Option<u64>,
}

fn options() -> Result<Options, Error> {
    let mut o = Options {
        seqs: vec![1024, 4096, 16384],
        json: false,
        svg: None,
        reps: None,
        decode_submits: 1000,
        kernels: None,
        max_binding: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--seq" => {
                o.seqs = value()?
                    .split(',')
                    .map(|s| s.trim().parse())
                    .collect::<Result<_, _>>()?;
            }
            "--json" => o.json = true,
            // `cargo bench` passes it to every bench target.
            "--bench" => {}
            "--svg" => o.svg = Some(value()?),
            "--reps" => o.reps = Some(value()?.parse()?),
            "--decode-submits" => o.decode_submits = value()?.parse()?,
            "--max-binding" => o.max_binding = Some(value()?.parse()?),
            "--kernels" => {
                o.kernels = Some(value()?.split(',').map(|s| s.trim().to_string()).collect());
            }
            "-h" | "--help" => {
                println!(
                    "cargo bench --bench throughput -- [--seq N[,N...]] [--json] \
                     [--svg FILE] [--reps N] [--decode-submits N] [--kernels NAME[,NAME...]] \
                     [--max-binding BYTES]"
                );
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?} (try --help)").into()),
        }
    }
    if o.seqs.contains(&0) {
        return Err("--seq values must be positive".into());
    }
    Ok(o)
}

/// One measured row.
#[derive(Clone, Debug)]
struct Row {
    kernel: &'static str,
    layout: &'static str,
    seq: u64,
    bytes: u64,
    seconds: f64,
    /// The identity's seconds over the same buffer, or for decode rows the empty dispatch's.
    reference: f64,
    timer: TimerKind,
    max_error: Option<f64>,
    decode: bool,
}

impl Row {
    fn gbps(&self) -> f64 {
        self.bytes as f64 / self.seconds / 1e9
    }

    /// Kernel rows: the identity's time over the same buffer over this row's (for the
    /// read-write kernels the ratio of GB/s; for the table fill, which only writes, its write
    /// rate over the identity's). Decode rows: this latency over the empty dispatch's.
    fn ratio(&self) -> f64 {
        if self.decode {
            self.seconds / self.reference
        } else {
            self.reference / self.seconds
        }
    }

    /// The identity shader's GB/s over the same buffer (kernel rows).
    fn identity_gbps(&self) -> Option<f64> {
        (!self.decode).then(|| 2.0 * cases::tensor_bytes(self.seq) as f64 / self.reference / 1e9)
    }
}

fn main() -> Result<(), Error> {
    let o = options()?;
    let mut ctx = PosEnc::with_default_adapter()?;
    if let Some(bytes) = o.max_binding {
        ctx = ctx.with_max_binding_size(bytes);
    }
    let timer = Timer::new(&ctx);
    let limits = ctx.device().limits();
    let adapter = ctx
        .adapter_info()
        .map_or("?".into(), |a| format!("{} ({:?})", a.name, a.backend));
    eprintln!(
        "adapter: {adapter}; storage binding {} MiB, buffer {} MiB; timer: {}",
        limits.max_storage_buffer_binding_size >> 20,
        limits.max_buffer_size >> 20,
        timer.kind()
    );

    let mut rows = Vec::new();
    // The identity shader always runs: every ratio is to it.
    let cases: Vec<Case> = Case::all()
        .into_iter()
        .filter(|c| {
            *c == Case::Identity
                || o.kernels.as_ref().is_none_or(|k| {
                    k.iter()
                        .any(|k| c.kernel().starts_with(k.as_str()) || c.label() == *k)
                })
        })
        .collect();
    for (n, &seq) in o.seqs.iter().enumerate() {
        let bytes = cases::tensor_bytes(seq);
        if !cases::fits(&ctx, seq) {
            continue;
        }
        progress(&format!(
            "[{}/{}] S = {seq} ({} MiB): allocating",
            n + 1,
            o.seqs.len(),
            bytes >> 20
        ));
        let buffers = Buffers::new(&ctx, seq, true);
        let mut errors = Vec::new();
        for &case in &cases {
            progress(&format!(
                "[{}/{}] S = {seq}: checking {}",
                n + 1,
                o.seqs.len(),
                case.label()
            ));
            errors.push(check(&ctx, case, &buffers)?);
        }
        // Reps: as many as fit in about a second per case, at least 3.
        let first = timer.time(&ctx, |e| Case::Identity.record(&ctx, e, &buffers))?;
        let reps = o
            .reps
            .unwrap_or_else(|| ((1.0 / first).ceil() as usize).clamp(3, 25));
        // A buffer that the CPU's caches could hold a good part of is run once untimed before
        // each timed run, so that every case starts from its own steady state rather than from
        // whatever the case before it left in the cache (the copy, for one, evicts it).
        let warm = bytes <= WARM_BELOW;
        let mut times = vec![Vec::with_capacity(reps); cases.len()];
        let started = Instant::now();
        for rep in 0..reps {
            progress(&format!(
                "[{}/{}] S = {seq}: rep {}/{reps}, {:.0} s",
                n + 1,
                o.seqs.len(),
                rep + 1,
                started.elapsed().as_secs_f64()
            ));
            for (i, &case) in cases.iter().enumerate() {
                if warm {
                    cases::submit_and_wait(&ctx, |e| case.record(&ctx, e, &buffers))?;
                }
                times[i].push(timer.time(&ctx, |e| case.record(&ctx, e, &buffers))?);
            }
        }
        let identity = median(&mut times[0].clone());
        for (i, &case) in cases.iter().enumerate() {
            rows.push(Row {
                kernel: case.kernel(),
                layout: case.layout(),
                seq,
                bytes: case.moved(seq),
                seconds: median(&mut times[i]),
                reference: identity,
                timer: timer.kind(),
                max_error: errors[i],
                decode: false,
            });
        }
    }

    if o.decode_submits > 0 {
        progress("decode: one token, Q [1, 32, 1, 128] and K [1, 8, 1, 128]");
        rows.extend(decode(&ctx, o.decode_submits)?);
    }
    progress("");

    // With --json, stdout has only the JSON lines and the table goes to stderr.
    if o.json {
        print_table(&mut std::io::stderr(), &rows, &adapter)?;
        for row in &rows {
            println!("{}", json(row));
        }
    } else {
        print_table(&mut std::io::stdout(), &rows, &adapter)?;
    }
    if let Some(path) = &o.svg {
        std::fs::write(path, svg(&rows, &adapter))?;
        eprintln!("wrote {path}");
    }
    Ok(())
}

/// A progress line on stderr: overwritten by the next one on a terminal, else one per line.
fn progress(line: &str) {
    use std::io::IsTerminal;
    let mut err = std::io::stderr();
    if err.is_terminal() {
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
    } else if !line.is_empty() {
        let _ = writeln!(err, "{line}");
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

/// The rows a check looks at: both ends, the middle, and a few more, in some heads.
fn sample(seq: u64) -> Vec<(u64, u64)> {
    let mut tokens = vec![
        0,
        1,
        seq / 2,
        seq.saturating_sub(2),
        seq - 1,
        (seq * 7) / 11,
    ];
    tokens.sort_unstable();
    tokens.dedup();
    tokens
        .into_iter()
        .flat_map(|s| [0, 5, HEADS - 1].map(|h| (h, s)))
        .collect()
}

/// Whether the QKV case normalizes Q and K (then Q's expected rows are normalized first).
fn normalizes(path: cases::QkvPath) -> bool {
    use cases::QkvPath::{FusedNorm, FusedNormBarrier, FusedNormInPlace, UnfusedNorm};
    matches!(
        path,
        FusedNorm | FusedNormInPlace | FusedNormBarrier | UnfusedNorm
    )
}

/// Values in [-1, 1) from rand's Xoshiro256++, as the tests draw theirs.
fn values(seed: u64, n: usize) -> Vec<f32> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    (0..n).map(|_| rng.random_range(-1.0..1.0)).collect()
}

/// Runs `case` once on known values in a sample of rows and returns the largest difference
/// from the f64 reference there (the identity's from its input; `None` for the copy).
fn check(ctx: &PosEnc, case: Case, buffers: &Buffers) -> Result<Option<f64>, Error> {
    let seq = buffers.seq;
    // Element offset of each sampled row, and the row length; the buffer and offsets the
    // results are read from when they go elsewhere (Q out of the QK-norm case).
    let mut out: Option<(&wgpu::Buffer, Vec<u64>)> = None;
    let (rows, len): (Vec<(u64, u64, u64)>, u64) = match case {
        Case::Rope(_, tensor) => {
            let layout = cases::rope_layout(tensor, seq);
            let rows = sample(seq)
                .into_iter()
                .map(|(h, s)| (h, s, reference::row_start(&layout, 0, h, s)))
                .collect();
            (rows, HEAD_DIM)
        }
        Case::Axes(_) => {
            let layout = cases::rope_layout(cases::Tensor::Bshd, seq);
            let rows = sample(seq)
                .into_iter()
                .map(|(h, s)| (h, s, reference::row_start(&layout, 0, h, s)))
                .collect();
            (rows, HEAD_DIM)
        }
        Case::Qkv(_) => {
            // Q rows, rotated in place.
            let layout = cases::rope_layout(cases::Tensor::Bshd, seq);
            let rows = sample(seq)
                .into_iter()
                .map(|(h, s)| {
                    let h = h % cases::QKV_Q_HEADS;
                    (h, s, reference::row_start(&layout, 0, h, s))
                })
                .collect::<Vec<_>>();
            if case == Case::Qkv(cases::QkvPath::FusedNorm) {
                // Q normalized and rotated into its own tensor.
                let q_out = cases::q_out_layout(seq);
                let at = rows
                    .iter()
                    .map(|&(h, s, _)| reference::row_start(&q_out, 0, h, s))
                    .collect();
                out = Some((&buffers.q_out, at));
            }
            (rows, HEAD_DIM)
        }
        Case::Table | Case::Add | Case::Timesteps | Case::GridAdd => {
            let rows = sample(seq)
                .into_iter()
                .filter(|&(h, _)| h == 0)
                .map(|(_, s)| (0, s, s * D_MODEL))
                .collect();
            (rows, D_MODEL)
        }
        Case::Identity => {
            // Rows of the BHSD tensor: they must come back bit for bit.
            let layout = cases::rope_layout(cases::Tensor::Bhsd, seq);
            let rows = sample(seq)
                .into_iter()
                .map(|(h, s)| (h, s, reference::row_start(&layout, 0, h, s)))
                .collect();
            (rows, HEAD_DIM)
        }
        Case::Copy => {
            // Warm up, nothing to compare.
            cases::submit_and_wait(ctx, |e| case.record(ctx, e, buffers))?;
            return Ok(None);
        }
    };
    let inputs: Vec<Vec<f32>> = rows
        .iter()
        .enumerate()
        .map(|(i, _)| values(i as u64 + 1, len as usize))
        .collect();
    for (&(_, _, at), input) in rows.iter().zip(&inputs) {
        ctx.queue()
            .write_buffer(&buffers.x, at * 4, bytemuck::cast_slice(input));
    }
    let row_bytes = len * 4;
    let staging = ctx.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("throughput check"),
        size: row_bytes * rows.len() as u64,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    cases::submit_and_wait(ctx, |encoder| {
        case.record(ctx, encoder, buffers)?;
        for (k, &(_, _, at)) in rows.iter().enumerate() {
            let (from, at) = match &out {
                Some((buffer, at)) => (*buffer, at[k]),
                None => (&buffers.x, at),
            };
            encoder.copy_buffer_to_buffer(from, at * 4, &staging, k as u64 * row_bytes, row_bytes);
        }
        Ok(())
    })?;
    let slice = staging.slice(..);
    slice.map_async(wgpu::MapMode::Read, |r| r.expect("map"));
    ctx.device().poll(wgpu::PollType::wait_indefinitely())?;
    let got: Vec<f32> = bytemuck::cast_slice(&slice.get_mapped_range()?).to_vec();
    staging.unmap();

    let mut worst = 0.0f64;
    for (k, (&(h, s, _), input)) in rows.iter().zip(&inputs).enumerate() {
        let mut expected: Vec<f64> = input.iter().map(|&v| f64::from(v)).collect();
        match case {
            Case::Qkv(path) => {
                if normalizes(path) {
                    // Qwen3's RMSNorm with unit weights, in f64.
                    let mean_square =
                        expected.iter().map(|x| x * x).sum::<f64>() / expected.len() as f64;
                    let inv = 1.0 / (mean_square + f64::from(cases::NORM_EPS)).sqrt();
                    expected.iter_mut().for_each(|x| *x *= inv);
                }
                let one = Layout::bhsd([1, 1, 1, HEAD_DIM]);
                reference::rope(
                    &cases::rope_spec(PairLayout::HalfSplit),
                    &one,
                    &mut expected,
                    HostPositions::Start(s as u32),
                );
            }
            Case::Axes(model) => {
                let one = Layout::bhsd([1, 1, 1, HEAD_DIM]);
                let p = cases::axes_position(model, seq, s);
                reference::rope(
                    &head_spec(model, h),
                    &one,
                    &mut expected,
                    HostPositions::Axes(&p[..]),
                );
            }
            Case::Rope(pair, _) => {
                let one = Layout::bhsd([1, 1, 1, HEAD_DIM]);
                reference::rope(
                    &cases::rope_spec(pair),
                    &one,
                    &mut expected,
                    HostPositions::Start(s as u32),
                );
            }
            Case::Table => expected = reference::sinusoidal_row(&cases::table_spec(), s as u32),
            Case::Add => {
                let pe = reference::sinusoidal_row(&cases::table_spec(), s as u32);
                for (x, p) in expected.iter_mut().zip(pe) {
                    *x = *x * f64::from(cases::ADD_SCALE) + p;
                }
            }
            Case::Timesteps => {
                expected =
                    reference::sinusoidal_row_at(&cases::timestep_spec(), cases::timestep(s));
            }
            Case::GridAdd => {
                let grid = &buffers.grid;
                let pe = grid
                    .blocks
                    .iter()
                    .flat_map(|b| reference::sinusoidal_row_at(&b.spec(), b.coords[s as usize]));
                for (x, p) in expected.iter_mut().zip(pe) {
                    *x = *x * f64::from(cases::ADD_SCALE) + p;
                }
            }
            Case::Identity => {}
            Case::Copy => unreachable!("the copy is not checked"),
        }
        let got = &got[k * len as usize..(k + 1) * len as usize];
        for (&g, &e) in got.iter().zip(&expected) {
            let err = if g.is_nan() {
                f64::INFINITY
            } else {
                (f64::from(g) - e).abs()
            };
            worst = worst.max(err);
        }
    }
    Ok(Some(worst))
}

/// Median wall latency of the decode step (two `encode_rope` calls, and one
/// `encode_rope_qk`) and of an empty dispatch: runs of 100 submits of each kind taken in
/// turn, so that each run is in its steady state and drift hits all kinds alike.
fn decode(ctx: &PosEnc, submits: usize) -> Result<Vec<Row>, Error> {
    const RUN: usize = 100;
    let step = Decode::new(ctx);
    let qkv = cases::QkvDecode::new(ctx);
    let roofline = wgpu_posenc::roofline::Roofline::new(ctx);
    let barrier = ctx.clone().with_subgroups(false);
    // Empty dispatch, two calls, one Q+K call, the fused QKV call without and with QK-norm
    // (its sums by subgroups where the adapter has them, and by a barrier).
    let mut times: [Vec<f64>; 6] = Default::default();
    // The first run of each is a warm-up.
    for run in 0..=submits.div_ceil(RUN) {
        for (kind, times) in times.iter_mut().enumerate() {
            for _ in 0..RUN {
                let t = Instant::now();
                cases::submit_and_wait(ctx, |e| match kind {
                    0 => {
                        roofline.encode_empty_dispatch(e);
                        Ok(())
                    }
                    1 => step.record(ctx, e),
                    2 => step.record_qk(ctx, e),
                    3 => qkv.record(ctx, e, false),
                    4 => qkv.record(ctx, e, true),
                    _ => qkv.record(&barrier, e, true),
                })?;
                if run > 0 {
                    times.push(t.elapsed().as_secs_f64());
                }
            }
        }
    }
    let [empty, rope, fused, qkv_plain, qkv_norm, qkv_barrier] = times.map(|mut t| median(&mut t));
    let row = |kernel, bytes, seconds| Row {
        kernel,
        layout: "bhsd",
        seq: 1,
        bytes,
        seconds,
        reference: empty,
        timer: TimerKind::Wall,
        max_error: None,
        decode: true,
    };
    Ok(vec![
        row("empty-dispatch", 0, empty),
        row("rope-decode", Decode::moved(), rope),
        row("rope-decode-qk", Decode::moved(), fused),
        row("qkv-decode", cases::QkvDecode::moved(), qkv_plain),
        row("qkv-decode-norm", cases::QkvDecode::moved(), qkv_norm),
        row(
            "qkv-decode-norm-barrier",
            cases::QkvDecode::moved(),
            qkv_barrier,
        ),
    ])
}

fn seconds(s: f64) -> String {
    if s < 1e-3 {
        format!("{:.1} us", s * 1e6)
    } else {
        format!("{:.2} ms", s * 1e3)
    }
}

fn print_table(out: &mut impl std::io::Write, rows: &[Row], adapter: &str) -> std::io::Result<()> {
    writeln!(out, "adapter: {adapter}")?;
    writeln!(
        out,
        "{:<18} {:<6} {:>7} {:>11} {:>10} {:>8} {:>6} {:>9}  timer",
        "kernel", "layout", "S", "bytes", "time", "GB/s", "ratio", "max err"
    )?;
    for r in rows {
        let err = r.max_error.map_or("-".to_string(), |e| format!("{e:.1e}"));
        let gbps = if r.bytes == 0 {
            "-".to_string()
        } else {
            format!("{:.2}", r.gbps())
        };
        writeln!(
            out,
            "{:<18} {:<6} {:>7} {:>11} {:>10} {:>8} {:>6.3} {:>9}  {}",
            r.kernel,
            r.layout,
            r.seq,
            r.bytes,
            seconds(r.seconds),
            gbps,
            r.ratio(),
            err,
            r.timer
        )?;
    }
    writeln!(
        out,
        "GB/s: bytes read + written per second. ratio: the identity shader's time over the same \
         buffer / the kernel's (GB/s over the identity's; for the table fill, which only writes, \
         its write rate over the identity's); decode rows: latency / the empty dispatch's"
    )
}

fn json(r: &Row) -> String {
    let num = |v: f64| {
        if v.is_finite() {
            format!("{v:e}")
        } else {
            "null".into()
        }
    };
    let identity = r.identity_gbps().map_or("null".to_string(), num);
    let ratio = num(r.ratio());
    format!(
        "{{\"kernel\":\"{}\",\"layout\":\"{}\",\"dtype\":\"f32\",\"seq\":{},\"bytes\":{},\
         \"seconds\":{},\"gbps\":{},\"identity_gbps\":{},\"ratio\":{},\"timer\":\"{}\",\
         \"max_error\":{}}}",
        r.kernel,
        r.layout,
        r.seq,
        r.bytes,
        num(r.seconds),
        num(if r.bytes == 0 { 0.0 } else { r.gbps() }),
        identity,
        ratio,
        r.timer,
        r.max_error.map_or("null".into(), num)
    )
}

/// GB/s against S, log2 on x: one line per kernel and layout, the identity shader dashed.
fn svg(rows: &[Row], adapter: &str) -> String {
    let rows: Vec<&Row> = rows.iter().filter(|r| !r.decode).collect();
    let mut series: Vec<(String, Vec<(u64, f64)>)> = Vec::new();
    for r in &rows {
        let name = format!("{} {}", r.kernel, r.layout);
        match series.iter_mut().find(|(n, _)| *n == name) {
            Some((_, pts)) => pts.push((r.seq, r.gbps())),
            None => series.push((name, vec![(r.seq, r.gbps())])),
        }
    }
    let (w, h) = (900.0, 540.0);
    let (left, right, top, bottom) = (70.0, 250.0, 50.0, 60.0);
    let (pw, ph) = (w - left - right, h - top - bottom);
    let lx = |s: u64| (s as f64).log2();
    let (x0, x1) = rows.iter().fold((f64::MAX, f64::MIN), |(a, b), r| {
        (a.min(lx(r.seq)), b.max(lx(r.seq)))
    });
    let (x0, x1) = if x1 > x0 {
        (x0, x1)
    } else {
        (x0 - 1.0, x0 + 1.0)
    };
    let ymax = rows.iter().map(|r| r.gbps()).fold(0.0, f64::max).max(1e-3) * 1.1;
    let px = |s: u64| left + (lx(s) - x0) / (x1 - x0) * pw;
    let py = |g: f64| top + ph - g / ymax * ph;

    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
         font-family=\"sans-serif\" font-size=\"12\">"
    );
    let _ = writeln!(
        out,
        "<rect width=\"{w}\" height=\"{h}\" fill=\"white\"/>\n\
         <text x=\"{left}\" y=\"24\" font-size=\"15\">wgpu-posenc throughput, f32 - {}</text>",
        escape(adapter)
    );
    // Axes, grid and ticks.
    let step = nice_step(ymax / 6.0);
    let mut g = 0.0;
    while g <= ymax {
        let y = py(g);
        let _ = writeln!(
            out,
            "<line x1=\"{left}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{g}</text>",
            left + pw,
            left - 6.0,
            y + 4.0
        );
        g = ((g + step) * 1e6).round() / 1e6;
    }
    let mut seqs: Vec<u64> = rows.iter().map(|r| r.seq).collect();
    seqs.sort_unstable();
    seqs.dedup();
    for &s in &seqs {
        let x = px(s);
        let _ = writeln!(
            out,
            "<line x1=\"{x:.1}\" y1=\"{top}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#eee\"/>\
             <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{s}</text>",
            top + ph,
            top + ph + 18.0
        );
    }
    let _ = writeln!(
        out,
        "<rect x=\"{left}\" y=\"{top}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" \
         stroke=\"black\"/>\n\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">S (tokens; buffer S x 16 KiB)</text>\n\
         <text transform=\"translate(18 {:.1}) rotate(-90)\" text-anchor=\"middle\">\
         GB/s (read + written)</text>",
        left + pw / 2.0,
        h - 18.0,
        top + ph / 2.0
    );
    const COLORS: [&str; 8] = [
        "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    ];
    // The roofline is drawn last, over the kernels, but listed first.
    let mut order: Vec<usize> = (0..series.len()).collect();
    order.sort_by_key(|&k| series[k].0.starts_with("identity"));
    for k in order {
        let (name, pts) = &series[k];
        let identity = name.starts_with("identity");
        let (stroke, extra) = if identity {
            ("black", " stroke-dasharray=\"8 4\" stroke-width=\"3\"")
        } else {
            let color = series[..k]
                .iter()
                .filter(|(n, _)| !n.starts_with("identity"))
                .count();
            (COLORS[color % COLORS.len()], " stroke-width=\"2\"")
        };
        let path: Vec<String> = pts
            .iter()
            .map(|&(s, g)| format!("{:.1},{:.1}", px(s), py(g)))
            .collect();
        let _ = writeln!(
            out,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{stroke}\"{extra}/>",
            path.join(" ")
        );
        for &(s, g) in pts {
            let _ = writeln!(
                out,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{stroke}\"/>",
                px(s),
                py(g)
            );
        }
        let y = top + 10.0 + k as f64 * 20.0;
        let x = left + pw + 15.0;
        let label = if identity {
            format!("{name} (roofline)")
        } else {
            name.clone()
        };
        let _ = writeln!(
            out,
            "<line x1=\"{x}\" y1=\"{y}\" x2=\"{:.1}\" y2=\"{y}\" stroke=\"{stroke}\"{extra}/>\
             <text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            x + 25.0,
            x + 32.0,
            y + 4.0,
            escape(&label)
        );
    }
    out.push_str("</svg>\n");
    out
}

/// 1, 2 or 5 times a power of ten, at least `x`.
fn nice_step(x: f64) -> f64 {
    let p = 10f64.powf(x.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|&s| s >= x)
        .unwrap_or(10.0 * p)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The spec that rotates head `h` of the cases' buffer (Q heads 0..16, K heads 16..32): the
/// model's, or for Mochi the table's row of that head alone.
fn head_spec(model: cases::AxesModel, h: u64) -> wgpu_posenc::RopeSpec {
    match model {
        cases::AxesModel::Mochi => wgpu_posenc::RopeSpec::new()
            .pair_layout(PairLayout::Interleaved)
            .learned(cases::mochi_table(Some(h % 16))),
        _ => cases::axes_spec(model),
    }
}
