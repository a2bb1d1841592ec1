//! `Scaling::from_hf_config` on published config.json files and on the golden cases' HF
//! configs: what each reads to, the defaults it follows, and the configs it refuses.

use super::*;
use super::{GOLDEN, assert_rel};
use serde_json::{Value, json};
use wgpu_posenc::FrequencyError;

fn read(text: &str) -> (Scaling, f64, Option<f64>) {
    let v: Value = serde_json::from_str(text).expect("test JSON");
    Scaling::from_hf_config(&v).unwrap_or_else(|e| panic!("{e}"))
}

/// Every golden case that has an HF config reads back to the same scaling and base.
#[test]
fn golden_hf_configs_read_back_to_their_scaling() {
    let doc: Value = serde_json::from_str(GOLDEN).unwrap();
    let mut n = 0;
    for case in doc["cases"].as_array().unwrap() {
        if case["hf_config"].is_null() {
            continue;
        }
        n += 1;
        let name = case["name"].as_str().unwrap();
        let (scaling, theta, _) = Scaling::from_hf_config(&case["hf_config"]).unwrap();
        assert_eq!(theta, case["base"].as_f64().unwrap(), "{name}");
        let r = case["rotary_dim"].as_u64().unwrap() as u32;
        let got = scaling
            .frequencies(r, theta, case["seq_len"].as_u64().unwrap())
            .unwrap();
        for (g, w) in got
            .inv_freq
            .iter()
            .zip(case["inv_freq"].as_array().unwrap())
        {
            assert_rel(name, "inv_freq", *g, w.as_f64().unwrap());
        }
        assert_rel(
            name,
            "attention",
            got.attention_factor,
            case["attention_factor"].as_f64().unwrap(),
        );
    }
    assert!(n >= 15, "{n}");
}

const LLAMA_3_1_8B: &str = r#"{
      "architectures": ["LlamaForCausalLM"],
      "attention_bias": false,
      "attention_dropout": 0.0,
      "bos_token_id": 128000,
      "eos_token_id": 128001,
      "hidden_act": "silu",
      "hidden_size": 4096,
      "initializer_range": 0.02,
      "intermediate_size": 14336,
      "max_position_embeddings": 131072,
      "mlp_bias": false,
      "model_type": "llama",
      "num_attention_heads": 32,
      "num_hidden_layers": 32,
      "num_key_value_heads": 8,
      "pretraining_tp": 1,
      "rms_norm_eps": 1e-05,
      "rope_scaling": {
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3"
      },
      "rope_theta": 500000.0,
      "tie_word_embeddings": false,
      "torch_dtype": "bfloat16",
      "transformers_version": "4.43.0.dev0",
      "use_cache": true,
      "vocab_size": 128256
    }"#;

#[test]
fn llama_3_1_8b() {
    let (s, theta, partial) = read(LLAMA_3_1_8B);
    assert_eq!(s, Scaling::llama3());
    assert_eq!(theta, 500_000.0);
    assert_eq!(partial, None);
}

/// The same model as transformers 5.x writes it: `rope_parameters`, theta inside.
#[test]
fn llama_3_1_8b_transformers_5() {
    let text = r#"{
          "hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 131072,
          "rope_parameters": {
            "rope_theta": 500000.0, "rope_type": "llama3", "factor": 8.0,
            "low_freq_factor": 1.0, "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192
          }
        }"#;
    assert_eq!(read(text), (Scaling::llama3(), 500_000.0, None));
}

/// Qwen2-7B-Instruct's config.json with the YaRN block from its model card.
const QWEN2_7B_YARN: &str = r#"{
      "architectures": ["Qwen2ForCausalLM"],
      "attention_dropout": 0.0,
      "bos_token_id": 151643,
      "eos_token_id": 151645,
      "hidden_act": "silu",
      "hidden_size": 3584,
      "initializer_range": 0.02,
      "intermediate_size": 18944,
      "max_position_embeddings": 32768,
      "max_window_layers": 28,
      "model_type": "qwen2",
      "num_attention_heads": 28,
      "num_hidden_layers": 28,
      "num_key_value_heads": 4,
      "rms_norm_eps": 1e-06,
      "rope_theta": 1000000.0,
      "sliding_window": 131072,
      "tie_word_embeddings": false,
      "torch_dtype": "bfloat16",
      "transformers_version": "4.41.2",
      "use_cache": true,
      "use_sliding_window": false,
      "vocab_size": 152064,
      "rope_scaling": {
        "factor": 4.0,
        "original_max_position_embeddings": 32768,
        "type": "yarn"
      }
    }"#;

