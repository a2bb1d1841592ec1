//! The one place where the pair pass makes its bind groups, and the WebGPU rules each one is
//! checked against before it is made.
//!
//! wgpu's native backends do not enforce all of WebGPU's validation; Dawn (Chrome) does, and
//! rejects the whole command buffer when a rule is broken. So every bind group is checked
//! here, on every backend, and a call that would break a rule gets an [`Error`] instead:
//!
//! - two writable storage bindings of one buffer must not overlap (Dawn: "Writable storage
//!   buffer binding aliasing");
//! - a buffer bound writable must not also be bound read-only or as a uniform in the same
//!   dispatch (buffer usages are tracked per whole buffer);
//! - every offset is a multiple of the device's offset alignment, every size a non-zero
//!   multiple of 4 within the binding limit and the buffer.

use super::Kernel;
use crate::error::{Error, Result};

/// How a binding is declared in the bind group layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    Uniform,
    ReadOnly,
    ReadWrite,
}

/// The bind group layouts, binding by binding (what each holds: [`binding_name`]); the
/// shaders declare the same (checked against naga's reading of every variant by the tests
/// below). Every kernel binds the parameters, the tensors (1, 5), the frequencies, the ids
/// and the varlen offsets (or slots) and the flag (8); the pair passes add the cos/sin cache
/// (6, 7), the fused QKV kernel the K and V caches (9, 10): eight storage buffers each,
/// WebGPU's default.
const ALL: [(u32, Access); 11] = [
    (0, Access::Uniform),
    (1, Access::ReadWrite),
    (2, Access::ReadOnly),
    (3, Access::ReadOnly),
    (4, Access::ReadOnly),
    (5, Access::ReadWrite),
    (6, Access::ReadOnly),
    (7, Access::ReadOnly),
    (8, Access::ReadWrite),
    (9, Access::ReadWrite),
    (10, Access::ReadWrite),
];

/// The layout of `kernel`'s variants.
pub(crate) fn layout_of(kernel: Kernel) -> Vec<(u32, Access)> {
    let skip: [u32; 2] = match kernel {
        Kernel::Rope | Kernel::Sinusoidal => [9, 10],
        Kernel::Fused => [6, 7],
    };
    ALL.into_iter().filter(|(b, _)| !skip.contains(b)).collect()
}

/// The storage bindings a block binds of its own, in order: all of `kernel`'s but the
/// frequencies (2), which every block of a pass shares. Seven for every kernel.
pub(crate) fn slot_bindings(kernel: Kernel) -> [u32; 7] {
    let own: Vec<u32> = layout_of(kernel)
        .into_iter()
        .filter(|&(b, a)| a != Access::Uniform && b != 2)
        .map(|(b, _)| b)
        .collect();
    own.try_into()
        .unwrap_or_else(|own: Vec<u32>| unreachable!("seven storage bindings, not {own:?}"))
}

/// The access of `binding`.
pub(crate) fn access(binding: u32) -> Access {
    ALL.iter()
        .find(|(b, _)| *b == binding)
        .map_or(Access::ReadOnly, |(_, a)| *a)
}

/// The wgpu layout entries of `layout`.
pub(crate) fn layout_entries(layout: &[(u32, Access)]) -> Vec<wgpu::BindGroupLayoutEntry> {
    layout
        .iter()
        .map(|&(binding, access)| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: match access {
                    Access::Uniform => wgpu::BufferBindingType::Uniform,
                    Access::ReadOnly => wgpu::BufferBindingType::Storage { read_only: true },
                    Access::ReadWrite => wgpu::BufferBindingType::Storage { read_only: false },
                },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        })
        .collect()
}

/// One entry of a bind group: a window `[offset, offset + size)` of a buffer.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub binding: u32,
    pub buffer: wgpu::Buffer,
    pub offset: u64,
    pub size: u64,
    pub access: Access,
}

/// What the rules need to know of the device.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rules {
    pub storage_align: u64,
    pub uniform_align: u64,
    pub max_storage_binding: u64,
}

