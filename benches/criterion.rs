//! Throughput at the bandwidth limit, with criterion: every kernel over a buffer of
//! `S * 16 KiB` (RoPE in place over `[1, 32, S, 128]` f32 in both pair layouts, BHSD and
//! BSHD; the sinusoidal table `[S, 4096]`; the fused add over `[1, S, 4096]`), next to the
//! roofline of the same buffer measured in the same run (the identity shader and
//! `copy_buffer_to_buffer`), and the one-token decode step (two `encode_rope` calls, and one
//! `encode_rope_qk`) next to an empty dispatch.
//!
//! ```text
//! cargo bench --bench criterion                                   # S = 1024, 4096, 16384
//! POSENC_BENCH_MAX_SEQ=131072 cargo bench --bench criterion      # up to S = 131072
//! ```
//!
//! One iteration is encode + submit + wait for the queue (wall time), with buffers and
//! pipelines made before the timed loop. Criterion reports time and bytes per second
//! (`Throughput::Bytes`: bytes read plus bytes written); at the end a summary gives each
//! kernel's GB/s and its ratio to the identity shader on the same buffer (the identity's time
//! over the kernel's), and the decode latency over the empty dispatch's. Sizes over the
//! adapter's largest buffer are skipped with a message. `benches/throughput.rs` measures the
//! same cases with GPU timestamps, and checks them against the reference.

mod cases;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use cases::{Buffers, Case, Decode};
use criterion::{BenchmarkId, Criterion, Throughput};
use wgpu_posenc::PosEnc;
use wgpu_posenc::roofline::Roofline;

/// Sequence lengths: from 1024 up to `POSENC_BENCH_MAX_SEQ` (default 16384), each 4x the last.
fn seqs() -> Vec<u64> {
    let max = std::env::var("POSENC_BENCH_MAX_SEQ")
        .ok()
        .map(|v| {
            v.parse::<u64>()
                .unwrap_or_else(|_| panic!("POSENC_BENCH_MAX_SEQ={v:?} is not a number"))
        })
        .unwrap_or(16_384);
    [1024, 4096, 16_384, 65_536, 131_072]
        .into_iter()
        .filter(|&s| s <= max)
        .collect()
}

/// Mean seconds per iteration of each criterion sample, by (group, bench).
type Samples = RefCell<BTreeMap<(String, String), Vec<f64>>>;

/// Times `iters` runs of `run` for criterion and keeps the mean for the summary.
fn timed(samples: &Samples, key: (&str, &str), iters: u64, mut run: impl FnMut()) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        run();
    }
    let elapsed = start.elapsed();
    samples
        .borrow_mut()
        .entry((key.0.to_string(), key.1.to_string()))
        .or_default()
        .push(elapsed.as_secs_f64() / iters as f64);
    elapsed
}

fn median(v: &[f64]) -> Option<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some(0.5 * (v[n / 2 - 1] + v[n / 2])),
    }
}

