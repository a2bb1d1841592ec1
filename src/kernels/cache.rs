//! The caches of the pair passes, each bounded: packed frequency buffers by contents, the
//! bind groups of recent small passes, and the last frequencies asked for.

use std::collections::VecDeque;
use std::sync::Arc;

use super::bind::Entry;
use crate::dd::Dd;

/// What a context's caches hold: packed frequency buffers (at most
/// [`CacheUsage::MAX_FREQUENCY_BUFFERS`] and [`CacheUsage::MAX_FREQUENCY_BYTES`]) and the bind
/// groups of recent small passes, which keep the caller's buffers they bind alive (at most
/// [`CacheUsage::MAX_BIND_GROUPS`] entries over at most [`CacheUsage::MAX_HELD_BYTES`] of
/// distinct buffers). Least recently used entries go first; `PosEnc::clear_caches` empties
/// both.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheUsage {
    /// Frequency buffers cached.
    pub frequency_buffers: usize,
    /// Their bytes.
    pub frequency_bytes: u64,
    /// Cached bind-group sets (one per recent pass).
    pub bind_groups: usize,
    /// Bytes of the distinct buffers (the caller's and the crate's) they keep alive.
    pub held_bytes: u64,
}

impl CacheUsage {
    /// Most frequency buffers kept.
    pub const MAX_FREQUENCY_BUFFERS: usize = 64;
    /// Most bytes of frequency buffers kept.
    pub const MAX_FREQUENCY_BYTES: u64 = 4 << 20;
    /// Most bind-group sets kept.
    pub const MAX_BIND_GROUPS: usize = 32;
    /// Most bytes of buffers the cached bind groups may keep alive.
    pub const MAX_HELD_BYTES: u64 = 64 << 20;
}

/// Packed frequency buffers by contents, most recent first, within [`CacheUsage`]'s bounds.
#[derive(Debug, Default)]
pub(crate) struct FrequencyCache {
    pub entries: std::collections::VecDeque<(Vec<u32>, wgpu::Buffer)>,
    pub bytes: u64,
}

impl FrequencyCache {
    pub fn get(&mut self, words: &[u32]) -> Option<wgpu::Buffer> {
        let at = self.entries.iter().position(|(w, _)| w == words)?;
        let entry = self.entries.remove(at)?;
        let buffer = entry.1.clone();
        self.entries.push_front(entry);
        Some(buffer)
    }

    pub fn insert(&mut self, words: Vec<u32>, buffer: wgpu::Buffer) {
        self.bytes += buffer.size();
        self.entries.push_front((words, buffer));
        while self.entries.len() > CacheUsage::MAX_FREQUENCY_BUFFERS
            || (self.bytes > CacheUsage::MAX_FREQUENCY_BYTES && self.entries.len() > 1)
        {
            if let Some((_, old)) = self.entries.pop_back() {
                self.bytes -= old.size();
            }
        }
    }
}

/// A bind group and the entries it was made of (kept for the capture of dispatches).
#[derive(Debug)]
pub(crate) struct BoundGroup {
    pub group: wgpu::BindGroup,
    pub entries: Vec<Entry>,
}

/// A storage binding of a block: a buffer window `(offset, size)`, or None for a dummy.
pub(crate) type Slot = Option<(wgpu::Buffer, (u64, u64))>;

/// What makes two passes' bind groups interchangeable: the buffers (by identity), their
/// windows and the parameter bytes.
#[derive(Debug, PartialEq)]
pub(crate) struct BindKey {
    /// Whose layout: the pair passes' (Rope, Sinusoidal) or the fused kernel's.
    pub kernel: super::Kernel,
    pub freq: wgpu::Buffer,
    /// Per block: bindings 1, 3, 4, 5, 6, 7, 8 of the pair passes, 1, 3, 4, 5, 8, 9, 10 of
    /// the fused kernel ([`BindKey::bindings`]).
    pub slots: Vec<[Slot; 7]>,
    pub params: Vec<u8>,
}

impl BindKey {
    /// The storage bindings of `slots`, in order.
    pub(crate) fn bindings(&self) -> [u32; 7] {
        super::bind::slot_bindings(self.kernel)
    }
}

/// The bind groups (and through them the uniform buffers) of the most recent small passes,
/// most recent first, so that repeating a pass allocates nothing: a prefill at the same
/// position on the same buffers, or a decode step that reads its positions from a buffer.
/// A decode step with `Positions::Start` changes its parameters every token and misses.
/// An entry keeps its buffers (the caller's among them) alive until it is evicted: at most
/// [`CacheUsage::MAX_BIND_GROUPS`] entries, whose buffers add up to at most
/// [`CacheUsage::MAX_HELD_BYTES`] (counted per entry, so a buffer two entries share counts
/// twice: the bound holds all the more). Only passes over buffers of at most
/// [`BindCache::MAX_BUFFER`] bytes are kept.
#[derive(Debug, Default)]
pub(crate) struct BindCache {
    /// Most recent first, with the bytes of the distinct buffers each one holds.
    entries: VecDeque<(BindKey, Arc<[BoundGroup]>, u64)>,
    held: u64,
}

impl BindCache {
    /// Largest buffer whose passes are kept.
    pub const MAX_BUFFER: u64 = 16 << 20;
    /// Most blocks (dispatches) of a pass that is kept.
    pub const MAX_BLOCKS: usize = 4;

    pub fn get(&mut self, key: &BindKey) -> Option<Arc<[BoundGroup]>> {
        let at = self.entries.iter().position(|(k, _, _)| k == key)?;
        let entry = self.entries.remove(at)?;
        let bind_groups = entry.1.clone();
        self.entries.push_front(entry);
        Some(bind_groups)
    }

    pub fn insert(&mut self, key: BindKey, bind_groups: Arc<[BoundGroup]>) {
        let mut buffers: Vec<&wgpu::Buffer> = Vec::new();
        for e in bind_groups.iter().flat_map(|g| &g.entries) {
            if !buffers.contains(&&e.buffer) {
                buffers.push(&e.buffer);
            }
        }
        let bytes = buffers.iter().map(|b| b.size()).sum();
        self.held += bytes;
        self.entries.push_front((key, bind_groups, bytes));
        while self.entries.len() > CacheUsage::MAX_BIND_GROUPS
            || (self.held > CacheUsage::MAX_HELD_BYTES && !self.entries.is_empty())
        {
            if let Some((_, _, b)) = self.entries.pop_back() {
                self.held -= b;
            }
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn held_bytes(&self) -> u64 {
        self.held
    }
}

/// The last frequencies a pass asked for, and their packed buffer.
#[derive(Debug)]
pub(crate) struct FrequencyMemo {
    pub inv_freq: Vec<Dd>,
    pub axes: Vec<u32>,
    pub g: usize,
    pub buffer: wgpu::Buffer,
}
