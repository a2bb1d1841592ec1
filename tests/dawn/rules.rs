//! WebGPU's bind group rules, from the specification, checked on every recorded dispatch.

use super::{Recorder, WEBGPU_ALIGN};

/// WebGPU's rules for the entries of one bind group, from the specification: "Writable
/// storage buffer binding aliasing", the usage scope rule (a buffer is either used
/// writable or read-only within one dispatch), and offset alignment.
pub(super) fn rule_violations(rec: &Recorder) -> Vec<String> {
    let mut out = Vec::new();
    for call in &rec.calls {
        for (p, pass) in call.passes.iter().enumerate() {
            for (k, dispatch) in pass.dispatches.iter().enumerate() {
                let at = format!("{}: pass {p} dispatch {k}", call.name);
                let b = &dispatch.bindings;
                for e in b {
                    let size = rec.capture.buffer(e.buffer).expect("known").0.size();
                    if !e.offset.is_multiple_of(WEBGPU_ALIGN)
                        || !e.size.is_multiple_of(4)
                        || e.offset + e.size > size
                    {
                        out.push(format!("{at}: binding {} window {e:?}", e.binding));
                    }
                }
                for (i, x) in b.iter().enumerate() {
                    for y in &b[i + 1..] {
                        if x.buffer != y.buffer || (!x.writable && !y.writable) {
                            continue;
                        }
                        let overlap = x.offset < y.offset + y.size && y.offset < x.offset + x.size;
                        if overlap || x.writable != y.writable {
                            out.push(format!(
                                "{at}: bindings {} and {} of buffer {} ({x:?}, {y:?})",
                                x.binding, y.binding, x.buffer
                            ));
                        }
                    }
                }
            }
        }
    }
    out
}