impl Rules {
    /// Checks `entries` against WebGPU's rules; the error names the bindings at fault.
    pub fn check(&self, entries: &[Entry]) -> Result<()> {
        for e in entries {
            let align = match e.access {
                Access::Uniform => self.uniform_align,
                _ => self.storage_align,
            };
            let end = e.offset.checked_add(e.size);
            let fits = end.is_some_and(|end| end <= e.buffer.size())
                && e.size > 0
                && e.size.is_multiple_of(4)
                && (e.access == Access::Uniform || e.size <= self.max_storage_binding);
            if !e.offset.is_multiple_of(align) || !fits {
                return Err(Error::InvalidBinding {
                    binding: e.binding,
                    offset: e.offset,
                    size: e.size,
                    buffer_size: e.buffer.size(),
                });
            }
        }
        for (i, a) in entries.iter().enumerate() {
            for b in &entries[i + 1..] {
                if a.buffer != b.buffer {
                    continue;
                }
                let writable = [a.access, b.access].map(|x| x == Access::ReadWrite);
                let overlap = a.offset < b.offset + b.size && b.offset < a.offset + a.size;
                let conflict = match writable {
                    [true, true] => overlap,
                    [false, false] => false,
                    _ => true,
                };
                if conflict {
                    return Err(Error::BindingConflict {
                        first: binding_name(a.binding),
                        second: binding_name(b.binding),
                        both_writable: writable == [true, true],
                    });
                }
            }
        }
        Ok(())
    }
}

/// What the pair pass binds at `binding` (see `shaders/common.wgsl`).
pub(crate) fn binding_name(binding: u32) -> &'static str {
    match binding {
        0 => "the parameters",
        1 => "the tensor",
        2 => "the frequencies",
        3 => "the position ids (or per-row starts, or cu_seqlens)",
        4 => "the varlen offsets",
        5 => "the second tensor (K, or the source out of place)",
        6 => "the cos cache",
        7 => "the sin cache",
        8 => "the cache overflow flag",
        9 => "the K cache",
        10 => "the V cache",
        _ => "an unknown binding",
    }
}

/// Makes the bind group of `entries` after checking them.
pub(crate) fn create(
    device: &wgpu::Device,
    layout: &wgpu::BindGroupLayout,
    rules: &Rules,
    entries: &[Entry],
) -> Result<wgpu::BindGroup> {
    rules.check(entries)?;
    let entries: Vec<wgpu::BindGroupEntry<'_>> = entries
        .iter()
        .map(|e| wgpu::BindGroupEntry {
            binding: e.binding,
            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: &e.buffer,
                offset: e.offset,
                size: wgpu::BufferSize::new(e.size),
            }),
        })
        .collect();
    Ok(device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("wgpu-posenc pair pass"),
        layout,
        entries: &entries,
    }))
}

/// Do windows `(offset, size)` meet?
pub(crate) fn overlap(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 < b.0 + b.1 && b.0 < a.0 + a.1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::Specialization;

    #[test]
    fn each_kernel_binds_seven_storage_buffers_of_its_own() {
        assert_eq!(slot_bindings(Kernel::Rope), [1, 3, 4, 5, 6, 7, 8]);
        assert_eq!(slot_bindings(Kernel::Sinusoidal), [1, 3, 4, 5, 6, 7, 8]);
        assert_eq!(slot_bindings(Kernel::Fused), [1, 3, 4, 5, 8, 9, 10]);
    }

    /// Every global a variant's entry point uses is in its kernel's layout with the same
    /// access, and every storage binding of the layout is used by some variant.
    #[test]
    fn every_variant_uses_its_layout() {
        let mut used = std::collections::BTreeSet::new();
        for spec in Specialization::all() {
            let module = naga::front::wgsl::parse_str(&spec.naga_source())
                .unwrap_or_else(|e| panic!("{spec:?}: {e}"));
            let info = naga::valid::Validator::new(
                naga::valid::ValidationFlags::all(),
                naga::valid::Capabilities::all(),
            )
            .validate(&module)
            .unwrap_or_else(|e| panic!("{spec:?}: {e}"));
            let entry = info.get_entry_point(0);
            for (handle, var) in module.global_variables.iter() {
                let Some(b) = &var.binding else { continue };
                if entry[handle].is_empty() {
                    continue;
                }
                assert_eq!(b.group, 0, "{spec:?}");
                let declared = match var.space {
                    naga::AddressSpace::Uniform => Access::Uniform,
                    naga::AddressSpace::Storage { access }
                        if access.contains(naga::StorageAccess::STORE) =>
                    {
                        Access::ReadWrite
                    }
                    naga::AddressSpace::Storage { .. } => Access::ReadOnly,
                    other => panic!("{spec:?}: binding {} in {other:?}", b.binding),
                };
                assert!(
                    layout_of(spec.kernel()).contains(&(b.binding, declared)),
                    "{spec:?}: binding {} is {declared:?} in the shader",
                    b.binding
                );
                used.insert((spec.kernel(), b.binding));
            }
        }
        for kernel in [Kernel::Rope, Kernel::Fused] {
            for (binding, _) in layout_of(kernel) {
                assert!(
                    used.contains(&(kernel, binding)),
                    "{kernel:?}: {binding} unused"
                );
            }
        }
    }
}
