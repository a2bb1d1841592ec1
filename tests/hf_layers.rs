//! The layers of a model as transformers decides them, against `HfRope::from_config`:
//! `tests/data/hf/family_defaults.py` wrote, from transformers 5.24's own config classes,
//! every family's default config as `save_pretrained` writes it with its layer count,
//! `layer_types` and `no_rope_layers`, which `layer_types` entries a config accepts (and
//! what the legacy names become), and that a count that disagrees with `layer_types` is
//! refused. Here the reader must give the same layers, the same with the count and the
//! per-layer lists left out (the family's defaults), the same answers on `layer_types`, and
//! a typed error, never an abort, on layer counts no model has.
#![cfg(not(target_arch = "wasm32"))]
#![cfg(feature = "hf-config")]

use serde_json::{Value, json};
use wgpu_posenc::{Error, FrequencyError, HfRope};

fn defaults() -> Value {
    let path = format!(
        "{}/tests/data/hf/family_defaults.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).expect("family_defaults.json")
}

fn families(d: &Value) -> Vec<(String, Value)> {
    let map = d["families"].as_object().expect("families");
    map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// Per layer, whether it has RoPE and, for Gemma, which layer type it rotates as: what HF's
/// config says of each layer.
fn hf_layers(name: &str, family: &Value) -> Vec<Option<String>> {
    let n = family["num_hidden_layers"].as_u64().expect("count") as usize;
    match name {
        "gemma3" | "gemma4" => family["layer_types"]
            .as_array()
            .expect("layer_types")
            .iter()
            .map(|t| Some(t.as_str().unwrap().to_string()))
            .collect(),
        "llama4" => family["no_rope_layers"]
            .as_array()
            .expect("no_rope_layers")
            .iter()
            .map(|v| (v.as_u64() != Some(0)).then(|| "rope".to_string()))
            .collect(),
        _ => vec![Some("full_attention".to_string()); n],
    }
}

/// The same per layer, as the crate reads the config.
fn read_layers(rope: &HfRope) -> Vec<Option<String>> {
    rope.layers
        .iter()
        .map(|&t| {
            let (name, r) = &rope.layer_types[t];
            r.as_ref().map(|_| name.clone())
        })
        .collect()
}

#[test]
fn every_familys_default_config_has_hfs_layers() {
    let d = defaults();
    assert_eq!(d["transformers"], "5.24.0");
    for (name, family) in families(&d) {
        let config = &family["config"];
        let want = hf_layers(&name, &family);
        let rope = HfRope::from_config(config).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(read_layers(&rope), want, "{name}: as saved");
        // Without the count and the per-layer lists: the class defaults, as HF fills them.
        let mut bare = config.clone();
        let object = bare.as_object_mut().unwrap();
        for key in [
            "num_hidden_layers",
            "n_layer",
            "layer_types",
            "no_rope_layers",
        ] {
            object.remove(key);
        }
        let rope = HfRope::from_config(&bare).unwrap_or_else(|e| panic!("{name} bare: {e}"));
        assert_eq!(read_layers(&rope), want, "{name}: from the defaults");
        assert!(
            rope.layer(want.len()).is_none(),
            "{name}: past the last layer"
        );
    }
}

/// A small config of `model_type` with `layer_types` and a layer count.
fn with_layer_types(model_type: &str, types: &[&str], layers: usize) -> Value {
    json!({
        "model_type": model_type,
        "hidden_size": 256,
        "num_attention_heads": 4,
        "head_dim": 64,
        "num_hidden_layers": layers,
        "layer_types": types,
    })
}

#[test]
fn layer_types_are_accepted_renamed_or_refused_as_hf_does() {
    let d = defaults();
    let answers = d["layer_types"].as_object().expect("layer_types");
    assert!(answers.len() > 15, "{answers:?}");
    for (given, hf) in answers {
        let types = vec![given.as_str(); 4];
        let read = HfRope::from_config(&with_layer_types("llama", &types, 4));
        match hf.as_str() {
            // Accepted by HF: Llama's layers all rotate alike whatever their kind.
            Some(_) => {
                let rope = read.unwrap_or_else(|e| panic!("{given:?}: {e}"));
                assert_eq!(rope.layers.len(), 4);
                assert!((0..4).all(|i| rope.layer(i).is_some()), "{given:?}");
            }
            None => assert!(
                matches!(
                    read,
                    Err(Error::Frequency(FrequencyError::InvalidConfigValue { ref key, .. }))
                        if key == "layer_types[0]"
                ),
                "{given:?}: {read:?}"
            ),
        }
        // Gemma 3 has RoPE parameters for two of them: the others are refused by name.
        let gemma = HfRope::from_config(&with_layer_types("gemma3_text", &types, 4));
        match hf.as_str() {
            Some(t @ ("sliding_attention" | "full_attention")) => {
                let rope = gemma.unwrap_or_else(|e| panic!("gemma {given:?}: {e}"));
                assert_eq!(rope.layer_types[rope.layers[0]].0, t, "{given:?}");
            }
            _ => {
                let e = gemma.expect_err(given).to_string();
                assert!(e.contains("layer_types[0]"), "{given:?}: {e}");
            }
        }
    }
    // Llama 4 as transformers 5.x saves it: chunked and full layers, RoPE by no_rope_layers.
    let d = defaults();
    let llama4 = &d["families"]["llama4"]["config"];
    assert!(llama4["layer_types"][0] == "chunked_attention", "{llama4}");
    HfRope::from_config(llama4).expect("llama4 with chunked_attention layers");
}

#[test]
fn a_layer_count_that_disagrees_with_layer_types_is_refused() {
    assert_eq!(defaults()["count_mismatch_refused"], true);
    let types = ["full_attention"; 3];
    for model_type in ["llama", "gemma3_text", "llama4_text"] {
        let read = HfRope::from_config(&with_layer_types(model_type, &types, 4));
        assert!(
            matches!(
                read,
                Err(Error::Frequency(FrequencyError::InvalidConfigValue { ref key, .. }))
                    if key == "layer_types"
            ),
            "{model_type}: {read:?}"
        );
    }
}

#[test]
fn layer_counts_no_model_has_are_errors_not_aborts() {
    // 2^40 layers once aborted the process (an 8 TiB table), 2^62 and u64::MAX panicked.
    for model_type in [
        "llama",
        "gemma3_text",
        "llama4_text",
        "gemma4_text",
        "qwen3",
    ] {
        for n in [
            json!(1u64 << 40),
            json!(1u64 << 62),
            json!(u64::MAX),
            json!(1e18),
            json!(HfRope::MAX_LAYERS + 1),
        ] {
            let config = json!({
                "model_type": model_type,
                "hidden_size": 4096,
                "num_attention_heads": 32,
                "num_hidden_layers": n,
                "rope_theta": 10000.0,
            });
            let read = HfRope::from_config(&config);
            assert!(
                matches!(
                    read,
                    Err(Error::Frequency(FrequencyError::InvalidConfigValue { ref key, .. }))
                        if key == "num_hidden_layers"
                ),
                "{model_type} {n}: {read:?}"
            );
        }
        let at_limit = json!({
            "model_type": model_type,
            "hidden_size": 4096,
            "num_attention_heads": 32,
            "num_hidden_layers": HfRope::MAX_LAYERS,
        });
        let rope = HfRope::from_config(&at_limit).unwrap_or_else(|e| panic!("{model_type}: {e}"));
        assert_eq!(rope.layers.len() as u64, HfRope::MAX_LAYERS);
    }
}

#[test]
fn the_unsupported_family_error_lists_every_family_read() {
    let e = HfRope::from_config(&json!({"model_type": "no_such_family"}))
        .expect_err("unknown family")
        .to_string();
    for (name, _) in families(&defaults()) {
        assert!(
            e.contains(&format!("{name},")) || e.contains(&format!("{name})")),
            "{name} missing from: {e}"
        );
    }
}
