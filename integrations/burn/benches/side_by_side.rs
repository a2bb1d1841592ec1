//! The bridge beside burn's own `RotaryEncoding::forward` on the same device and tensors,
//! `[1, 32, S, 128]` f32, and both beside the identity shader over the same bytes (the
//! memory-bound floor of the adapter). Wall time of each call until the queue is idle,
//! medians of `--reps` runs after a warm-up, taken in turn so that drift hits all alike.
//!
//! `cargo bench -p wgpu-posenc-burn --bench side_by_side [-- --seq 1024,4096,16384 --reps 5]`
//! (a tensor larger than one storage binding of the adapter is skipped: CubeCL allocates each
//! tensor as one binding, 128 MiB on lavapipe)

use std::time::Instant;

use burn::nn::RotaryEncodingConfig;
use burn::tensor::{Distribution, Tensor};
use wgpu_posenc::roofline::Roofline;
use wgpu_posenc::{PairLayout, Positions, RopeSpec};
use wgpu_posenc_burn::BurnPosEnc;

const HEADS: usize = 32;
const HEAD_DIM: usize = 128;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut seqs = vec![1024usize, 4096, 16384];
    let mut reps = 5usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--seq" => {
                let list = args.next().ok_or("--seq needs a list")?;
                seqs = list.split(',').map(str::parse).collect::<Result<_, _>>()?;
            }
            "--reps" => reps = args.next().ok_or("--reps needs a number")?.parse()?,
            // cargo bench passes --bench.
            "--bench" => {}
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let bridge = BurnPosEnc::init()?;
    let device = bridge.device().clone();
    let posenc = bridge.posenc();
    let roofline = Roofline::new(posenc);
    let info = posenc.device().adapter_info();
    println!("adapter: {} ({:?})", info.name, info.backend);
    println!(
        "{:>6} {:>12} {:>12} {:>12} {:>10} {:>10} {:>10}",
        "S", "identity", "bridge", "burn", "bridge/id", "burn/id", "burn/bridge"
    );
    // burn's pairs are (2j, 2j + 1) with theta 10 000: the same rotation.
    let spec = RopeSpec::new().pair_layout(PairLayout::Interleaved);
    let rope = bridge.rope(&spec, HEAD_DIM as u64)?;
    let binding = posenc.device().limits().max_storage_buffer_binding_size;
    for seq in seqs {
        let shape = [1, HEADS, seq, HEAD_DIM];
        let bytes = (HEADS * seq * HEAD_DIM * 4) as u64;
        if bytes > binding {
            // CubeCL allocates a tensor as one binding.
            println!(
                "{seq:>6}: skipped, burn holds no tensor over one storage binding of this \
                 adapter ({} MiB; this one is {} MiB)",
                binding >> 20,
                bytes >> 20
            );
            continue;
        }
        let burn_rope = RotaryEncodingConfig::new(seq, HEAD_DIM).init(&device);
        let mut x = Tensor::<4>::random(shape, Distribution::Default, &device);
        let floor = posenc
            .device()
            .create_buffer(&burn::backend::wgpu::wgpu::BufferDescriptor {
                label: Some("identity"),
                size: bytes,
                usage: burn::backend::wgpu::wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            });
        let wait = || -> Result<(), Box<dyn std::error::Error>> {
            device.sync().map_err(|e| format!("{e:?}"))?;
            pollster::block_on(posenc.wait_idle())?;
            Ok(())
        };
        let mut times = [Vec::new(), Vec::new(), Vec::new()];
        let mut failed = false;
        for rep in 0..=reps {
            // The identity shader.
            wait()?;
            let t = Instant::now();
            let mut encoder = posenc.device().create_command_encoder(&Default::default());
            roofline.encode_identity(&mut encoder, &floor, 0, bytes)?;
            posenc.queue().submit([encoder.finish()]);
            wait()?;
            let identity = t.elapsed().as_secs_f64();
            // The bridge, in place.
            let t = Instant::now();
            x = bridge.apply(&rope, x, Positions::Start(0))?;
            wait()?;
            let ours = t.elapsed().as_secs_f64();
            // burn's RotaryEncoding (a new tensor).
            let t = Instant::now();
            let out = burn_rope.forward(x.clone());
            wait()?;
            let theirs = t.elapsed().as_secs_f64();
            // Its errors surface on a read: check that it ran (the warm-up only).
            if rep == 0
                && let Err(e) = out.clone().narrow(2, 0, 1).try_into_data()
            {
                let text = e.to_string();
                let why = text
                    .lines()
                    .find(|l| l.contains("allocate"))
                    .unwrap_or_else(|| text.lines().next().unwrap_or(""));
                println!(
                    "{seq:>6}: burn's RotaryEncoding::forward failed: {}",
                    why.trim()
                );
                failed = true;
                break;
            }
            drop(out);
            if rep > 0 {
                times[0].push(identity);
                times[1].push(ours);
                times[2].push(theirs);
            }
        }
        if failed {
            continue;
        }
        let [identity, ours, theirs] = times.map(|mut t| {
            t.sort_by(f64::total_cmp);
            t[t.len() / 2]
        });
        println!(
            "{seq:>6} {:>9.2} ms {:>9.2} ms {:>9.2} ms {:>10.2} {:>10.3} {:>10.0}x",
            identity * 1e3,
            ours * 1e3,
            theirs * 1e3,
            identity / ours,
            identity / theirs,
            theirs / ours,
        );
    }
    Ok(())
}
