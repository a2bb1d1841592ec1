//! Hello, RoPE: on your own device, one rotation recorded into your own encoder, read back
//! and compared with the f64 reference. `cargo run --example hello_rope`
//! (`WGPU_BACKEND` picks the adapter, as everywhere in wgpu).

use rand::{RngExt, SeedableRng, rngs::Xoshiro256PlusPlus};
use wgpu::util::DeviceExt;
use wgpu_posenc::{HostPositions, Layout, PosEnc, Positions, RopeSpec, TensorView, reference};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Your device and queue, as your pipeline already has them.
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapter = pollster::block_on(instance.request_adapter(&Default::default()))?;
    let (device, queue) = pollster::block_on(adapter.request_device(&Default::default()))?;
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

    readback
        .slice(..)
        .map_async(wgpu::MapMode::Read, |r| r.expect("map"));
    device.poll(wgpu::PollType::wait_indefinitely())?;
    let gpu: Vec<f32> = bytemuck::cast_slice(&readback.slice(..).get_mapped_range()?).to_vec();

    // The same rotation by the scalar f64 reference.
    let mut expected: Vec<f64> = q.iter().map(|&v| f64::from(v)).collect();
    reference::rope(&spec, &layout, &mut expected, HostPositions::Start(100));
    let err = gpu
        .iter()
        .zip(&expected)
        .map(|(&g, &e)| (f64::from(g) - e).abs())
        .fold(0.0, f64::max);
    println!(
        "{} on {:?}: max |gpu - reference| = {err:.2e}",
        adapter.get_info().name,
        adapter.get_info().backend
    );
    Ok(())
}