#[test]
fn qwen2_yarn() {
    let (s, theta, _) = read(QWEN2_7B_YARN);
    assert_eq!(s, Scaling::yarn(4.0, 32_768));
    assert_eq!(theta, 1e6);
}

/// deepseek-ai/DeepSeek-V2-Lite config.json (the rope block is the same in V2).
const DEEPSEEK_V2_LITE: &str = r#"{
      "architectures": ["DeepseekV2ForCausalLM"],
      "attention_bias": false,
      "attention_dropout": 0.0,
      "aux_loss_alpha": 0.001,
      "bos_token_id": 100000,
      "eos_token_id": 100001,
      "first_k_dense_replace": 1,
      "hidden_act": "silu",
      "hidden_size": 2048,
      "initializer_range": 0.02,
      "intermediate_size": 10944,
      "kv_lora_rank": 512,
      "max_position_embeddings": 163840,
      "model_type": "deepseek_v2",
      "moe_intermediate_size": 1408,
      "moe_layer_freq": 1,
      "n_group": 1,
      "n_routed_experts": 64,
      "n_shared_experts": 2,
      "norm_topk_prob": false,
      "num_attention_heads": 16,
      "num_experts_per_tok": 6,
      "num_hidden_layers": 27,
      "num_key_value_heads": 16,
      "q_lora_rank": null,
      "qk_nope_head_dim": 128,
      "qk_rope_head_dim": 64,
      "rms_norm_eps": 1e-06,
      "rope_scaling": {
        "beta_fast": 32,
        "beta_slow": 1,
        "factor": 40,
        "mscale": 0.707,
        "mscale_all_dim": 0.707,
        "original_max_position_embeddings": 4096,
        "type": "yarn"
      },
      "rope_theta": 10000,
      "routed_scaling_factor": 1.0,
      "scoring_func": "softmax",
      "seq_aux": true,
      "tie_word_embeddings": false,
      "topk_group": 1,
      "topk_method": "greedy",
      "torch_dtype": "bfloat16",
      "v_head_dim": 128,
      "vocab_size": 102400
    }"#;

#[test]
fn deepseek_v2_yarn() {
    let (s, theta, _) = read(DEEPSEEK_V2_LITE);
    let expected = Scaling::Yarn(Yarn {
        factor: 40.0,
        original_max_position_embeddings: 4096,
        beta_fast: 32.0,
        beta_slow: 1.0,
        mscale: 0.707,
        mscale_all_dim: 0.707,
        attention_factor: None,
        truncate: true,
    });
    assert_eq!(s, expected);
    assert_eq!(theta, 10_000.0);
    assert_eq!(
        s.frequencies(64, theta, 163_840).unwrap().attention_factor,
        1.0
    );
}

