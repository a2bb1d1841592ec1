//! The host-side frequency builders of every scaling type against golden values computed
//! independently (`tests/data/rope_scaling_golden.py`, Python floats from the published
//! formulas), their edge cases and errors, and `Scaling::from_hf_config`.
#![cfg(not(target_arch = "wasm32"))]

use std::f64::consts::PI;

use serde_json::Value;
use wgpu_posenc::{FrequencyError, Llama3, LongRope, Scaling, Yarn, frequencies::default_inv_freq};

/// Typed reads of golden JSON values (panicking on malformed data, as test fixtures should).
trait Golden {
    fn key(&self, key: &str) -> &Value;
    fn num(&self) -> f64;
    fn opt_num(&self) -> Option<f64>;
    fn str(&self) -> &str;
    fn arr(&self) -> &[Value];
    fn nums(&self) -> Vec<f64>;
}

impl Golden for Value {
    fn key(&self, key: &str) -> &Value {
        &self[key]
    }
    fn num(&self) -> f64 {
        self.as_f64()
            .unwrap_or_else(|| panic!("expected a number, got {self}"))
    }
    fn opt_num(&self) -> Option<f64> {
        if self.is_null() {
            None
        } else {
            Some(self.num())
        }
    }
    fn str(&self) -> &str {
        self.as_str()
            .unwrap_or_else(|| panic!("expected a string, got {self}"))
    }
    fn arr(&self) -> &[Value] {
        self.as_array()
            .unwrap_or_else(|| panic!("expected an array, got {self}"))
    }
    fn nums(&self) -> Vec<f64> {
        self.arr().iter().map(Golden::num).collect()
    }
}

const GOLDEN: &str = include_str!("data/rope_scaling_golden.json");

/// The explicit scaling of a golden case.
fn scaling_of(s: &Value) -> Scaling {
    let u = |k: &str| s.key(k).num() as u64;
    match s.key("type").str() {
        "default" => Scaling::Default,
        "linear" => Scaling::Linear {
            factor: s.key("factor").num(),
        },
        "ntk_aware" => Scaling::NtkAware {
            factor: s.key("factor").num(),
        },
        "dynamic_ntk" => Scaling::DynamicNtk {
            factor: s.key("factor").num(),
            original_max_position_embeddings: u("original_max_position_embeddings"),
        },
        "yarn" => Scaling::Yarn(Yarn {
            factor: s.key("factor").num(),
            original_max_position_embeddings: u("original_max_position_embeddings"),
            beta_fast: s.key("beta_fast").num(),
            beta_slow: s.key("beta_slow").num(),
            mscale: s.key("mscale").num(),
            mscale_all_dim: s.key("mscale_all_dim").num(),
            attention_factor: s.key("attention_factor").opt_num(),
            truncate: s.key("truncate").as_bool() == Some(true),
        }),
        "llama3" => Scaling::Llama3(Llama3 {
            factor: s.key("factor").num(),
            low_freq_factor: s.key("low_freq_factor").num(),
            high_freq_factor: s.key("high_freq_factor").num(),
            original_max_position_embeddings: u("original_max_position_embeddings"),
        }),
        "longrope" => Scaling::LongRope(LongRope {
            short_factor: s.key("short_factor").nums(),
            long_factor: s.key("long_factor").nums(),
            original_max_position_embeddings: u("original_max_position_embeddings"),
            max_position_embeddings: u("max_position_embeddings"),
            attention_factor: s.key("attention_factor").opt_num(),
        }),
        other => panic!("unknown golden scaling type {other}"),
    }
}

fn assert_rel(name: &str, what: &str, got: f64, want: f64) {
    let err = ((got - want) / want).abs();
    assert!(
        err <= 1e-12,
        "{name}: {what}: got {got:e}, want {want:e} (relative error {err:e})"
    );
}

fn golden_cases() -> Vec<Value> {
    serde_json::from_str::<Value>(GOLDEN)
        .expect("golden json")
        .key("cases")
        .arr()
        .to_vec()
}

#[test]
fn golden_values_match_to_1e_12() {
    let cases = golden_cases();
    assert!(cases.len() >= 17, "golden file has {} cases", cases.len());
    for case in &cases {
        let name = case.key("name").str();
        let scaling = scaling_of(case.key("scaling"));
        let r = case.key("rotary_dim").num() as u32;
        let base = case.key("base").num();
        let seq_len = case.key("seq_len").num() as u64;
        let got = scaling
            .frequencies(r, base, seq_len)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let want = case.key("inv_freq").nums();
        assert_eq!(got.inv_freq.len(), want.len(), "{name}: length");
        for (j, (g, w)) in got.inv_freq.iter().zip(&want).enumerate() {
            assert_rel(name, &format!("inv_freq[{j}]"), *g, *w);
        }
        assert_rel(
            name,
            "attention_factor",
            got.attention_factor,
            case.key("attention_factor").num(),
        );
    }
}

