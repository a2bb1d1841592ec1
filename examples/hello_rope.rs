//! Hello, RoPE: on your own device, one rotation recorded into your own encoder, read back
//! and compared with the f64 reference. `cargo run --example hello_rope`
//! (`WGPU_BACKEND` picks the adapter, as everywhere in wgpu). The same async code runs in a
//! browser (built for wasm32, it prints to the console).

use rand::{RngExt, SeedableRng, rngs::Xoshiro256PlusPlus};
use wgpu::util::DeviceExt;
use wgpu_posenc::{HostPositions, Layout, PosEnc, Positions, RopeSpec, TensorView, reference};

#[cfg(not(target_arch = "wasm32"))]
mod common;

#[cfg(not(target_arch = "wasm32"))]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    // SAFETY: first in main, before any thread is started.
    unsafe { common::ensure_xdg_runtime_dir() };
    let line = pollster::block_on(run())?;
    println!("{line}");
    Ok(())
}

#[cfg(target_arch = "wasm32")]
fn main() {
    wasm_bindgen_futures::spawn_local(async {
        let line = run().await.unwrap_or_else(|e| format!("hello_rope: {e}"));
        web_sys::console::log_1(&line.into());
    });
}

async fn run() -> Result<String, Box<dyn std::error::Error>> {
    // Your device and queue, as your pipeline already has them.
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapter = instance.request_adapter(&Default::default()).await?;
    let (device, queue) = adapter.request_device(&Default::default()).await?;
    let posenc = PosEnc::new(&device, &queue)?;

    // q: [batch 1, heads 4, seq 16, head_dim 64], BHSD, random values.
    let layout = Layout::bhsd([1, 4, 16, 64]);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    let q: Vec<f32> = (0..4 * 16 * 64)
        .map(|_| rng.random_range(-1.0..1.0))
        .collect();
    let buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("q"),
        contents: bytemuck::cast_slice(&q),
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
    });
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("readback"),
        size: buffer.size(),
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });

    // Recorded into your encoder; you submit it.
    let spec = RopeSpec::new().base(10_000.0);
    let mut encoder = device.create_command_encoder(&Default::default());
    let view = TensorView::new(&buffer, layout);
    posenc.encode_rope(&mut encoder, &spec, &view, Positions::Start(100))?;
    encoder.copy_buffer_to_buffer(&buffer, 0, &readback, 0, buffer.size());
    queue.submit([encoder.finish()]);

    // Map the readback and wait for it: `poll` drives native backends; a browser resolves
    // the mapping itself while the await yields.
    let (sender, receiver) = futures_intrusive::channel::shared::oneshot_channel();
    readback
        .slice(..)
        .map_async(wgpu::MapMode::Read, move |r| drop(sender.send(r)));
    device.poll(wgpu::PollType::wait_indefinitely())?;
    receiver
        .receive()
        .await
        .ok_or("the map callback did not run")??;
    let gpu: Vec<f32> = bytemuck::cast_slice(&readback.slice(..).get_mapped_range()?).to_vec();

    // The same rotation by the scalar f64 reference.
    let mut expected: Vec<f64> = q.iter().map(|&v| f64::from(v)).collect();
    reference::rope(&spec, &layout, &mut expected, HostPositions::Start(100));
    let err = gpu
        .iter()
        .zip(&expected)
        .map(|(&g, &e)| (f64::from(g) - e).abs())
        .fold(0.0, f64::max);
    Ok(format!(
        "{} on {:?}: max |gpu - reference| = {err:.2e}",
        adapter.get_info().name,
        adapter.get_info().backend
    ))
}