/// Phi-3-mini-128k-instruct's rope-related keys (factor lists: see the provenance note
/// in tests/data/rope_scaling_golden.py).
fn phi3_mini_128k() -> Value {
    let doc: Value = serde_json::from_str(GOLDEN).unwrap();
    let case = doc["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "phi3_mini_128k_seq131072")
        .unwrap();
    let rope = &case["hf_config"]["rope_scaling"];
    json!({
        "architectures": ["Phi3ForCausalLM"],
        "hidden_size": 3072,
        "max_position_embeddings": 131072,
        "model_type": "phi3",
        "num_attention_heads": 32,
        "original_max_position_embeddings": 4096,
        "rope_scaling": {
            "long_factor": rope["long_factor"],
            "short_factor": rope["short_factor"],
            "type": "longrope"
        },
        "rope_theta": 10000.0,
        "sliding_window": 262144
    })
}

#[test]
fn phi3_longrope() {
    let cfg = phi3_mini_128k();
    let (s, theta, _) = Scaling::from_hf_config(&cfg).unwrap();
    let Scaling::LongRope(LongRope {
        short_factor,
        long_factor,
        original_max_position_embeddings,
        max_position_embeddings,
        attention_factor,
    }) = &s
    else {
        panic!("{s:?}");
    };
    assert_eq!((short_factor.len(), long_factor.len()), (48, 48));
    assert_eq!(long_factor[0], 1.0700000524520874);
    assert_eq!(
        (*original_max_position_embeddings, *max_position_embeddings),
        (4096, 131_072)
    );
    // HF computes it once from max / original: sqrt(1 + ln 32 / ln 4096).
    assert_eq!(*attention_factor, Some(1.190_238_071_423_808_3));
    assert_eq!(theta, 10_000.0);
    // head_dim 96 has 48 pairs; 128 would not fit the lists.
    assert!(s.frequencies(96, theta, 131_072).is_ok());
    assert!(matches!(
        s.frequencies(128, theta, 0),
        Err(FrequencyError::FactorListLength { .. })
    ));
}

#[test]
fn phi3_top_level_original_wins_and_su_is_longrope() {
    let mut cfg = phi3_mini_128k();
    cfg["rope_scaling"]["type"] = json!("su");
    cfg["rope_scaling"]["original_max_position_embeddings"] = json!(2048);
    let (s, _, _) = Scaling::from_hf_config(&cfg).unwrap();
    assert!(matches!(
        s,
        Scaling::LongRope(LongRope {
            original_max_position_embeddings: 4096,
            ..
        })
    ));
}

#[test]
fn longrope_explicit_factor_sets_the_attention_factor() {
    let mut cfg = phi3_mini_128k();
    cfg["rope_scaling"]["factor"] = json!(16.0);
    let (s, _, _) = Scaling::from_hf_config(&cfg).unwrap();
    let expected = (1.0 + 16f64.ln() / 4096f64.ln()).sqrt();
    match s {
        Scaling::LongRope(LongRope {
            attention_factor: Some(a),
            ..
        }) => assert_rel("phi3", "attention", a, expected),
        other => panic!("{other:?}"),
    }
    cfg["rope_scaling"]["attention_factor"] = json!(1.5);
    let (s, _, _) = Scaling::from_hf_config(&cfg).unwrap();
    assert!(matches!(
        s,
        Scaling::LongRope(LongRope {
            attention_factor: Some(1.5),
            ..
        })
    ));
}

#[test]
fn defaults_and_partial_rotary() {
    // No rope keys at all: default RoPE, theta 10000.
    assert_eq!(
        read(r#"{"hidden_size": 64}"#),
        (Scaling::Default, 10_000.0, None)
    );
    assert_eq!(
        read(r#"{"rope_scaling": null, "rope_theta": 5e5}"#),
        (Scaling::Default, 5e5, None)
    );
    // GPT-NeoX / Phi style partial rotary at the top level, and inside rope_parameters.
    assert_eq!(read(r#"{"partial_rotary_factor": 0.4}"#).2, Some(0.4));
    let v5 = r#"{"rope_theta": 1e4, "rope_parameters":
                    {"rope_type": "default", "rope_theta": 1e6, "partial_rotary_factor": 0.25}}"#;
    assert_eq!(read(v5), (Scaling::Default, 1e6, Some(0.25)));
    // Both given: the rope parameters' value wins (HF's setdefault; checked with
    // transformers 5.24 on `phi`, see tests/data/hf/README.md).
    let both = r#"{"partial_rotary_factor": 0.5, "rope_parameters":
                    {"rope_type": "default", "partial_rotary_factor": 0.25}}"#;
    assert_eq!(read(both).2, Some(0.25));
    // An empty rope_scaling falls through to rope_parameters, as `a or b` does in HF.
    let both = r#"{"rope_scaling": {}, "rope_parameters": {"rope_type": "linear", "factor": 2.0}}"#;
    assert_eq!(read(both).0, Scaling::Linear { factor: 2.0 });
}

#[test]
fn dynamic_takes_max_position_embeddings() {
    let text = r#"{"max_position_embeddings": 4096,
                       "rope_scaling": {"type": "dynamic", "factor": 2.0,
                                        "original_max_position_embeddings": 1024}}"#;
    let expected = Scaling::DynamicNtk {
        factor: 2.0,
        original_max_position_embeddings: 4096,
    };
    assert_eq!(read(text).0, expected);
}

#[test]
fn yarn_defaults_follow_hf() {
    // A null factor: max / original (no key at all is a load error in HF 5.x). Null /
    // zero betas: 32 / 1. Null truncate: false.
    let text = r#"{"max_position_embeddings": 131072, "rope_scaling": {
            "rope_type": "yarn", "original_max_position_embeddings": 4096, "factor": null,
            "beta_fast": 0, "beta_slow": null, "truncate": null}}"#;
    let expected = Scaling::Yarn(Yarn {
        factor: 32.0,
        original_max_position_embeddings: 4096,
        beta_fast: 32.0,
        beta_slow: 1.0,
        mscale: 0.0,
        mscale_all_dim: 0.0,
        attention_factor: None,
        truncate: false,
    });
    assert_eq!(read(text).0, expected);
    // No original anywhere: max_position_embeddings (HF's standardization).
    let text = r#"{"max_position_embeddings": 8192,
                       "rope_parameters": {"rope_type": "yarn", "factor": 2.0}}"#;
    assert_eq!(read(text).0, Scaling::yarn(2.0, 8192));
}

