//! A shader that stands alone (not composed into the pair kernels' variants): its pipeline
//! over a bind group of buffers at bindings `0..n`, and bind groups of buffer windows. The
//! roofline's identity shader and the position grid's are such shaders.

/// A standalone shader's bind group layout and compute pipeline (entry point `main`).
#[derive(Clone, Debug)]
pub(crate) struct Standalone {
    pub layout: wgpu::BindGroupLayout,
    pub pipeline: wgpu::ComputePipeline,
}

impl Standalone {
    /// Compiles `source` with binding `i` of type `bindings[i]`, visible to compute.
    pub(crate) fn new(
        device: &wgpu::Device,
        label: &str,
        source: &str,
        bindings: &[wgpu::BufferBindingType],
    ) -> Self {
        let entries: Vec<wgpu::BindGroupLayoutEntry> = bindings
            .iter()
            .enumerate()
            .map(|(i, &ty)| wgpu::BindGroupLayoutEntry {
                binding: i as u32,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty,
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            })
            .collect();
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some(label),
            entries: &entries,
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(label),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(label),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(label),
            layout: Some(&pipeline_layout),
            module: &module,
            entry_point: Some("main"),
            compilation_options: wgpu::PipelineCompilationOptions {
                constants: &[],
                // Neither shader uses workgroup memory.
                zero_initialize_workgroup_memory: false,
            },
            cache: None,
        });
        Self { layout, pipeline }
    }

    /// A bind group whose binding `i` is the window `(buffer, offset, size)` `windows[i]`.
    pub(crate) fn bind_group(
        &self,
        device: &wgpu::Device,
        label: &str,
        windows: &[(&wgpu::Buffer, u64, u64)],
    ) -> wgpu::BindGroup {
        let entries: Vec<wgpu::BindGroupEntry> = windows
            .iter()
            .enumerate()
            .map(|(i, &(buffer, offset, size))| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer,
                    offset,
                    size: wgpu::BufferSize::new(size),
                }),
            })
            .collect();
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(label),
            layout: &self.layout,
            entries: &entries,
        })
    }
}
