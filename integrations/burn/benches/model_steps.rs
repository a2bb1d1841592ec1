//! A model with Qwen3-0.6B's layer dimensions (hidden 1024, 16 query and 8 KV heads of 128,
//! intermediate 3072; `--layers` of them, random weights) in burn, run twice in one process:
//! with the bridge's fused QK-norm + RoPE + KV-cache call as each layer's attention
//! preprocessing, and with burn's own (burn ops for the QK-norm, `nn::RotaryEncoding`,
//! `slice_assign` into the caches). Prefill of S tokens and per-token decode after it, wall
//! time of each step including the read-back of the chosen token (the step's sync), medians
//! of `--reps`, the two models taken in turn. The preprocessing stage alone, per layer, on the
//! same shapes (`--calls` calls queued, one sync) gives its share of the step. A prompt whose
//! attention scores (`[16, chunk, S]` f32) would pass 64 MiB is prefilled in chunks (chunked
//! prefill: each chunk attends to the cache and itself), so S = 4096 runs on an adapter with
//! 128 MiB storage bindings (lavapipe); `--chunk` sets the chunk.
//!
//! `cargo bench -p wgpu-posenc-burn --bench model_steps --profile dev [--features fusion]
//! [-- --seq 1024,4096 --layers 2 --decode 16 --reps 3 --chunk N]`

#[path = "../tests/model/mod.rs"]
mod model;

use std::time::Instant;

use burn::nn::RotaryEncodingConfig;
use burn::tensor::{Distribution, Tensor};
use model::{Model, Rotation, argmax_on_device, config::qwen3_06b_like};
use wgpu_posenc::{NormWeight, Positions, QkNorm, RopeSpec};
use wgpu_posenc_burn::BurnPosEnc;

type Result<T, E = Box<dyn std::error::Error>> = std::result::Result<T, E>;

const Q_HEADS: usize = 16;
const KV_HEADS: usize = 8;
const HEAD_DIM: usize = 128;

struct Args {
    seqs: Vec<usize>,
    layers: usize,
    decode: usize,
    reps: usize,
    calls: usize,
    /// Prefill chunk; `None`: the largest power of two whose scores fit 64 MiB.
    chunk: Option<usize>,
}

fn args() -> Result<Args> {
    let mut a = Args {
        seqs: vec![1024, 4096],
        layers: 2,
        decode: 16,
        reps: 3,
        calls: 20,
        chunk: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--seq" => {
                a.seqs = value()?
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()?
            }
            "--layers" => a.layers = value()?.parse()?,
            "--decode" => a.decode = value()?.parse()?,
            "--reps" => a.reps = value()?.parse()?,
            "--calls" => a.calls = value()?.parse()?,
            "--chunk" => a.chunk = Some(value()?.parse::<usize>()?.max(1)),
            "--bench" => {}
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    Ok(a)
}