#[test]
fn bad_configs_are_errors() {
    let err = |text: &str| {
        let v: Value = serde_json::from_str(text).unwrap();
        Scaling::from_hf_config(&v).unwrap_err()
    };
    assert_eq!(
        err("[1, 2]"),
        FrequencyError::ConfigNotObject { found: "an array" }
    );
    assert!(matches!(
        err(r#"{"rope_scaling": {"rope_type": "linear"}}"#),
        FrequencyError::MissingConfigKey { key: "factor", .. }
    ));
    assert!(matches!(
        err(r#"{"rope_scaling": {"type": "dynamic", "factor": 2.0}}"#),
        FrequencyError::MissingConfigKey {
            key: "max_position_embeddings",
            ..
        }
    ));
    assert!(matches!(
        err(
            r#"{"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                  "high_freq_factor": 4.0}}"#
        ),
        FrequencyError::MissingConfigKey {
            key: "original_max_position_embeddings",
            ..
        }
    ));
    // A value of the wrong JSON type names its path.
    let key = |e: FrequencyError| match e {
        FrequencyError::ConfigKeyType { key, .. } => key,
        other => panic!("{other}"),
    };
    assert_eq!(
        key(err(
            r#"{"rope_scaling": {"rope_type": "linear", "factor": "4"}}"#
        )),
        "rope_scaling.factor"
    );
    assert_eq!(
        key(err(r#"{"max_position_embeddings": 4096.5}"#)),
        "max_position_embeddings"
    );
    assert_eq!(key(err(r#"{"rope_scaling": 8}"#)), "rope_scaling");
    assert_eq!(
        key(err(
            r#"{"max_position_embeddings": 8, "rope_scaling": {"type": "longrope",
                  "short_factor": [1.0, "x"], "long_factor": [1.0, 1.0]}}"#
        )),
        "rope_scaling.short_factor[1]"
    );
    assert!(matches!(
        err(r#"{"rope_scaling": {"rope_type": "linear", "factor": 0.5}}"#),
        FrequencyError::InvalidFactor { .. }
    ));
    assert!(matches!(
        err(r#"{"rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}}"#),
        FrequencyError::UnsupportedRopeType { .. }
    ));
    assert!(matches!(
        err(
            r#"{"max_position_embeddings": 8, "rope_scaling": {"type": "longrope",
                  "short_factor": [1.0, "x"], "long_factor": [1.0, 1.0]}}"#
        ),
        FrequencyError::ConfigKeyType { .. }
    ));
    // Gemma 3 style: one parameter set per layer type.
    let gemma = r#"{"rope_parameters": {
            "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}}"#;
    assert!(matches!(
        err(gemma),
        FrequencyError::PerLayerRopeParameters { .. }
    ));
    let e = err(gemma).to_string();
    assert!(e.contains("full_attention"), "{e}");
}