#[test]
fn golden_covers_every_scaling_type() {
    let kinds: Vec<String> = golden_cases()
        .iter()
        .map(|c| c.key("scaling").key("type").str().to_string())
        .collect();
    for k in [
        "default",
        "linear",
        "dynamic_ntk",
        "ntk_aware",
        "yarn",
        "llama3",
        "longrope",
    ] {
        assert!(kinds.iter().any(|x| x == k), "no golden case for {k}");
    }
}

#[test]
fn default_inv_freq_is_the_documented_expression() {
    let f = default_inv_freq(128, 10_000.0).unwrap();
    assert_eq!(f.len(), 64);
    // The double-double value rounded to f64: within one ulp of libm's powf (which
    // need not be correctly rounded).
    for (j, x) in f.iter().enumerate() {
        let p = 10_000f64.powf(-(2.0 * j as f64) / 128.0);
        assert!((x - p).abs() <= f64::EPSILON * p, "{j}: {x} vs {p}");
    }
    assert_eq!(f[0], 1.0);
    assert!(default_inv_freq(0, 10_000.0).unwrap().is_empty());
    let d = Scaling::Default.frequencies(128, 10_000.0, 0).unwrap();
    assert_eq!(d.inv_freq, f);
    assert_eq!(d.attention_factor, 1.0);
}

#[test]
fn dynamic_ntk_is_unscaled_up_to_the_original_length_and_grows_after() {
    let s = Scaling::DynamicNtk {
        factor: 2.0,
        original_max_position_embeddings: 2048,
    };
    let plain = default_inv_freq(64, 10_000.0).unwrap();
    assert_eq!(s.frequencies(64, 10_000.0, 0).unwrap().inv_freq, plain);
    assert_eq!(s.frequencies(64, 10_000.0, 2048).unwrap().inv_freq, plain);
    let longer = s.frequencies(64, 10_000.0, 2049).unwrap().inv_freq;
    assert_eq!(longer[0], 1.0);
    assert!(longer[1..].iter().zip(&plain[1..]).all(|(a, b)| a < b));
}

#[test]
fn ntk_aware_matches_its_base_change() {
    let got = Scaling::NtkAware { factor: 8.0 }
        .frequencies(128, 10_000.0, 0)
        .unwrap();
    let base = 10_000.0 * 8f64.powf(128.0 / 126.0);
    assert_eq!(got.inv_freq, default_inv_freq(128, base).unwrap());
    // The lowest frequency is divided by exactly `factor`: that is the point of r/(r-2).
    let plain = default_inv_freq(128, 10_000.0).unwrap();
    assert_rel("ntk", "last", got.inv_freq[63] * 8.0, plain[63]);
}

#[test]
fn yarn_keeps_high_and_interpolates_low_frequencies() {
    let f = Scaling::yarn(4.0, 32_768).frequencies(128, 1e6, 0).unwrap();
    let plain = default_inv_freq(128, 1e6).unwrap();
    assert_rel("yarn", "first", f.inv_freq[0], plain[0]);
    assert_rel("yarn", "last", f.inv_freq[63] * 4.0, plain[63]);
    assert_rel(
        "yarn",
        "attention",
        f.attention_factor,
        0.1 * 4f64.ln() + 1.0,
    );
    // factor 1: nothing to interpolate, attention factor 1.
    let one = Scaling::yarn(1.0, 4096)
        .frequencies(64, 10_000.0, 0)
        .unwrap();
    for (a, b) in one
        .inv_freq
        .iter()
        .zip(default_inv_freq(64, 10_000.0).unwrap())
    {
        assert_rel("yarn1", "inv_freq", *a, b);
    }
    assert_eq!(one.attention_factor, 1.0);
}

#[test]
fn yarn_attention_factor_rules() {
    let with = |mscale: f64, mscale_all_dim: f64, attention_factor: Option<f64>| {
        Scaling::Yarn(Yarn {
            factor: 40.0,
            original_max_position_embeddings: 4096,
            beta_fast: 32.0,
            beta_slow: 1.0,
            mscale,
            mscale_all_dim,
            attention_factor,
            truncate: true,
        })
        .frequencies(64, 10_000.0, 0)
        .unwrap()
        .attention_factor
    };
    let m = |m: f64| 0.1 * m * 40f64.ln() + 1.0;
    assert_eq!(with(0.707, 0.707, None), 1.0);
    assert_rel("yarn", "ratio", with(1.0, 0.707, None), m(1.0) / m(0.707));
    // Only one of the two given: HF falls back to get_mscale(factor).
    assert_rel("yarn", "mscale only", with(0.707, 0.0, None), m(1.0));
    assert_rel("yarn", "all_dim only", with(0.0, 0.707, None), m(1.0));
    assert_eq!(with(0.707, 0.707, Some(1.5)), 1.5);
}

