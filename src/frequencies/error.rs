//! The frequency builders' error type.

/// Errors of the frequency builders (the crate wraps this into its own error type).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FrequencyError {
    /// The rotary dimension is zero or odd.
    #[error(
        "rotary_dim must be even, greater than 0 and at most 1048576 (RopeSpec::MAX_HEAD_DIM), \
         got {rotary_dim}; RoPE rotates pairs of \
         elements, so pass the number of rotated elements of a head (head_dim, or \
         head_dim * partial_rotary_factor rounded down to an even number)"
    )]
    InvalidRotaryDim {
        /// The rotary dimension given.
        rotary_dim: u32,
    },
    /// The rotary dimension is too small for a scaling that raises to `r / (r - 2)`.
    #[error(
        "{scaling} scaling needs rotary_dim >= 4 (its base exponent is r/(r-2)), got \
         {rotary_dim}; use Scaling::Linear or no scaling for a single rotated pair"
    )]
    RotaryDimTooSmall {
        /// The scaling type.
        scaling: &'static str,
        /// The rotary dimension given.
        rotary_dim: u32,
    },
    /// The base (theta) is not a finite positive number.
    #[error(
        "base (rope_theta) must be finite and greater than 0, got {base}; typical values are \
         10000 (LLaMA 1/2), 500000 (Llama 3) or 1000000 (Qwen2)"
    )]
    InvalidBase {
        /// The base given.
        base: f64,
    },
    /// YaRN divides by `ln(base)`, which needs a base above 1.
    #[error(
        "YaRN needs base (rope_theta) greater than 1 (its correction range divides by \
         ln(base)), got {base}"
    )]
    YarnBaseTooSmall {
        /// The base given.
        base: f64,
    },
    /// A scaling factor is not finite or is below 1.
    #[error(
        "{scaling} `{name}` must be finite and at least 1, got {value}; a factor of s extends \
         the context about s times (1 means no scaling)"
    )]
    InvalidFactor {
        /// The scaling type.
        scaling: &'static str,
        /// The parameter's name.
        name: &'static str,
        /// The value given.
        value: f64,
    },
    /// A real-valued parameter is out of its range.
    #[error("{scaling} `{name}` must be {need}, got {value}")]
    InvalidParameter {
        /// The scaling type.
        scaling: &'static str,
        /// The parameter's name.
        name: &'static str,
        /// The value given.
        value: f64,
        /// The range it must be in.
        need: &'static str,
    },
    /// A context length is zero.
    #[error(
        "{scaling} `{name}` must be at least 1 (a number of positions), got 0; use the value \
         from the model's config.json"
    )]
    ZeroContextLength {
        /// The scaling type.
        scaling: &'static str,
        /// The parameter's name.
        name: &'static str,
    },
    /// YaRN's `beta_fast` is below `beta_slow`.
    #[error(
        "YaRN beta_fast ({beta_fast}) must not be below beta_slow ({beta_slow}); the ramp runs \
         from beta_fast rotations down to beta_slow (HF defaults: 32 and 1)"
    )]
    BetaFastBelowBetaSlow {
        /// `beta_fast` given.
        beta_fast: f64,
        /// `beta_slow` given.
        beta_slow: f64,
    },
    /// Llama 3's `high_freq_factor` is not above `low_freq_factor`.
    #[error(
        "Llama 3 low_freq_factor ({low_freq_factor}) must not be above high_freq_factor \
         ({high_freq_factor}); Llama 3.1 uses 1 and 4, Llama 4 1 and 1"
    )]
    LowFreqNotBelowHighFreq {
        /// `low_freq_factor` given.
        low_freq_factor: f64,
        /// `high_freq_factor` given.
        high_freq_factor: f64,
    },
    /// A LongRoPE factor list does not have one entry per pair.
    #[error(
        "LongRoPE {which} has {len} entries but rotary_dim {rotary_dim} has {expected} pairs; \
         the list needs one factor per pair (rotary_dim / 2 entries)"
    )]
    FactorListLength {
        /// `"short_factor"` or `"long_factor"`.
        which: &'static str,
        /// Its length.
        len: usize,
        /// `rotary_dim / 2`.
        expected: usize,
        /// The rotary dimension given.
        rotary_dim: u32,
    },
    /// A LongRoPE factor list holds a value that is not finite and positive.
    #[error("LongRoPE {which}[{index}] must be finite and greater than 0, got {value}")]
    FactorListValue {
        /// `"short_factor"` or `"long_factor"`.
        which: &'static str,
        /// Position in the list.
        index: usize,
        /// The value.
        value: f64,
    },
    /// The parameters are each valid but their combination overflows f64.
    #[error(
        "{scaling} frequencies are not finite for rotary_dim {rotary_dim} and base {base} \
         (an intermediate value overflowed); check that the parameters are the model's"
    )]
    NonFiniteResult {
        /// The scaling type.
        scaling: &'static str,
        /// The rotary dimension given.
        rotary_dim: u32,
        /// The base given.
        base: f64,
    },
    /// The HF config is not a JSON object.
    #[error("the HF config must be a JSON object (the contents of config.json), got {found}")]
    ConfigNotObject {
        /// The JSON type found.
        found: &'static str,
    },
    /// A key the rope type needs is missing from the HF config.
    #[error(
        "the HF config lacks `{key}`, which rope_type \"{rope_type}\" needs; add it (see the \
         model's config.json on the hub)"
    )]
    MissingConfigKey {
        /// The key.
        key: &'static str,
        /// The rope type being read.
        rope_type: String,
    },
    /// A key of the HF config has the wrong JSON type or value.
    #[error("the HF config's `{key}` must be {expected}, got {found}")]
    InvalidConfigValue {
        /// The key.
        key: String,
        /// What it must be.
        expected: &'static str,
        /// What it is.
        found: String,
    },
    /// A key of the HF config is not of the JSON type transformers reads it as.
    #[error(
        "the HF config's `{key}`: {message}; compare it with the model's config.json as \
         published"
    )]
    ConfigKeyType {
        /// The key, with the keys that hold it (`rope_scaling.factor`).
        key: String,
        /// What serde found and expected.
        message: String,
    },
    /// The HF config's `model_type` is not a transformers 5.24 family with a rotary
    /// embedding.
    #[error(
        "model_type \"{model_type}\" is not a transformers 5.24 family with a rotary embedding \
         (the families read: {families}); build the RopeSpec by hand from the model's modeling \
         code"
    )]
    UnsupportedModelType {
        /// The model type found.
        model_type: String,
        /// The model types read, comma-separated.
        families: String,
    },
    /// A transformers family whose rotation this crate does not express, with the reason.
    #[error(
        "model_type \"{model_type}\" is a transformers 5.24 family the crate does not read: \
         {reason}"
    )]
    FamilyNotRead {
        /// The model type found.
        model_type: String,
        /// What transformers does that the crate cannot, as `tests/data/hf/rope_families.py`
        /// found it.
        reason: String,
    },
    /// A diffusers transformer whose rotary module the crate does not read, with the reason.
    #[error(
        "the diffusers transformer {class} rotates with {module}, which the crate does not \
         read: {reason}; build the RopeSpec and positions by hand from the module's code"
    )]
    DiffusersRopeNotRead {
        /// The transformer's class.
        class: String,
        /// diffusers' class of its rotary module.
        module: &'static str,
        /// What the module does that the crate does not express or check.
        reason: &'static str,
    },
    /// A config that HF transformers itself refuses or fails on.
    #[error("HF transformers 5.x cannot run {what}")]
    HfRejects {
        /// What it is.
        what: &'static str,
    },
    /// The HF config names a rope type this crate does not compute.
    #[error(
        "unsupported rope_type \"{rope_type}\"; supported: default, linear, dynamic, yarn, \
         longrope (or legacy su), llama3, proportional"
    )]
    UnsupportedRopeType {
        /// The rope type found.
        rope_type: String,
    },
    /// The HF config has one rope parameter set per layer type (e.g. Gemma 3).
    #[error(
        "the HF config has per-layer-type rope parameters ({layer_types}); pass the object for \
         one layer type, e.g. config[\"rope_parameters\"][\"full_attention\"], merged into the \
         config"
    )]
    PerLayerRopeParameters {
        /// The layer types found, comma-separated.
        layer_types: String,
    },
}