fn main() {
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    let ctx = PosEnc::with_default_adapter()
        .unwrap_or_else(|e| panic!("the throughput bench needs an adapter: {e}"));
    let limits = ctx.device().limits();
    let adapter = ctx
        .adapter_info()
        .map_or("?".into(), |a| format!("{} ({:?})", a.name, a.backend));
    eprintln!(
        "adapter: {adapter}; storage binding {} MiB, buffer {} MiB; timing: wall, \
         encode + submit + wait",
        limits.max_storage_buffer_binding_size >> 20,
        limits.max_buffer_size >> 20
    );
    let samples = Samples::default();

    for seq in seqs() {
        if !cases::fits(&ctx, seq) {
            continue;
        }
        let buffers = Buffers::new(&ctx, seq, true);
        let name = format!("throughput/S={seq}");
        let mut group = c.benchmark_group(&name);
        for case in Case::all() {
            // Compile and initialize outside the timed loop.
            cases::submit_and_wait(&ctx, |e| case.record(&ctx, e, &buffers)).expect("warm-up");
            let label = case.label();
            group.throughput(Throughput::Bytes(case.moved(seq)));
            group.bench_function(BenchmarkId::from_parameter(&label), |b| {
                b.iter_custom(|iters| {
                    timed(&samples, (&name, &label), iters, || {
                        cases::submit_and_wait(&ctx, |e| case.record(&ctx, e, &buffers))
                            .expect("run");
                    })
                });
            });
        }
        group.finish();
    }

    let step = Decode::new(&ctx);
    let roofline = Roofline::new(&ctx);
    let mut group = c.benchmark_group("decode");
    group.throughput(Throughput::Elements(1));
    group.bench_function("empty-dispatch", |b| {
        b.iter_custom(|iters| {
            timed(&samples, ("decode", "empty-dispatch"), iters, || {
                cases::submit_and_wait(&ctx, |e| {
                    roofline.encode_empty_dispatch(e);
                    Ok(())
                })
                .expect("run");
            })
        });
    });
    group.throughput(Throughput::Bytes(Decode::moved()));
    group.bench_function("rope-decode", |b| {
        b.iter_custom(|iters| {
            timed(&samples, ("decode", "rope-decode"), iters, || {
                cases::submit_and_wait(&ctx, |e| step.record(&ctx, e)).expect("run");
            })
        });
    });
    group.bench_function("rope-decode-qk", |b| {
        b.iter_custom(|iters| {
            timed(&samples, ("decode", "rope-decode-qk"), iters, || {
                cases::submit_and_wait(&ctx, |e| step.record_qk(&ctx, e)).expect("run");
            })
        });
    });
    let qkv = cases::QkvDecode::new(&ctx);
    group.throughput(Throughput::Bytes(cases::QkvDecode::moved()));
    for (name, norm) in [("qkv-decode", false), ("qkv-decode-norm", true)] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                timed(&samples, ("decode", name), iters, || {
                    cases::submit_and_wait(&ctx, |e| qkv.record(&ctx, e, norm)).expect("run");
                })
            });
        });
    }
    group.finish();
    c.final_summary();

    summary(&samples.borrow(), &adapter);
}

/// GB/s and ratios from the medians of the samples criterion took.
fn summary(samples: &BTreeMap<(String, String), Vec<f64>>, adapter: &str) {
    let get = |group: &str, bench: &str| {
        samples
            .get(&(group.to_string(), bench.to_string()))
            .and_then(|v| median(v))
    };
    println!("\nsummary ({adapter}; wall time per encode + submit + wait, median of samples)");
    println!(
        "{:<28} {:>7} {:>10} {:>8} {:>7}",
        "kernel layout", "S", "time", "GB/s", "ratio"
    );
    for seq in seqs() {
        let group = format!("throughput/S={seq}");
        let identity = get(&group, &Case::Identity.label());
        for case in Case::all() {
            let Some(t) = get(&group, &case.label()) else {
                continue;
            };
            let ratio = identity.map_or("-".to_string(), |i| format!("{:.3}", i / t));
            println!(
                "{:<28} {:>7} {:>8.2}ms {:>8.2} {:>7}",
                case.label(),
                seq,
                t * 1e3,
                case.moved(seq) as f64 / t / 1e9,
                ratio
            );
        }
    }
    if let Some(empty) = get("decode", "empty-dispatch") {
        println!("decode: empty dispatch {:.1} us", empty * 1e6);
        for (bench, what) in [
            ("rope-decode", "two encode_rope calls"),
            ("rope-decode-qk", "one encode_rope_qk"),
        ] {
            if let Some(t) = get("decode", bench) {
                println!(
                    "decode: RoPE Q+K, {what}: {:.1} us, {:.3}x",
                    t * 1e6,
                    t / empty
                );
            }
        }
    }
    println!(
        "ratio: the identity shader's time over the same buffer / the kernel's (for the table \
         fill, which only writes, its write rate over the identity's)"
    );
}