#[test]
fn llama3_bands() {
    let f = Scaling::llama3().frequencies(128, 500_000.0, 0).unwrap();
    let plain = default_inv_freq(128, 500_000.0).unwrap();
    for (j, (g, p)) in f.inv_freq.iter().zip(&plain).enumerate() {
        let wavelen = 2.0 * PI / p;
        if wavelen < 8192.0 / 4.0 {
            assert_eq!(g, p, "pair {j} is high-frequency and must be kept");
        } else if wavelen > 8192.0 {
            assert_eq!(
                *g,
                p / 8.0,
                "pair {j} is low-frequency and must be divided by 8"
            );
        } else {
            assert!(*g < *p && *g > p / 8.0, "pair {j} must lie between");
        }
    }
    assert_eq!(f.attention_factor, 1.0);
}

#[test]
fn longrope_switches_factor_lists_after_the_original_length() {
    let s = Scaling::LongRope(LongRope {
        short_factor: vec![1.0, 2.0],
        long_factor: vec![4.0, 8.0],
        original_max_position_embeddings: 4096,
        max_position_embeddings: 131_072,
        attention_factor: None,
    });
    let plain = default_inv_freq(4, 10_000.0).unwrap();
    let short = s.frequencies(4, 10_000.0, 4096).unwrap();
    let long = s.frequencies(4, 10_000.0, 4097).unwrap();
    assert_rel("longrope", "short0", short.inv_freq[0], plain[0]);
    assert_rel("longrope", "short1", short.inv_freq[1] * 2.0, plain[1]);
    assert_rel("longrope", "long1", long.inv_freq[1] * 8.0, plain[1]);
    assert_eq!(
        s.frequencies(4, 10_000.0, 0).unwrap().inv_freq,
        short.inv_freq
    );
    let expected = (1.0 + 32f64.ln() / 4096f64.ln()).sqrt();
    assert_rel("longrope", "attention", short.attention_factor, expected);
    assert_eq!(short.attention_factor, long.attention_factor);
    // No stretch, no attention change; an explicit factor wins.
    let same = Scaling::LongRope(LongRope {
        short_factor: vec![1.0],
        long_factor: vec![1.0],
        original_max_position_embeddings: 4096,
        max_position_embeddings: 4096,
        attention_factor: None,
    });
    assert_eq!(
        same.frequencies(2, 10_000.0, 0).unwrap().attention_factor,
        1.0
    );
    let given = Scaling::LongRope(LongRope {
        short_factor: vec![1.0],
        long_factor: vec![1.0],
        original_max_position_embeddings: 4096,
        max_position_embeddings: 131_072,
        attention_factor: Some(1.25),
    });
    assert_eq!(
        given.frequencies(2, 10_000.0, 0).unwrap().attention_factor,
        1.25
    );
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    use FrequencyError as E;
    let ok = Scaling::Default;
    assert_eq!(
        ok.frequencies(0, 1e4, 0),
        Err(E::InvalidRotaryDim { rotary_dim: 0 })
    );
    assert_eq!(
        ok.frequencies(7, 1e4, 0),
        Err(E::InvalidRotaryDim { rotary_dim: 7 })
    );
    for base in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(
            matches!(ok.frequencies(8, base, 0), Err(E::InvalidBase { .. })),
            "{base}"
        );
    }
    for factor in [0.5, 0.0, -2.0, f64::NAN, f64::INFINITY] {
        let e = Scaling::Linear { factor }.frequencies(8, 1e4, 0);
        assert!(
            matches!(e, Err(E::InvalidFactor { name: "factor", .. })),
            "{factor}: {e:?}"
        );
        let e = Scaling::yarn(factor, 4096).frequencies(8, 1e4, 0);
        assert!(matches!(e, Err(E::InvalidFactor { .. })), "{factor}: {e:?}");
    }
    let e = Scaling::NtkAware { factor: 2.0 }.frequencies(2, 1e4, 0);
    assert_eq!(
        e,
        Err(E::RotaryDimTooSmall {
            scaling: "NTK-aware",
            rotary_dim: 2
        })
    );
    let dynamic = Scaling::DynamicNtk {
        factor: 2.0,
        original_max_position_embeddings: 2048,
    };
    assert!(matches!(
        dynamic.frequencies(2, 1e4, 1),
        Err(E::RotaryDimTooSmall { .. })
    ));
    let zero = Scaling::DynamicNtk {
        factor: 2.0,
        original_max_position_embeddings: 0,
    };
    assert!(matches!(
        zero.frequencies(8, 1e4, 1),
        Err(E::ZeroContextLength { .. })
    ));
    assert!(matches!(
        Scaling::yarn(4.0, 0).frequencies(8, 1e4, 0),
        Err(E::ZeroContextLength { .. })
    ));
    assert_eq!(
        Scaling::yarn(4.0, 4096).frequencies(8, 1.0, 0),
        Err(E::YarnBaseTooSmall { base: 1.0 })
    );

    let yarn = |beta_fast: f64, beta_slow: f64, mscale: f64, attention_factor: Option<f64>| {
        Scaling::Yarn(Yarn {
            factor: 4.0,
            original_max_position_embeddings: 4096,
            beta_fast,
            beta_slow,
            mscale,
            mscale_all_dim: 0.0,
            attention_factor,
            truncate: true,
        })
    };
    assert!(matches!(
        yarn(1.0, 32.0, 0.0, None).validate(),
        Err(E::BetaFastBelowBetaSlow { .. })
    ));
    assert!(matches!(
        yarn(0.0, 0.0, 0.0, None).validate(),
        Err(E::InvalidParameter {
            name: "beta_fast",
            ..
        })
    ));
    assert!(matches!(
        yarn(32.0, 1.0, -1.0, None).validate(),
        Err(E::InvalidParameter { name: "mscale", .. })
    ));
    assert!(matches!(
        yarn(32.0, 1.0, 0.0, Some(0.0)).validate(),
        Err(E::InvalidParameter {
            name: "attention_factor",
            ..
        })
    ));
    // Equal betas are allowed (HF widens the ramp by 0.001).
    assert!(yarn(8.0, 8.0, 0.0, None).frequencies(64, 1e4, 0).is_ok());

    let llama = |low: f64, high: f64| {
        Scaling::Llama3(Llama3 {
            factor: 8.0,
            low_freq_factor: low,
            high_freq_factor: high,
            original_max_position_embeddings: 8192,
        })
    };
    assert!(matches!(
        llama(4.0, 1.0).validate(),
        Err(E::LowFreqNotBelowHighFreq { .. })
    ));
    // Llama 4: equal factors, no blended band.
    assert!(llama(2.0, 2.0).validate().is_ok());
    assert!(matches!(
        llama(0.0, 4.0).validate(),
        Err(E::InvalidParameter {
            name: "low_freq_factor",
            ..
        })
    ));

    let lr = |short: Vec<f64>| {
        Scaling::LongRope(LongRope {
            short_factor: short,
            long_factor: vec![1.0; 4],
            original_max_position_embeddings: 4096,
            max_position_embeddings: 131_072,
            attention_factor: None,
        })
    };
    assert_eq!(
        lr(vec![1.0; 3]).frequencies(8, 1e4, 0),
        Err(E::FactorListLength {
            which: "short_factor",
            len: 3,
            expected: 4,
            rotary_dim: 8
        })
    );
    assert_eq!(
        lr(vec![1.0, 1.0, f64::NAN, 1.0])
            .validate()
            .map_err(|e| e.to_string()),
        Err("LongRoPE short_factor[2] must be finite and greater than 0, got NaN".to_string())
    );
    assert!(matches!(
        lr(vec![1.0, 0.0, 1.0, 1.0]).validate(),
        Err(E::FactorListValue { index: 1, .. })
    ));
    // A LongRoPE trained at one position cannot stretch: ln(1) = 0 in the denominator.
    let one = Scaling::LongRope(LongRope {
        short_factor: vec![1.0],
        long_factor: vec![1.0],
        original_max_position_embeddings: 1,
        max_position_embeddings: 8,
        attention_factor: None,
    });
    assert!(matches!(
        one.frequencies(2, 1e4, 0),
        Err(E::NonFiniteResult { .. })
    ));
    // Overflow is reported, not returned.
    let huge = Scaling::NtkAware { factor: 1e300 };
    assert!(matches!(
        huge.frequencies(4, 1e300, 0),
        Err(E::NonFiniteResult { .. })
    ));
}

#[test]
fn error_messages_say_what_to_do() {
    let e = Scaling::Default
        .frequencies(7, 1e4, 0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("even") && e.contains("7"), "{e}");
    let e = Scaling::Linear { factor: 0.5 }
        .frequencies(8, 1e4, 0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("at least 1") && e.contains("0.5"), "{e}");
}

#[cfg(feature = "hf-config")]
mod hf_config {
    use super::*;
    use super::{GOLDEN, assert_rel};
    use serde_json::{Value, json};

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
        let both =
            r#"{"rope_scaling": {}, "rope_parameters": {"rope_type": "linear", "factor": 2.0}}"#;
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
}
