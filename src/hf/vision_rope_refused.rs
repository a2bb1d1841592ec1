//! The transformers families whose encoders rotate in a way `RotaryModule::from_hf_vision_config`
//! does not read, each with the reason (from `tests/data/hf/vision_rope.json`, which has each
//! module's own description; `tests/rope_axes/vision.rs` checks the list against it).

const TIME: &str = "a rotary time embedding applied to the encoder's output hidden states, not \
    to queries and keys";

/// Families whose encoder rotates in a way the crate does not read: model type, module,
/// reason.
pub const HF_VISION_ROPE_NOT_READ: [(&str, &str, &str); 1] =
    [("musicflamingo", "MusicFlamingoRotaryEmbedding", TIME)];
