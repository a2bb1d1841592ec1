//! How the crate reads a model's HF transformers `config.json`, layer by layer: each layer
//! type's layers, pair layout, rotated lanes, base, scaling, attention factor, M-RoPE
//! sections, NoPE layers and QK-norm; or the error that says why it is not read.
//!
//! `cargo run --features hf-config --example hf_spec -- path/to/config.json [more.json ...]`

use wgpu_posenc::HfRope;

fn main() {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        eprintln!("usage: hf_spec path/to/config.json [more.json ...]");
        std::process::exit(2);
    }
    let mut failed = false;
    for path in &paths {
        let read = std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|text| serde_json::from_str(&text).map_err(|e| e.to_string()))
            .and_then(|config| HfRope::from_config(&config).map_err(|e| e.to_string()));
        match read {
            Ok(rope) => println!("{path}\n{rope}\n"),
            Err(e) => {
                failed = true;
                println!("{path}\n  not read: {e}\n");
            }
        }
    }
    if failed {
        std::process::exit(1);
    }
}