fn median(mut t: Vec<f64>) -> f64 {
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// The prefill chunk for `seq` tokens: `chunk`, or the largest power of two (at most `seq`)
/// whose attention scores `[Q_HEADS, chunk, seq]` f32 take at most 64 MiB.
fn chunk_for(seq: usize, chunk: Option<usize>) -> usize {
    chunk.unwrap_or_else(|| {
        let most = (64 << 20) / (Q_HEADS * 4 * seq.max(1));
        let pow2 = if most == 0 { 1 } else { 1 << most.ilog2() };
        pow2.min(seq).max(1)
    })
}

/// One prefill of `seq` tokens in chunks of `chunk`, then `decode` steps; (prefill seconds,
/// seconds per decode step), each step until its token is read back.
fn run(model: &mut Model, seq: usize, chunk: usize, decode: usize) -> Result<(f64, f64)> {
    model.reset();
    let vocab = model.config.vocab as u32;
    let prompt: Vec<u32> = (0..seq as u32).map(|i| (i * 7919 + 13) % vocab).collect();
    let t = Instant::now();
    let mut logits = None;
    for part in prompt.chunks(chunk) {
        logits = Some(model.forward(part)?);
    }
    let mut token = argmax_on_device(logits.ok_or("an empty prompt")?)?;
    let prefill = t.elapsed().as_secs_f64();
    let t = Instant::now();
    for _ in 0..decode {
        token = argmax_on_device(model.forward(&[token])?)?;
    }
    Ok((prefill, t.elapsed().as_secs_f64() / decode.max(1) as f64))
}

fn main() -> Result<()> {
    let a = args()?;
    let bridge = BurnPosEnc::init()?;
    let info = bridge.posenc().device().adapter_info();
    println!(
        "adapter: {} ({:?}); burn's backend {}",
        info.name,
        info.backend,
        std::any::type_name::<burn::backend::Cube>()
    );
    let config = qwen3_06b_like(a.layers, 4096);
    println!(
        "{:>6} {:>6} {:>6} {:>12} {:>12} {:>8} {:>12} {:>12} {:>8}",
        "S",
        "chunk",
        "layers",
        "prefill br",
        "prefill burn",
        "burn/br",
        "decode br",
        "decode burn",
        "burn/br"
    );
    for &seq in &a.seqs {
        let capacity = seq + a.decode + 1;
        let chunk = chunk_for(seq, a.chunk);
        let mut ours = Model::random(&bridge, &config, Rotation::Bridge, capacity)?;
        let mut theirs = Model::random(&bridge, &config, Rotation::Burn, capacity)?;
        let mut times = [[Vec::new(), Vec::new()], [Vec::new(), Vec::new()]];
        for rep in 0..=a.reps {
            for (i, m) in [&mut ours, &mut theirs].into_iter().enumerate() {
                let (p, d) = match run(m, seq, chunk, a.decode) {
                    Ok(t) => t,
                    Err(e) => {
                        println!("{seq:>6}: the {} model failed: {e}", ["bridge", "burn"][i]);
                        return Ok(());
                    }
                };
                if rep > 0 {
                    times[i][0].push(p);
                    times[i][1].push(d);
                }
            }
        }
        let [[pb, db], [pt, dt]] = times.map(|t| t.map(median));
        println!(
            "{seq:>6} {chunk:>6} {:>6} {:>9.1} ms {:>9.1} ms {:>8.2} {:>9.2} ms {:>9.2} ms {:>8.2}",
            a.layers,
            pb * 1e3,
            pt * 1e3,
            pt / pb,
            db * 1e3,
            dt * 1e3,
            dt / db
        );
        stages(&bridge, seq, a.calls, a.layers, [pb, db], [pt, dt])?;
    }
    Ok(())
}

/// The preprocessing stage alone, per layer and call (Q, K, V of `tokens` tokens into caches
/// of `capacity`), the bridge's and burn's; `calls` calls queued, then one sync.
fn stage_times(
    bridge: &BurnPosEnc,
    tokens: usize,
    capacity: usize,
    calls: usize,
) -> Result<[f64; 2]> {
    let device = bridge.device().clone();
    let heads = Q_HEADS + 2 * KV_HEADS;
    let spec = RopeSpec::new().base(1_000_000.0);
    let rope = bridge.rope(&spec, HEAD_DIM as u64)?;
    let w: Vec<f32> = (0..HEAD_DIM)
        .map(|i| 1.0 + (i as f32 * 0.1).sin() * 0.1)
        .collect();
    let norm = QkNorm {
        q_weight: w.clone(),
        k_weight: w.clone(),
        eps: 1e-6,
        weight: NormWeight::Scale,
    };
    let cache = || Tensor::<4>::zeros([1, KV_HEADS, capacity, HEAD_DIM], &device);
    let packed = || {
        Tensor::<4>::random([1, tokens, heads, HEAD_DIM], Distribution::Default, &device)
            .swap_dims(1, 2)
    };
    let sync = || -> Result<()> {
        device.sync().map_err(|e| format!("{e:?}"))?;
        pollster::block_on(bridge.posenc().wait_idle())?;
        Ok(())
    };
    let start = (capacity - tokens) as u32;
    // The bridge: one call.
    let (mut k, mut v) = (cache(), cache());
    let inputs: Vec<_> = (0..calls).map(|_| packed()).collect();
    sync()?;
    let t = Instant::now();
    for x in inputs {
        let [q, kc, vc] = bridge.qkv(
            &rope,
            x,
            KV_HEADS as u64,
            Positions::Start(start),
            k,
            v,
            Some(&norm),
        )?;
        drop(q);
        (k, v) = (kc, vc);
    }
    sync()?;
    let ours = t.elapsed().as_secs_f64() / calls as f64;
    // burn: the norm by tensor ops, its RotaryEncoding, the caches by slice_assign.
    let rotary = RotaryEncodingConfig::new(capacity, HEAD_DIM)
        .with_theta(1e6)
        .init(&device);
    let weight = Tensor::<1>::from_floats(w.as_slice(), &device).reshape([1, 1, 1, HEAD_DIM]);
    let rms = |x: Tensor<4>| {
        let ms = x.clone().powi_scalar(2).mean_dim(3).add_scalar(1e-6).sqrt();
        x.div(ms).mul(weight.clone())
    };
    let (mut kc, mut vc) = (cache(), cache());
    let inputs: Vec<_> = (0..calls).map(|_| packed()).collect();
    sync()?;
    let t = Instant::now();
    for x in inputs {
        let q = rms(x.clone().narrow(1, 0, Q_HEADS));
        let k = rms(x.clone().narrow(1, Q_HEADS, KV_HEADS));
        let v = x.narrow(1, Q_HEADS + KV_HEADS, KV_HEADS);
        let q = rotary.apply(q, start as usize);
        let k = rotary.apply(k, start as usize);
        let at = [0..1, 0..KV_HEADS, start as usize..capacity, 0..HEAD_DIM];
        kc = kc.slice_assign(at.clone(), k);
        vc = vc.slice_assign(at, v);
        drop(q);
    }
    sync()?;
    let theirs = t.elapsed().as_secs_f64() / calls as f64;
    Ok([ours, theirs])
}

/// Prints the stage times and their share of the prefill and decode steps.
fn stages(
    bridge: &BurnPosEnc,
    seq: usize,
    calls: usize,
    layers: usize,
    ours: [f64; 2],
    theirs: [f64; 2],
) -> Result<()> {
    let prefill = stage_times(bridge, seq, seq + 1, calls.min(4))?;
    let decode = stage_times(bridge, 1, seq + 1, calls)?;
    let l = layers as f64;
    println!(
        "{:>6}   stage per layer: prefill bridge {:.2} ms ({:.1}% of the step), burn {:.2} ms ({:.1}%); \
         decode bridge {:.3} ms ({:.1}%), burn {:.3} ms ({:.1}%)",
        "",
        prefill[0] * 1e3,
        100.0 * l * prefill[0] / ours[0],
        prefill[1] * 1e3,
        100.0 * l * prefill[1] / theirs[0],
        decode[0] * 1e3,
        100.0 * l * decode[0] / ours[1],
        decode[1] * 1e3,
        100.0 * l * decode[1] / theirs[1],
    );
    Ok(())
}
