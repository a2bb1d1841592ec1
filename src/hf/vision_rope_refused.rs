//! The transformers families whose encoders rotate in a way `RotaryModule::from_hf_vision_config`
//! does not read, each with the reason (from `tests/data/hf/vision_rope.json`, which has each
//! module's own description; `tests/rope_axes/vision.rs` checks the list against it).

const BLOCKS: &str = "each axis rotates its own half of the head (apply_multidimensional_rope: \
    two half-split blocks), a pair layout not built";
const SAM: &str = "2-D RoPE over a fixed feature-map grid held in a (w, h) buffer \
    (apply_rotary_pos_emb_2d; fractional positions in SAM 3's global layers), not checked yet";
const LLAMA4: &str = "a complex table over the fixed image grid, one part of the pairs on \
    column + 1, the other on row + 1, the CLS token unrotated, not checked yet";
const DINO: &str = "patch-centre coordinates normalized into [-1, 1] with periods in turns, \
    prefix tokens unrotated, not checked yet";
const VJEPA: &str = "3-D RoPE computed inside the attention from the token index (frame, row, \
    column blocks), not checked yet";
const LOFTR: &str = "2-D RoPE over the whole hidden size of the coarse feature map, not \
    checked yet";
const TIME: &str = "a rotary time embedding applied to the encoder's output hidden states, not \
    to queries and keys";
const ONE_D: &str = "1-D RoPE over frame, residue or patch indices, not read from the \
    encoder's config yet";

/// Families whose encoder rotates in a way the crate does not read: model type, module,
/// reason.
pub const HF_VISION_ROPE_NOT_READ: [(&str, &str, &str); 47] = [
    ("EvollaModel", "EvollaSaProtRotaryEmbedding", ONE_D),
    ("chmv2", "DINOv3ViTRopePositionEmbedding", DINO),
    ("clvp", "ClvpRotaryPositionalEmbedding", ONE_D),
    ("csm", "MimiRotaryEmbedding", ONE_D),
    ("dinov3_vit", "DINOv3ViTRopePositionEmbedding", DINO),
    ("edgetam_video", "EdgeTamVideoVisionRotaryEmbedding", SAM),
    ("efficientloftr", "EfficientLoFTRRotaryEmbedding", LOFTR),
    ("esmc", "EsmcRotaryEmbedding", ONE_D),
    ("evolla", "EvollaSaProtRotaryEmbedding", ONE_D),
    ("gemma4_vision", "Gemma4VisionRotaryEmbedding", BLOCKS),
    ("glmasr", "GlmAsrRotaryEmbedding", ONE_D),
    ("glmasr_encoder", "GlmAsrRotaryEmbedding", ONE_D),
    ("lasr_ctc", "LasrEncoderRotaryEmbedding", ONE_D),
    ("lasr_encoder", "LasrEncoderRotaryEmbedding", ONE_D),
    ("llama4", "Llama4VisionRotaryEmbedding", LLAMA4),
    ("mimi", "MimiRotaryEmbedding", ONE_D),
    ("mimi_decoder", "MimiRotaryEmbedding", ONE_D),
    ("mimi_encoder", "MimiRotaryEmbedding", ONE_D),
    ("moonshine", "MoonshineRotaryEmbedding", ONE_D),
    ("musicflamingo", "MusicFlamingoRotaryEmbedding", TIME),
    (
        "nemo_speechlm",
        "Nemotron3DiarizationRotaryEmbedding",
        ONE_D,
    ),
    (
        "nemotron3_5_transcribe_asr_audio",
        "Nemotron3_5TranscribeRotaryEmbedding",
        ONE_D,
    ),
    (
        "nemotron3_5_transcribe_audio",
        "Nemotron3DiarizationRotaryEmbedding",
        ONE_D,
    ),
    (
        "nemotron3_5_transcribe_word_timestamp",
        "Nemotron3_5TranscribeRotaryEmbedding",
        ONE_D,
    ),
    (
        "nemotron3_diarization",
        "Nemotron3DiarizationRotaryEmbedding",
        ONE_D,
    ),
    (
        "nemotron3_diarization_audio",
        "Nemotron3DiarizationRotaryEmbedding",
        ONE_D,
    ),
    ("neucodec", "NeuCodecRotaryEmbedding", ONE_D),
    ("pe_audio", "PeAudioEncoderRotaryEmbedding", ONE_D),
    ("pe_audio_encoder", "PeAudioEncoderRotaryEmbedding", ONE_D),
    ("pi0", "GemmaRotaryEmbedding", ONE_D),
    (
        "pocket_tts_audio_tokenizer",
        "PocketTTSAudioTokenizerRotaryEmbedding",
        ONE_D,
    ),
    (
        "pocket_tts_audio_tokenizer_decoder",
        "PocketTTSAudioTokenizerRotaryEmbedding",
        ONE_D,
    ),
    (
        "pocket_tts_audio_tokenizer_encoder",
        "PocketTTSAudioTokenizerRotaryEmbedding",
        ONE_D,
    ),
    ("sam2_video", "Sam2VideoVisionRotaryEmbedding", SAM),
    ("sam3", "Sam3ViTRotaryEmbedding", SAM),
    ("sam3_lite_text", "Sam3ViTRotaryEmbedding", SAM),
    ("sam3_tracker", "Sam3ViTRotaryEmbedding", SAM),
    ("sam3_tracker_video", "Sam3ViTRotaryEmbedding", SAM),
    ("sam3_video", "Sam3ViTRotaryEmbedding", SAM),
    ("sam3_vision_model", "Sam3ViTRotaryEmbedding", SAM),
    ("sam3_vit_model", "Sam3ViTRotaryEmbedding", SAM),
    ("sapiens2", "Sapiens2RopePositionEmbedding", DINO),
    ("timesfm2_5", "TimesFm2_5RotaryEmbedding", ONE_D),
    ("vjepa2", "VJEPA2RopeAttention", VJEPA),
    ("voxtral_realtime", "VoxtralRealtimeRotaryEmbedding", ONE_D),
    (
        "voxtral_realtime_encoder",
        "VoxtralRealtimeRotaryEmbedding",
        ONE_D,
    ),
    ("xcodec2", "Xcodec2RotaryEmbedding", ONE_D),
];
