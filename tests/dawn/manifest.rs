//! Writes the recording (manifest, shaders, buffer contents and expected results) for the
//! Dawn replayer.

use super::{Kind, Recorder, computed, element, tolerance};
use std::path::Path;

use serde_json::json;

/// Writes the recording in the format of `tests/dawn/README.md`.
pub(super) fn write_capture(rec: &Recorder, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut pipelines: Vec<(String, String)> = Vec::new();
    let mut calls = Vec::new();
    for (c, call) in rec.calls.iter().enumerate() {
        let mut used: Vec<usize> = call
            .passes
            .iter()
            .flat_map(|p| &p.dispatches)
            .flat_map(|d| d.bindings.iter().map(|b| b.buffer))
            .collect();
        used.sort_unstable();
        used.dedup();
        let mut buffers = Vec::new();
        for &i in &used {
            let (buffer, contents) = rec.capture.buffer(i).expect("known");
            let contents = contents.unwrap_or_else(|| panic!("{}: buffer {i} unnoted", call.name));
            let file = format!("c{c}_b{i}.bin");
            std::fs::write(dir.join(&file), &contents)?;
            buffers.push(json!({"id": i, "size": buffer.size(), "init": file}));
        }
        let passes: Vec<_> = call
            .passes
            .iter()
            .map(|pass| {
                let dispatches: Vec<_> = pass
                    .dispatches
                    .iter()
                    .map(|d| {
                        let constants: serde_json::Map<String, serde_json::Value> = d
                            .constants
                            .iter()
                            .map(|(k, v)| (k.to_string(), json!(v)))
                            .collect();
                        let constants = serde_json::Value::Object(constants).to_string();
                        let key = (d.source.clone(), constants.clone());
                        let index = match pipelines.iter().position(|p| *p == key) {
                            Some(i) => i,
                            None => {
                                pipelines.push(key);
                                pipelines.len() - 1
                            }
                        };
                        let bindings: Vec<_> = d
                            .bindings
                            .iter()
                            .map(|b| {
                                json!({"binding": b.binding, "buffer": b.buffer,
                                       "offset": b.offset, "size": b.size})
                            })
                            .collect();
                        json!({"pipeline": index, "bindings": bindings,
                               "workgroups": d.workgroups})
                    })
                    .collect();
                json!({ "dispatches": dispatches })
            })
            .collect();
        let mut checks = Vec::new();
        for (k, check) in call.checks.iter().enumerate() {
            let index = rec
                .capture
                .index(&check.buffer)
                .expect("checked buffer is bound");
            let (size, _, store) = element(check.kind);
            let (abs, rel) = tolerance(check.kind);
            let mut bytes = check.initial.clone();
            let mut ranges: Vec<[f64; 4]> = Vec::new();
            for (i, want) in computed(check).into_iter().enumerate() {
                if let Some(v) = want {
                    bytes[i * size..(i + 1) * size].copy_from_slice(&store(v));
                    match ranges.last_mut() {
                        Some(r) if r[1] as usize == i => r[1] += 1.0,
                        _ => ranges.push([i as f64, i as f64 + 1.0, abs, rel]),
                    }
                }
            }
            let file = format!("c{c}_e{k}.bin");
            std::fs::write(dir.join(&file), &bytes)?;
            let dtype = match check.kind {
                Kind::F32 => "f32",
                Kind::Bf16 => "bf16",
                Kind::U32 => "u32",
            };
            checks.push(json!({"buffer": index, "expect": file, "dtype": dtype,
                               "tolerance": ranges}));
        }
        calls.push(
            json!({"name": call.name, "buffers": buffers, "passes": passes,
                          "checks": checks}),
        );
    }
    let mut pipeline_json = Vec::new();
    let mut features = Vec::new();
    for (p, (source, constants)) in pipelines.iter().enumerate() {
        let file = format!("p{p}.wgsl");
        std::fs::write(dir.join(&file), source)?;
        for (enable, feature) in [
            ("enable f16;", "shader-f16"),
            ("enable subgroups;", "subgroups"),
        ] {
            if source.contains(enable) && !features.contains(&feature) {
                features.push(feature);
            }
        }
        let constants: serde_json::Value = serde_json::from_str(constants).expect("json");
        // Layout 1 for the fused QKV kernel, 2 for the position grid, 0 for the pair passes.
        let layout = if source.starts_with("// wgpu-posenc fused ") {
            1
        } else if source.starts_with("// Position grids") {
            2
        } else {
            0
        };
        pipeline_json
            .push(json!({"wgsl": file, "entry": "main", "constants": constants, "layout": layout}));
    }
    // Written here from the shaders' declarations, not from the crate's tables.
    let entry = |binding, ty: &str| json!({"binding": binding, "type": ty});
    let (rw, ro) = ("storage", "read-only-storage");
    let pair = [
        (1, rw),
        (2, ro),
        (3, ro),
        (4, ro),
        (5, rw),
        (6, ro),
        (7, ro),
        (8, rw),
    ];
    let fused = [
        (1, rw),
        (2, ro),
        (3, ro),
        (4, ro),
        (5, rw),
        (8, rw),
        (9, rw),
        (10, rw),
    ];
    let grid = [(1, ro), (2, rw)];
    let layouts: Vec<Vec<serde_json::Value>> = [&pair[..], &fused[..], &grid[..]]
        .iter()
        .map(|l| {
            std::iter::once(entry(0, "uniform"))
                .chain(l.iter().map(|&(b, t)| entry(b, t)))
                .collect()
        })
        .collect();
    let manifest = json!({"layouts": layouts, "pipelines": pipeline_json, "features": features,
                          "calls": calls});
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_string_pretty(&manifest).expect("json"),
    )
}
